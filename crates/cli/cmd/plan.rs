//! `run`'s flags to a validated [`Plan`] and a [`Job`] (what it watches, logs and does
//! beside sending). Every mode builds its base plan here; levels and cases derive from it.

use crate::args::{RequestArgs, RunArgs};
use barrage_engine::{Load, Pacer, Plan, Target, TlsOptions};
use barrage_plan::Headers;
use barrage_study::Job;
use std::time::Duration;

/// Default duration when neither --duration nor --requests is given (as wrk).
const DEFAULT_DURATION: Duration = Duration::from_secs(10);

/// The job of `a`: its plan, watches, `--at` commands and logs; results to `-o`.
pub fn job(a: &RunArgs) -> anyhow::Result<Job> {
    let plan = plan(a)?;
    slo_scopes(&a.gates.slo, &plan)?;
    let mut job = Job::new(plan);
    job.watch = barrage_study::watch::watches(&a.watch.monitor, a.watch.testbed.as_deref(), &job.plan)
        .map_err(anyhow::Error::msg)?;
    // `barrage` in an `--at` command is this binary, wherever PATH points.
    let barrage = std::env::current_exe().ok();
    // `barrage testbed ...` in it acts on the testbed of --testbed (a case's own).
    job.at = barrage_study::watch::schedule(
        &a.watch.at,
        job.plan.attack_limit(),
        barrage.as_deref(),
        a.watch.testbed.as_deref(),
    )
    .map_err(anyhow::Error::msg)?;
    job.output = a.output.output.clone();
    job.log = a.output.log.clone().map(|path| barrage_engine::reqlog::LogSpec { path, sample: a.output.log_sample });
    job.hdr_log = a.output.hdr_log.clone();
    job.redaction = redaction(&a.output);
    if let Some(at) = a.launch.start_at {
        at.wait_from(std::time::SystemTime::now()).map_err(anyhow::Error::msg)?;
        job.start_at = Some(at.0);
    }
    job.clock_offset_us = a.launch.clock_offset.map(|c| c.0);
    Ok(job)
}

/// `--phases fill,measure[:LENGTH]`, checked. Flows draw no objects from the run's stream,
/// so a scenario has no phases to fill and measure.
pub fn phases(a: &RunArgs) -> anyhow::Result<Vec<barrage_plan::phases::PhaseSpec>> {
    let phases = barrage_plan::phases::parse(&a.request.phases).map_err(|e| anyhow::anyhow!("--phases: {e}"))?;
    if !phases.is_empty() && a.request.scenario.is_some() {
        anyhow::bail!("--phases fills and measures a run's request stream; a --scenario's flows ask for what their steps say: drop --phases");
    }
    Ok(phases)
}

/// A study of several runs (`mode`) is not split or started at a time: each of its runs
/// would be. Refused with the way to do it.
pub fn one_machine(a: &RunArgs, mode: &str) -> anyhow::Result<()> {
    if a.launch.shard.is_some() || a.launch.start_at.is_some() {
        anyhow::bail!(
            "--shard and --start-at split and start one run; {mode} is a series of runs: split each run with `barrage run --shard`"
        );
    }
    Ok(())
}

/// This shard's part of the run: refused when it would have nothing to do.
fn shard(a: &RunArgs, plan: &Plan) -> anyhow::Result<barrage_plan::Shard> {
    let Some(shard) = a.launch.shard else { return Ok(barrage_plan::Shard::WHOLE) };
    let flag = match &plan.load {
        Load::Closed { .. } => "-c",
        Load::Open { .. } => "--max-in-flight",
    };
    // Connections are never split between shards.
    let n = plan.connections();
    if shard.share(n as u64) == 0 {
        let what = match plan.streams {
            1 => format!("{flag} {n}"),
            s => format!("{n} connection(s) of --streams {s}"),
        };
        anyhow::bail!(
            "--shard {shard}: {what} leaves this shard nothing; give at least {} over {} shards",
            shard.count,
            shard.count
        );
    }
    Ok(shard)
}

