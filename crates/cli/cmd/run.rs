//! `barrage run`: flags to a [`Plan`], the run, the report.

use crate::args::units::RateSpec;
use crate::args::{Format, RunArgs};
use crate::Outcome;
use anyhow::{bail, Context};
use barrage_engine::{CancellationToken, Load, Pacer, Plan, RunSpec, Target, TlsOptions};
use barrage_metrics::units::fmt_us;
use barrage_metrics::IntervalRecord;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Duration;

/// Default in-flight bound (and connection count) of an open-loop run.
const DEFAULT_OPEN_CONNECTIONS: u32 = 256;
/// Default workers of a closed-loop run (as hey).
const DEFAULT_CONCURRENCY: u32 = 50;
/// Default duration when neither --duration nor --requests is given (as wrk).
const DEFAULT_DURATION: Duration = Duration::from_secs(10);

/// Runs the load and prints the report; with `--phases`, once per phase.
pub fn run(args: RunArgs) -> anyhow::Result<Outcome> {
    let plan = plan(&args)?;
    let watch = super::watch::watches(&args.monitor, args.testbed.as_deref(), &plan)?;
    let at = super::watch::schedule(&args.at, plan.duration)?;
    let phases: Vec<Option<&str>> =
        if args.phases.is_empty() { vec![None] } else { args.phases.iter().map(|p| Some(p.as_str())).collect() };
    let mut failed = false;
    for (i, phase) in phases.iter().enumerate() {
        if let (Some(name), Format::Text) = (phase, args.format) {
            println!("== phase {}/{}: {name}\n", i + 1, phases.len());
        }
        let log = args
            .log
            .as_ref()
            .map(|path| barrage_engine::reqlog::LogSpec { path: per_phase(path, *phase), sample: args.log_sample });
        // The same seeds every phase: the measure phase replays the stream the fill phase
        // sent, so a cache in front is warm for exactly those requests.
        let run = Execution {
            settings_json: settings_json(&args, *phase),
            output: args.output.as_ref().map(|p| per_phase(p, *phase)),
            format: args.format,
            hdr_log: args.hdr_log.as_ref().map(|p| per_phase(p, *phase)),
            log,
            watch: watch.clone(),
            at: at.clone(),
            tui: args.tui,
            metrics_addr: args.metrics_addr,
        };
        let summary = execute(plan.clone(), run)?;
        if let Some(path) = &args.html {
            let path = per_phase(path, *phase);
            std::fs::write(&path, barrage_report::html(&barrage_report::Page::Run(&summary)))
                .with_context(|| format!("--html {}", path.display()))?;
        }
        let sheets = [barrage_report::summary_sheet(&summary), barrage_report::intervals_sheet(&summary)];
        let xlsx = args.xlsx.as_ref().map(|p| per_phase(p, *phase));
        let csv_dir = args.csv_dir.as_ref().map(|p| per_phase(p, *phase));
        super::export::export(&sheets, xlsx.as_deref(), csv_dir.as_deref())?;
        if !args.slo.is_empty() && !check_slos(&args, &summary, *phase)? {
            failed = true;
        }
        if i + 1 < phases.len() && args.format == Format::Text {
            println!();
        }
    }
    Ok(if failed { Outcome::Failed } else { Outcome::Ok })
}

/// Prints the SLO verdicts (on stderr when stdout carries JSON or CSV) and writes --junit;
/// false when any objective was missed.
fn check_slos(args: &RunArgs, summary: &barrage_metrics::RunSummary, phase: Option<&str>) -> anyhow::Result<bool> {
    let results: Vec<_> = args.slo.iter().map(|slo| slo.check(summary)).collect();
    let lines = barrage_report::slo_lines(&results);
    if args.format == Format::Text {
        print!("\n{lines}");
    } else {
        eprint!("{lines}");
    }
    if let Some(path) = &args.junit {
        let path = per_phase(path, phase);
        let suite = format!("barrage run {}", summary.urls.join(" "));
        std::fs::write(&path, barrage_report::junit(&suite, &results, summary.duration.total_s))
            .with_context(|| format!("--junit {}", path.display()))?;
    }
    Ok(results.iter().all(|r| r.pass))
}

/// `run.brg` becomes `run.fill.brg` in phase `fill`.
fn per_phase(path: &std::path::Path, phase: Option<&str>) -> PathBuf {
    let Some(phase) = phase else { return path.to_path_buf() };
    let stem = path.file_stem().map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    let name = match path.extension() {
        Some(ext) => format!("{stem}.{phase}.{}", ext.to_string_lossy()),
        None => format!("{stem}.{phase}"),
    };
    path.with_file_name(name)
}