/// An objective on a scenario's group or step that does not exist is refused before the
/// run, not found missing after it.
fn slo_scopes(slos: &[barrage_report::Slo], plan: &Plan) -> anyhow::Result<()> {
    let Some(s) = plan.scenario.as_deref() else {
        if let Some(slo) = slos.iter().find(|slo| matches!(slo.scope(), Some((true, _)))) {
            anyhow::bail!("--slo '{}': flow objectives need a --scenario", slo.text());
        }
        return Ok(());
    };
    let groups: Vec<&str> = s.groups.iter().map(|g| g.name.as_str()).collect();
    let steps: Vec<String> = (0..s.groups.len())
        .flat_map(|g| s.flows[s.groups[g].flow].steps.iter().map(move |st| s.step_key(g, st)))
        .collect();
    for slo in slos {
        let (known, what): (Vec<&str>, &str) = match slo.scope() {
            None => continue,
            Some((true, _)) => (groups.clone(), "group"),
            Some((false, _)) => (steps.iter().map(String::as_str).collect(), "step"),
        };
        let name = slo.scope().map_or("", |(_, n)| n);
        if !known.contains(&name) {
            anyhow::bail!(
                "--slo '{}': the scenario has no {what} {name} (its {what}s: {})",
                slo.text(),
                known.join(", ")
            );
        }
    }
    Ok(())
}

/// How `--no-redact` and `--redact-header` keep secrets out of the run's outputs.
pub fn redaction(o: &crate::args::OutputArgs) -> barrage_metrics::secrets::Redaction {
    use barrage_metrics::secrets::Redaction;
    if o.no_redact {
        Redaction::off()
    } else {
        Redaction::with_names(&o.redact_headers)
    }
}

/// Builds and validates the plan from the flags.
pub fn plan(a: &RunArgs) -> anyhow::Result<Plan> {
    // Reading a million targets takes a while: a signal meanwhile ends barrage at once.
    let _loading = crate::signals::loading();
    let r = &a.request;
    let method = method(r)?;
    let body = request_body(r)?;
    let mut headers = http::HeaderMap::new();
    for h in &r.headers {
        headers.append(h.0.clone(), h.1.clone());
    }
    let l = &a.load;
    let duration = l.duration.map(|d| d.0);
    let flags = barrage_plan::units::LoadFlags {
        rate: l.rate.clone(),
        step: l.step.map(|s| s.0),
        concurrency: l.concurrency.clone(),
        think_time: l.think_time.map(|t| t.0),
        connections: a.conn.connections,
        max_in_flight: l.max_in_flight,
        duration,
    };
    let mut load = flags.load().map_err(anyhow::Error::msg)?;
    let streams = a.conn.streams.unwrap_or(1);
    if let (Load::Open { max_in_flight, .. }, None) = (&mut load, l.max_in_flight) {
        // --connections counts connections, each carrying --streams requests.
        *max_in_flight = max_in_flight.saturating_mul(streams as usize);
    }
    // clap does not require --scenario of --var when a URL (which --scenario excludes) is given.
    if !r.vars.is_empty() && r.scenario.is_none() {
        anyhow::bail!("--var sets a {{{{NAME}}}} of a --scenario file: give --scenario FILE");
    }
    let (mut targets, scenario) = match &r.scenario {
        Some(path) => {
            let (s, targets) =
                barrage_plan::scenario::read(path, &r.vars, &load).map_err(|e| anyhow::anyhow!("--scenario {e}"))?;
            if (l.rate.is_some() || l.concurrency.is_some()) && s.groups.iter().all(|g| g.own_load) {
                anyhow::bail!(
                    "{}: every group of --scenario {} has its own rate or concurrency: the flags' load would apply to none",
                    if l.rate.is_some() { "--rate" } else { "-c" },
                    path.display()
                );
            }
            // Each step has its method and its target: flags that choose them would choose nothing.
            let chooses = [(r.method.is_some(), "-X/--method"), (r.pick.is_some(), "--pick")];
            if let Some((_, flag)) = chooses.iter().find(|(given, _)| *given) {
                anyhow::bail!(
                    "{flag} chooses the requests of URLs and target files; the steps of --scenario {} say their own",
                    path.display()
                );
            }
            if a.kv.key_pattern.is_some() {
                anyhow::bail!("--key-pattern is for redis:// and memcache:// targets, not a --scenario's steps");
            }
            // The groups' loads replace the flags'; the plan's load only sums them up.
            load = barrage_plan::scenario::overall_load(&s);
            let shard = a.launch.shard.unwrap_or(barrage_plan::Shard::WHOLE);
            (targets, Some(std::sync::Arc::new(s.in_shard(shard.index.into(), shard.count.into()))))
        }
        None => (Vec::new(), None),
    };
    let kv = kv_plan(a)?;
    match &kv {
        Some((kv_targets, _, _)) => targets = kv_targets.clone(),
        None if scenario.is_none() => targets = self::targets(a, &method)?,
        None => {}
    }
    // A target file gives each target its method: the flags' body goes only where a body
    // belongs (see `takes_body`), and must go somewhere.
    let from_file = r.targets.is_some();
    let mut given = 0;
    let mut with_flags = FlagHeaders::new(&headers);
    for t in &mut targets {
        // Flags add to what a target file says; a file's own body wins.
        let content_type = match body.as_ref().filter(|_| takes_body(t, from_file)) {
            Some(body) => {
                body.apply(t);
                given += 1;
                body.content_type.as_ref()
            }
            None => None,
        };
        t.headers = with_flags.of(&t.headers, content_type);
    }
    if let (Some(body), Some(path), 0) = (&body, &r.targets, given) {
        anyhow::bail!(
            "{} given, but no target in --targets {path} takes a body: it goes to POST, PUT and PATCH targets without a body of their own",
            body.flag
        );
    }
    // Stepped rates end after their last step; a scenario whose groups all end by
    // themselves (durations, iterations) after its last group.
    let natural_end = matches!(&load, Load::Open { pacer: Pacer::Steps { .. }, .. })
        || scenario.as_deref().is_some_and(barrage_plan::scenario::ends_by_itself);
    // A scenario whose groups all end by themselves lasts until the last one ends.
    let span = scenario.as_deref().and_then(barrage_plan::scenario::span);
    let duration =
        duration.or(span).or(if l.requests.is_none() && !natural_end { Some(DEFAULT_DURATION) } else { None });
    if scenario.is_some() && l.requests.is_some() {
        anyhow::bail!("-n counts requests; a --scenario runs flows for a duration: give -d (or group durations)");
    }
    let c = &a.conn;
    let m = &a.measure;
    let mut plan = Plan {
        targets: targets.into(),
        load,
        duration,
        requests: l.requests,
        keepalive: !c.no_keepalive,
        // --streams multiplexes HTTP/2 unless HTTP/3 is asked for.
        http2: c.http2 || (c.streams.is_some() && !c.http3),
        streams,
        rounds: c.rounds,
        http3: c.http3,
        tls: TlsOptions { cacert: c.cacert.clone(), insecure: c.insecure },
        resolve: c.resolve.iter().map(|r| ((r.host.clone(), r.port), r.addr)).collect(),
        bind: c.bind,
        timeout: c.timeout.0,
        connect_timeout: c.connect_timeout.0.min(c.timeout.0),
        threads: l.threads,
        rate_cap: l.rate_cap.map(|r| r.0),
        pick: match (&kv, &a.kv.key_pattern, &r.pick) {
            (_, Some(p), _) | (_, None, Some(p)) => p.clone(),
            // memtier's default key pattern is random (R:R).
            (Some(_), None, None) => barrage_plan::Pick::Random,
            (None, None, None) => barrage_plan::Pick::RoundRobin,
        },
        hit_ratio: r.hit_ratio,
        objects: kv.as_ref().map_or(r.objects, |(_, _, keys)| Some(*keys)),
        seed: r.seed,
        stream: barrage_plan::Stream::default(),
        cache_rules: barrage_plan::CacheRules::new(m.cache_rules.clone()),
        backend_headers: if m.backend_headers.is_empty() {
            barrage_plan::default_backend_headers()
        } else {
            m.backend_headers.clone()
        },
        retry: a.retry.retries.map(|max_retries| barrage_plan::RetryPolicy {
            max_retries,
            backoff_min: a.retry.backoff.0,
            backoff_max: a.retry.backoff.1,
            on: a.retry.retry_on.clone(),
        }),
        scenario,
        kv: kv.map(|(_, kv, _)| std::sync::Arc::new(kv)),
        shard: barrage_plan::Shard::WHOLE,
    };
    plan.validate().map_err(|e| anyhow::anyhow!(e))?;
    plan.shard = shard(a, &plan)?;
    if let Some(local) = plan.bind {
        // Refused now, not as every request's error: an address this machine does not have.
        std::net::TcpListener::bind((local, 0))
            .map_err(|e| anyhow::anyhow!("--bind {local}: not a local address of this machine ({e})"))?;
    }
    if let (Some(s), Some(end)) = (plan.scenario.as_deref(), plan.attack_limit()) {
        for g in s.groups.iter().filter(|g| g.start >= end) {
            eprintln!(
                "barrage: warning: group {} of --scenario starts at {:?}, when the run has ended ({:?}): it will not run",
                g.name, g.start, end
            );
        }
    }
    let flag = match &plan.load {
        Load::Closed { .. } => "-c",
        Load::Open { .. } if l.max_in_flight.is_some() => "--max-in-flight",
        Load::Open { .. } => "--connections",
    };
    check_connections(plan.connections(), plan.threads, flag)?;
    Ok(plan)
}