/// How to run a plan and where its results go.
#[derive(Default)]
pub struct Execution {
    /// The run's settings, for the results file.
    pub settings_json: String,
    /// The results file; a temporary one when `None`.
    pub output: Option<PathBuf>,
    /// The report printed at the end.
    pub format: Format,
    /// `--hdr-log`.
    pub hdr_log: Option<PathBuf>,
    /// `--log`.
    pub log: Option<barrage_engine::reqlog::LogSpec>,
    /// `--monitor` and a testbed's servers.
    pub watch: Vec<barrage_engine::Watch>,
    /// `--at`.
    pub at: Vec<barrage_engine::ScheduledCommand>,
    /// `--tui`: the live terminal view instead of the progress line.
    pub tui: bool,
    /// `--metrics-addr`: the live Prometheus endpoint.
    pub metrics_addr: Option<std::net::SocketAddr>,
}

/// Runs a plan with the results in `run.output` (or a temporary file), then renders it.
pub fn execute(plan: Plan, run: Execution) -> anyhow::Result<barrage_metrics::RunSummary> {
    let format = run.format;
    if format == Format::HdrLog {
        bail!("--format hdr-log is for `barrage report`; on `run` use --hdr-log FILE");
    }
    let summary = measure(plan, run)?;
    super::report::print_summary(&summary, format)?;
    Ok(summary)
}

/// Runs a plan with the results in `run.output` (or a temporary file) and summarizes it,
/// printing nothing but the progress line.
pub fn measure(plan: Plan, run: Execution) -> anyhow::Result<barrage_metrics::RunSummary> {
    // The report is always rendered from the results file, so a report printed now and one
    // re-rendered later are the same; without --output the file is temporary.
    let temp;
    let path = match run.output {
        Some(p) => p,
        None => {
            temp = tempfile::Builder::new().prefix("barrage-").suffix(".brg").tempfile()?;
            temp.path().to_path_buf()
        }
    };
    let stop = ctrl_c()?.child_token();
    let total = plan.attack_limit();
    let mut hdr = HdrLog::create(run.hdr_log)?;
    let metrics = match run.metrics_addr {
        Some(addr) => {
            let m =
                super::live_metrics::MetricsEndpoint::start(addr).with_context(|| format!("--metrics-addr {addr}"))?;
            eprintln!("metrics on http://{}/metrics", m.local_addr());
            Some(m)
        }
        None => None,
    };
    let mut view = if run.tui {
        View::Tui(super::tui::Tui::start(tui_info(&plan), stop.clone())?)
    } else {
        View::Line(Progress::new(total))
    };
    let spec =
        RunSpec { output: path.clone(), settings_json: run.settings_json, log: run.log, watch: run.watch, at: run.at };
    let result = barrage_engine::run(plan, &spec, stop, &mut |i| {
        view.show(i);
        hdr.write(i);
        if let Some(m) = &metrics {
            m.update(i);
        }
    });
    view.finish();
    if let Some(m) = metrics {
        m.finish();
    }
    result?;
    hdr.finish()?;
    Ok(barrage_metrics::summary::summarize(std::slice::from_ref(&path))?)
}

/// How the run shows itself while it goes.
enum View {
    /// The one-line progress on stderr (when it is a terminal).
    Line(Progress),
    /// `--tui`.
    Tui(super::tui::Tui),
}

impl View {
    fn show(&mut self, i: &IntervalRecord) {
        match self {
            View::Line(p) => p.show(i),
            View::Tui(t) => t.update(i),
        }
    }

    fn finish(self) {
        match self {
            View::Line(mut p) => p.clear(),
            View::Tui(t) => t.finish(),
        }
    }
}

/// What the live view knows before the run.
fn tui_info(plan: &Plan) -> super::tui::TuiInfo {
    let (target_rate, concurrency) = match &plan.load {
        Load::Open { pacer: Pacer::Constant { rate }, .. } => (Some(*rate), None),
        Load::Open { .. } => (None, None),
        Load::Closed { concurrency, .. } => (None, Some(*concurrency)),
    };
    super::tui::TuiInfo {
        urls: plan.targets.iter().map(|t| t.url.to_string()).collect(),
        target_rate,
        concurrency,
        total: plan.attack_limit(),
        requests: plan.requests,
    }
}

/// `--hdr-log`: written interval by interval as the run goes, like the results file, so a
/// killed run keeps what it measured.
struct HdrLog {
    path: Option<PathBuf>,
    file: Option<std::fs::File>,
    writer: Option<barrage_report::HdrLogWriter<std::fs::File>>,
    error: Option<anyhow::Error>,
}