/// A study that sets the load itself (`sweep`, `capacity`) can run a scenario of one group,
/// whose load it replaces, but not one of several groups with loads of their own.
pub fn one_group(plan: &Plan, mode: &str) -> anyhow::Result<()> {
    match plan.scenario.as_deref() {
        // Capacity judges delivery in requests per second against the rate it asked; a
        // flow rate asks for several requests per arrival, so its verdict would be wrong.
        Some(_) if mode == "capacity" => anyhow::bail!(
            "capacity searches a request rate; a --scenario's rate is of flows: sweep --rate over the scenario instead"
        ),
        Some(s) if s.groups.len() > 1 => anyhow::bail!(
            "{mode} sets the load of each run; --scenario has {} groups with loads of their own: give it one group (or none, to use the flags' load)",
            s.groups.len()
        ),
        _ => Ok(()),
    }
}

/// Open files a run needs besides its connections: its results file and log, each engine
/// thread's runtime and timer, the watcher's reads of /proc, standard streams.
const RESERVED_FILES: u64 = 128;

/// A run of `connections` connections (given by `flag`) on `threads` engine threads (0: one
/// per CPU) fits in the process's limits: open files and address space.
pub fn check_connections(connections: usize, threads: usize, flag: &str) -> anyhow::Result<()> {
    check_open_files(connections, flag)?;
    check_address_space(connections, barrage_plan::plan::engine_threads(threads, connections), flag)
}

/// A run of `connections` connections fits in the process's open-file limit, else the
/// reason it does not, for [`check_connections`]; "too many open files" would otherwise
/// count as errors of the server.
fn check_open_files(connections: usize, flag: &str) -> anyhow::Result<()> {
    let needed = connections as u64 + RESERVED_FILES;
    let Err(hard) = make_room(libc::RLIMIT_NOFILE, needed) else { return Ok(()) };
    anyhow::bail!(
        "{flag} {connections} needs {needed} open files (one per connection, {RESERVED_FILES} for barrage itself), over this process's limit of {hard} (ulimit -n): at most {flag} {} fits; raise the limit for more",
        hard.saturating_sub(RESERVED_FILES)
    )
}

/// Address space a connection reserves, whatever its protocol: measured at about 128 KiB
/// over TLS for HTTP/1.1, HTTP/2 and HTTP/3 alike (VmPeak of 2,000 connections against
/// 1,000), doubled. The responses it holds come on top.
const CONNECTION_ADDRESS_SPACE: u64 = 256 << 10;

/// Address space an engine thread reserves besides its connections: its stack, its runtime.
const THREAD_ADDRESS_SPACE: u64 = 8 << 20;

/// Address space the run needs besides its threads and connections: the collector, the
/// results file's and the report's buffers.
const RESERVED_ADDRESS_SPACE: u64 = 64 << 20;

/// A run of `connections` connections on `threads` engine threads fits in the process's
/// address-space limit (`ulimit -v`) beside what it has mapped already, else the reason it
/// does not, for [`check_connections`]: past the limit an allocation fails, and a Rust
/// program aborts (exit 134) with nothing reported.
fn check_address_space(connections: usize, threads: usize, flag: &str) -> anyhow::Result<()> {
    let own = mapped_bytes() + RESERVED_ADDRESS_SPACE + threads as u64 * THREAD_ADDRESS_SPACE;
    let needed = own + connections as u64 * CONNECTION_ADDRESS_SPACE;
    let Err(hard) = make_room(libc::RLIMIT_AS, needed) else { return Ok(()) };
    let mib = |bytes: u64| bytes.div_ceil(1 << 20);
    anyhow::bail!(
        "{flag} {connections} needs about {} MiB of address space ({} KiB a connection, {} MiB for barrage itself), over this process's limit of {} MiB (ulimit -v): at most {flag} {} fits; raise the limit for more",
        mib(needed),
        CONNECTION_ADDRESS_SPACE >> 10,
        mib(own),
        hard >> 20,
        hard.saturating_sub(own) / CONNECTION_ADDRESS_SPACE
    )
}

/// The address space the process has mapped now (`VmSize`), bytes; 0 when not known.
fn mapped_bytes() -> u64 {
    let pages = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .unwrap_or(0);
    // SAFETY: sysconf only reads a system setting.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    pages * u64::try_from(page).unwrap_or(4096)
}

/// The type of a resource `getrlimit` takes.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
type Resource = libc::__rlimit_resource_t;
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
type Resource = libc::c_int;

/// Makes `needed` of `resource` fit under the process's soft limit, raising it up to the
/// hard one when needed (as Go does with open files for every program; no privilege
/// needed). The hard limit when even that is too small.
fn make_room(resource: Resource, needed: u64) -> Result<(), u64> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes the struct it is given, nothing else.
    if unsafe { libc::getrlimit(resource, &mut limit) } != 0 || needed <= limit.rlim_cur {
        return Ok(());
    }
    let raised = libc::rlimit { rlim_cur: needed, rlim_max: limit.rlim_max };
    // SAFETY: setrlimit reads the struct it is given.
    if needed <= limit.rlim_max && unsafe { libc::setrlimit(resource, &raised) } == 0 {
        return Ok(());
    }
    Err(limit.rlim_max)
}

/// A Redis or memcached run's targets (one per command of a round, named after it), its
/// [`KvPlan`](barrage_plan::kv::KvPlan) and its number of keys; `None` for HTTP.
fn kv_plan(a: &RunArgs) -> anyhow::Result<Option<(Vec<Target>, barrage_plan::kv::KvPlan, u64)>> {
    use barrage_plan::kv::{KvCommand, KvPlan, KvServer, ValueSizes};
    let k = &a.kv;
    let is_kv = |u: &String| ["redis://", "rediss://", "memcache://", "memcached://"].iter().any(|s| u.starts_with(s));
    let urls: Vec<&String> = a.target.urls.iter().chain(&k.servers).collect();
    let http_targets = !a.target.urls.is_empty() && !a.target.urls.iter().any(is_kv);
    if http_targets || a.request.scenario.is_some() || !urls.iter().any(|u| is_kv(u)) {
        // --key-pattern is --pick in memtier's words, for any run.
        let kv_only = [
            (!k.servers.is_empty(), "--servers"),
            (k.protocol.is_some(), "--protocol"),
            (k.ratio.is_some(), "--ratio"),
            (k.key_prefix.is_some(), "--key-prefix"),
            (k.key_minimum.is_some(), "--key-minimum"),
            (k.key_maximum.is_some(), "--key-maximum"),
            (k.data_size.is_some(), "--data-size"),
            (k.data_size_range.is_some(), "--data-size-range"),
            (k.data_size_list.is_some(), "--data-size-list"),
            (k.pipeline.is_some(), "--pipeline"),
            (!k.commands.is_empty(), "--command"),
            (k.distribution.is_some(), "--distribution"),
        ];
        if let Some((_, flag)) = kv_only.iter().find(|(given, _)| *given) {
            anyhow::bail!("{flag} is for redis:// and memcache:// targets; this run's targets are HTTP");
        }
        return Ok(None);
    }
    if let Some(http) = urls.iter().find(|u| !is_kv(u)) {
        anyhow::bail!("'{http}' is not a key-value server: a run is either HTTP or redis:// / memcache://, not both");
    }
    let r = &a.request;
    let http_only = [
        (r.targets.is_some(), "--targets"),
        (r.urls_file.is_some(), "--urls"),
        (r.body.is_some() || r.body_size.is_some() || !r.form.is_empty(), "--body"),
        (r.hit_ratio.is_some(), "--hit-ratio"),
        (!r.headers.is_empty(), "-H"),
        (r.method.is_some(), "-X"),
        (a.conn.no_keepalive, "--no-keepalive"),
    ];
    if let Some((_, flag)) = http_only.iter().find(|(set, _)| *set) {
        anyhow::bail!(
            "{flag} is for HTTP targets; a redis:// or memcache:// run takes --ratio, --command and --data-size"
        );
    }
    let servers = urls.iter().map(|u| KvServer::parse(u)).collect::<Result<Vec<_>, _>>().map_err(anyhow::Error::msg)?;
    let implied = servers[0].protocol;
    if let Some(s) = servers.iter().find(|s| s.protocol.is_redis() != implied.is_redis()) {
        anyhow::bail!("the servers mix Redis and memcached ({}:{}): a run speaks one protocol", s.host, s.port);
    }
    let protocol = k.protocol.unwrap_or(implied);
    if protocol.is_redis() != implied.is_redis() {
        anyhow::bail!(
            "--protocol {protocol:?} does not fit a {} URL",
            if implied.is_redis() { "redis://" } else { "memcache://" }
        );
    }
    let values = match (&k.data_size, &k.data_size_range, &k.data_size_list) {
        (Some(s), _, _) | (_, Some(s), _) | (_, _, Some(s)) => ValueSizes::parse(s).map_err(anyhow::Error::msg)?,
        _ => ValueSizes::Fixed(32),
    };
    let key_prefix = k.key_prefix.clone().unwrap_or_else(|| "memtier-".into());
    let key_minimum = k.key_minimum.unwrap_or(0);
    let commands: Vec<KvCommand> = if k.commands.is_empty() {
        let (set, get) = k.ratio.unwrap_or((1, 10));
        std::iter::repeat_n(KvCommand::Set, set as usize)
            .chain(std::iter::repeat_n(KvCommand::Get, get as usize))
            .collect()
    } else {
        k.commands
            .iter()
            .map(|c| barrage_plan::kv::parse_command(c, &key_prefix).map(KvCommand::Custom))
            .collect::<Result<_, _>>()
            .map_err(anyhow::Error::msg)?
    };
    let keys = match (r.objects, k.key_maximum) {
        (Some(n), _) => n,
        (None, max) => {
            let max = max.unwrap_or(9_999_999);
            if max < key_minimum {
                anyhow::bail!("--key-maximum {max} is below --key-minimum {key_minimum}");
            }
            max - key_minimum + 1
        }
    };
    // One server holds every key, whatever the distribution (an experiment may cross the two).
    let distribution = match (servers.len(), k.distribution.as_deref().unwrap_or("ketama")) {
        (1, _) => None,
        (_, "modulo") => Some(barrage_plan::ring::Distribution::Modulo(servers.len())),
        _ => {
            let hosts: Vec<(&str, u16)> = servers.iter().map(|s| (s.host.as_str(), s.port)).collect();
            Some(barrage_plan::ring::Distribution::Ketama(barrage_plan::ring::Ring::ketama(&hosts)))
        }
    };
    let targets = commands
        .iter()
        .map(|c| Target::kv(&c.name(), urls[0]))
        .collect::<Result<Vec<_>, _>>()
        .map_err(anyhow::Error::msg)?;
    let plan = KvPlan {
        protocol,
        servers,
        distribution,
        pipeline: k.pipeline.unwrap_or(1) as usize,
        key_prefix: bytes::Bytes::from(key_prefix),
        key_min: key_minimum,
        values,
        commands,
    };
    plan.validate().map_err(anyhow::Error::msg)?;
    Ok(Some((targets, plan, keys)))
}