impl HdrLog {
    fn create(path: Option<PathBuf>) -> anyhow::Result<Self> {
        let file = match &path {
            Some(p) => Some(std::fs::File::create(p).with_context(|| format!("--hdr-log {}", p.display()))?),
            None => None,
        };
        Ok(HdrLog { path, file, writer: None, error: None })
    }

    fn write(&mut self, i: &IntervalRecord) {
        if self.error.is_some() {
            return;
        }
        if let Err(e) = self.try_write(i) {
            self.error = Some(e);
        }
    }

    fn try_write(&mut self, i: &IntervalRecord) -> anyhow::Result<()> {
        if let Some(file) = self.file.take() {
            let start_unix_ms = i.start_unix_ms - u64::from(i.index) * 1000;
            self.writer = Some(barrage_report::HdrLogWriter::new(file, start_unix_ms)?);
        }
        if let Some(w) = &mut self.writer {
            let start = Duration::from_secs(u64::from(i.index));
            w.write_interval(start, Duration::from_millis(u64::from(i.length_ms)), &i.recorder)?;
        }
        Ok(())
    }

    fn finish(self) -> anyhow::Result<()> {
        match (self.error, self.path) {
            (Some(e), Some(p)) => Err(e.context(format!("--hdr-log {}", p.display()))),
            _ => Ok(()),
        }
    }
}

/// Cancelled by the first Ctrl-C of the process; every run's stop token is a child of it,
/// so a sweep, a capacity search or an experiment stops as a whole.
static INTERRUPT: std::sync::OnceLock<CancellationToken> = std::sync::OnceLock::new();
/// Testbeds to take down if a second Ctrl-C ends the process at once.
static TESTBEDS: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// The process's Ctrl-C token, installing the handler on first use. The first Ctrl-C stops
/// the attack (the partial report is printed); the second takes down the testbeds this
/// process brought up and exits. Returns once the handler is installed, so a Ctrl-C during
/// the run is never the default one that would kill the process and lose the report.
pub(crate) fn ctrl_c() -> anyhow::Result<CancellationToken> {
    if let Some(t) = INTERRUPT.get() {
        return Ok(t.clone());
    }
    let token = CancellationToken::new();
    let stop = token.clone();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    std::thread::Builder::new().name("barrage-signals".into()).spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build();
        let Ok(rt) = rt else {
            let _ = ready_tx.send(false);
            return;
        };
        rt.block_on(async {
            use tokio::signal::unix::{signal, SignalKind};
            let Ok(mut sigint) = signal(SignalKind::interrupt()) else {
                let _ = ready_tx.send(false);
                return;
            };
            let _ = ready_tx.send(true);
            sigint.recv().await;
            eprintln!("\nbarrage: stopping (Ctrl-C again to quit at once)");
            stop.cancel();
            sigint.recv().await;
            let dirs = TESTBEDS.lock().map(|d| d.clone()).unwrap_or_default();
            for dir in dirs {
                let _ = barrage_testbed::down(&dir);
            }
            std::process::exit(130);
        });
    })?;
    if !ready_rx.recv().unwrap_or(false) {
        anyhow::bail!("cannot install the Ctrl-C handler");
    }
    Ok(INTERRUPT.get_or_init(|| token).clone())
}

/// Whether Ctrl-C stopped the process's work.
pub(crate) fn interrupted() -> bool {
    INTERRUPT.get().is_some_and(CancellationToken::is_cancelled)
}

/// Takes the testbed in `dir` down even if a second Ctrl-C ends the process.
pub(crate) fn down_on_exit(dir: &std::path::Path) {
    if let Ok(mut d) = TESTBEDS.lock() {
        d.push(dir.to_path_buf());
    }
}

/// The live progress line on stderr, only when it is a terminal.
struct Progress {
    on: bool,
    total: Option<Duration>,
}

impl Progress {
    fn new(total: Option<Duration>) -> Self {
        Progress { on: std::io::stderr().is_terminal(), total }
    }

    fn show(&mut self, i: &IntervalRecord) {
        if !self.on {
            return;
        }
        let r = &i.recorder;
        let secs = f64::from(i.length_ms) / 1e3;
        let elapsed = i.index + 1;
        let total = self.total.map_or(String::new(), |t| format!("/{}s", t.as_secs()));
        let p99 = if r.corrected.is_empty() { 0 } else { r.corrected.value_at_quantile(0.99) };
        let line = format!(
            "[{elapsed}s{total}] rate {:.0}/s  ok {:.0}/s  p99 {}  errors {}",
            r.counts.sent as f64 / secs,
            r.counts.ok as f64 / secs,
            fmt_us(p99 as f64),
            r.counts.completed.saturating_sub(r.counts.ok)
        );
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K{line}");
        let _ = err.flush();
    }