/// The targets from the command line, `--targets` or `--urls`.
fn targets(a: &RunArgs, method: &http::Method) -> anyhow::Result<Vec<Target>> {
    if let Some(path) = &a.request.targets {
        return barrage_plan::targets::read_targets(path).map_err(|e| anyhow::anyhow!("--targets {e}"));
    }
    if let Some(path) = &a.request.urls_file {
        return barrage_plan::targets::read_urls(path, method).map_err(|e| anyhow::anyhow!("--urls {e}"));
    }
    a.target.urls.iter().map(|u| Target::new(method.clone(), u).map_err(|e| anyhow::anyhow!(e))).collect()
}

/// `-X`, or as curl: GET, POST when a body or form is given.
fn method(a: &RequestArgs) -> anyhow::Result<http::Method> {
    let has_body = a.body.is_some() || a.body_size.is_some() || !a.form.is_empty();
    match &a.method {
        Some(m) => http::Method::from_bytes(m.as_bytes())
            .map_err(|_| anyhow::anyhow!("invalid -X '{m}': expected a method such as GET, POST, PUT")),
        None if has_body => Ok(http::Method::POST),
        None => Ok(http::Method::GET),
    }
}

/// Whether the flags' body goes to `t`. Without a target file every target has the
/// method of the flags, so it takes the body (as curl, even with `-X GET`). From a target
/// file, only a target whose method carries a body (POST, PUT, PATCH) and that has no body
/// of its own takes it: the file's GETs stay plain GETs (Vegeta's `-body` would give them
/// the body too, which no server expects of a GET).
fn takes_body(t: &Target, from_file: bool) -> bool {
    use http::Method;
    !from_file || (t.body.is_empty() && matches!(t.method, Method::POST | Method::PUT | Method::PATCH))
}