    fn clear(&mut self) {
        if self.on {
            eprint!("\r\x1b[2K");
        }
    }
}

/// Builds and validates the plan from the flags.
pub fn plan(a: &RunArgs) -> anyhow::Result<Plan> {
    let method = method(a)?;
    let (body, body_unique_len, content_type) = request_body(a)?;
    let mut headers = http::HeaderMap::new();
    if let Some(ct) = content_type {
        headers.insert(http::header::CONTENT_TYPE, http::HeaderValue::from_str(&ct)?);
    }
    for h in &a.headers {
        // A -H Content-Type replaces the one a form brings.
        if h.0 == http::header::CONTENT_TYPE {
            headers.remove(http::header::CONTENT_TYPE);
        }
        headers.append(h.0.clone(), h.1.clone());
    }
    let mut targets = targets(a, &method)?;
    for t in &mut targets {
        // Flags add to what a target file says; a file's own body wins.
        for (k, v) in &headers {
            t.headers.append(k.clone(), v.clone());
        }
        if t.body.is_empty() {
            t.body = body.clone();
            t.body_unique_len = body_unique_len;
        }
    }
    let duration = a.duration.map(|d| d.0);
    let load = load(a, duration)?;
    let natural_end = matches!(&load, Load::Open { pacer: Pacer::Steps { .. }, .. });
    let duration = duration.or(if a.requests.is_none() && !natural_end { Some(DEFAULT_DURATION) } else { None });
    let plan = Plan {
        targets,
        load,
        duration,
        requests: a.requests,
        keepalive: !a.no_keepalive,
        http2: a.http2,
        tls: TlsOptions { cacert: a.cacert.clone(), insecure: a.insecure },
        resolve: a.resolve.iter().map(|r| ((r.host.clone(), r.port), r.addr)).collect(),
        timeout: a.timeout.0,
        connect_timeout: a.connect_timeout.0.min(a.timeout.0),
        threads: a.threads,
        pick: a.pick.clone(),
        hit_ratio: a.hit_ratio,
        objects: a.objects,
        seed: a.seed,
        cache_rules: barrage_plan::CacheRules::new(a.cache_rules.clone()),
        backend_headers: if a.backend_headers.is_empty() {
            barrage_plan::default_backend_headers()
        } else {
            a.backend_headers.clone()
        },
        retry: a.retries.map(|max_retries| barrage_plan::RetryPolicy {
            max_retries,
            backoff_min: a.backoff.0,
            backoff_max: a.backoff.1,
            on: a.retry_on.clone(),
        }),
    };
    plan.validate().map_err(|e| anyhow::anyhow!(e))?;
    Ok(plan)
}

/// The targets from the command line, `--targets` or `--urls`.
fn targets(a: &RunArgs, method: &http::Method) -> anyhow::Result<Vec<Target>> {
    if let Some(path) = &a.targets {
        return barrage_plan::targets::read_targets(path).map_err(|e| anyhow::anyhow!("--targets {e}"));
    }
    if let Some(path) = &a.urls_file {
        return barrage_plan::targets::read_urls(path, method).map_err(|e| anyhow::anyhow!("--urls {e}"));
    }
    a.urls.iter().map(|u| Target::new(method.clone(), u).map_err(|e| anyhow::anyhow!(e))).collect()
}

fn load(a: &RunArgs, duration: Option<Duration>) -> anyhow::Result<Load> {
    let Some(rate) = &a.rate else {
        if a.step.is_some() {
            bail!("--step goes with stepped rates such as --rate 10,50,100 (or levels of `barrage sweep`)");
        }
        if a.connections.is_some() {
            bail!(
                "--connections is for open loop (--rate); in closed loop each of the -c workers has its own connection"
            );
        }
        let concurrency = match a.concurrency.as_ref().map(|l| &l.0[..]) {
            None => DEFAULT_CONCURRENCY,
            Some([n]) => *n,
            Some(_) => bail!("-c with several worker counts is a sweep: use `barrage sweep`"),
        };
        return Ok(Load::Closed {
            concurrency: concurrency as usize,
            think_time: a.think_time.map_or(Duration::ZERO, |t| t.0),
        });
    };
    let pacer = match rate {
        RateSpec::Constant(r) => Pacer::Constant { rate: *r },
        RateSpec::Ramp(from, to) => {
            let Some(over) = duration else { bail!("--rate {from}:{to} ramps over the run: give --duration too") };
            Pacer::Ramp { from: *from, to: *to, over }
        }
        RateSpec::Steps(rates) => {
            let step = match (a.step, duration) {
                (Some(s), _) => s.0,
                (None, Some(d)) => d / rates.len() as u32,
                (None, None) => bail!("--rate with steps needs --step DURATION (or --duration to split evenly)"),
            };
            // Intervals are whole seconds: a step of whole seconds keeps each interval, and
            // so each step's report, free of its neighbours.
            if step.subsec_nanos() != 0 || step.is_zero() {
                bail!("--step {step:?}: steps must last whole seconds (1s, 10s, 1m), so each is reported on its own");
            }
            Pacer::Steps { rates: rates.clone(), step }
        }
    };
    if a.step.is_some() && !matches!(rate, RateSpec::Steps(_)) {
        bail!("--step goes with stepped rates such as --rate 10,50,100");
    }
    let max_in_flight = a.max_in_flight.or(a.connections).unwrap_or(DEFAULT_OPEN_CONNECTIONS) as usize;
    Ok(Load::Open { pacer, max_in_flight })
}

/// `-X`, or as curl: GET, POST when a body or form is given.
fn method(a: &RunArgs) -> anyhow::Result<http::Method> {
    let has_body = a.body.is_some() || a.body_size.is_some() || !a.form.is_empty();
    match &a.method {
        Some(m) => http::Method::from_bytes(m.as_bytes())
            .map_err(|_| anyhow::anyhow!("invalid -X '{m}': expected a method such as GET, POST, PUT")),
        None if has_body => Ok(http::Method::POST),
        None => Ok(http::Method::GET),
    }
}

/// The body from --body, --body-size or --form: bytes, a unique window, a Content-Type.
fn request_body(a: &RunArgs) -> anyhow::Result<(bytes::Bytes, Option<usize>, Option<String>)> {
    if !a.form.is_empty() {
        let (bytes, content_type) = barrage_plan::body::multipart(&a.form);
        return Ok((bytes, None, Some(content_type)));
    }
    if let Some(size) = a.body_size {
        let src = barrage_plan::BodySource::generated(size as usize, a.body_pattern.as_deref(), a.body_unique, a.seed);
        return Ok((src.bytes, src.unique_len, None));
    }
    Ok((body(a.body.as_deref())?, None, None))
}

fn body(spec: Option<&str>) -> anyhow::Result<bytes::Bytes> {
    match spec {
        None => Ok(bytes::Bytes::new()),
        Some(s) => match s.strip_prefix('@') {
            Some(path) => {
                std::fs::read(path).map(Into::into).with_context(|| format!("--body @{path}: cannot read the file"))
            }
            None => Ok(bytes::Bytes::copy_from_slice(s.as_bytes())),
        },
    }
}

fn settings_json(a: &RunArgs, phase: Option<&str>) -> String {
    serde_json::json!({
        "phase": phase,
        "urls": a.urls,
        "targets": a.targets,
        "urls_file": a.urls_file,
        "pick": format!("{:?}", a.pick),
        "objects": a.objects,
        "hit_ratio": a.hit_ratio,
        "seed": a.seed,
        "retries": a.retries,
        "backoff": format!("{:?}", a.backoff),
        "retry_on": format!("{:?}", a.retry_on),
        "backend_headers": a.backend_headers.iter().map(|h| h.as_str()).collect::<Vec<_>>(),
        "cache_rules": a.cache_rules.iter().map(|r| format!("{r:?}")).collect::<Vec<_>>(),
        "rate": a.rate.as_ref().map(|r| format!("{r:?}")),
        "step": a.step.map(|d| d.0.as_secs_f64()),
        "max_in_flight": a.max_in_flight,
        "concurrency": a.concurrency.as_ref().map(|l| l.0.clone()),
        "think_time_s": a.think_time.map(|d| d.0.as_secs_f64()),
        "duration_s": a.duration.map(|d| d.0.as_secs_f64()),
        "requests": a.requests,
        "connections": a.connections,
        "keepalive": !a.no_keepalive,
        "http2": a.http2,
        "insecure": a.insecure,
        "method": a.method,
        "body_size": a.body_size,
        "body_unique": a.body_unique,
        "form": a.form.iter().map(|f| &f.name).collect::<Vec<_>>(),
        "headers": a.headers.iter().map(|h| format!("{}: {}", h.0, h.1.to_str().unwrap_or("?"))).collect::<Vec<_>>(),
        "timeout_s": a.timeout.0.as_secs_f64(),
        "connect_timeout_s": a.connect_timeout.0.as_secs_f64(),
    })
    .to_string()
}