/// The body the flags give: from --body, --body-size or --form.
struct FlagBody {
    /// The flag it came from, for messages.
    flag: &'static str,
    bytes: bytes::Bytes,
    unique_len: Option<usize>,
    /// A form's `multipart/form-data; boundary=…`.
    content_type: Option<http::HeaderValue>,
}

impl FlagBody {
    /// Gives `t` this body (its form's Content-Type goes with the flags' headers).
    fn apply(&self, t: &mut Target) {
        t.body = self.bytes.clone();
        t.body_unique_len = self.unique_len;
    }
}

/// Targets' headers with the flags' added, made once for each map the targets share: a
/// million targets of a list keep sharing one map (a map each took 660 bytes a target).
struct FlagHeaders<'a> {
    flags: &'a http::HeaderMap,
    /// The headers made from each shared map (held, so its address stays its own), with
    /// a form's Content-Type or without.
    made: std::collections::HashMap<(*const http::HeaderMap, bool), (Headers, Headers)>,
}

impl<'a> FlagHeaders<'a> {
    fn new(flags: &'a http::HeaderMap) -> FlagHeaders<'a> {
        FlagHeaders { flags, made: Default::default() }
    }

    /// `own` with the flags' headers after it, and a form's `content_type` (replacing the
    /// target's own: the boundary must match the body) unless `-H Content-Type` was given.
    fn of(&mut self, own: &Headers, content_type: Option<&http::HeaderValue>) -> Headers {
        let key = (&**own as *const http::HeaderMap, content_type.is_some());
        let flags = self.flags;
        let (_, made) = self.made.entry(key).or_insert_with(|| {
            let mut headers = own.clone();
            for (k, v) in flags {
                headers.append(k.clone(), v.clone());
            }
            if let (Some(ct), false) = (content_type, flags.contains_key(http::header::CONTENT_TYPE)) {
                headers.insert(http::header::CONTENT_TYPE, ct.clone());
            }
            (own.clone(), headers)
        });
        made.clone()
    }
}

/// The body from --body, --body-size or --form, if one is given.
fn request_body(a: &RequestArgs) -> anyhow::Result<Option<FlagBody>> {
    if !a.form.is_empty() {
        let (bytes, content_type) = barrage_plan::body::multipart(&a.form).map_err(anyhow::Error::msg)?;
        let content_type = Some(http::HeaderValue::from_str(&content_type)?);
        return Ok(Some(FlagBody { flag: "--form", bytes, unique_len: None, content_type }));
    }
    if let Some(size) = a.body_size {
        let src = barrage_plan::BodySource::generated(size as usize, a.body_pattern.as_deref(), a.body_unique, a.seed);
        return Ok(Some(FlagBody {
            flag: "--body-size",
            bytes: src.bytes,
            unique_len: src.unique_len,
            content_type: None,
        }));
    }
    let Some(body) = a.body.as_deref() else { return Ok(None) };
    let bytes = match body.strip_prefix('@') {
        Some(path) => {
            barrage_plan::body::read_body_file(path.as_ref()).map_err(|e| anyhow::anyhow!("--body @{path}: {e}"))?
        }
        None => bytes::Bytes::copy_from_slice(body.as_bytes()),
    };
    Ok(Some(FlagBody { flag: "--body", bytes, unique_len: None, content_type: None }))
}
