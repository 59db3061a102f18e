//! Experiments: every case of a factor matrix, repeated, with warm-up, random order, pauses,
//! background load, phases and testbeds, into a [`StudyDir`]; then the matrix (a row per
//! case and phase, mean ± sd over the repeats) and the comparisons along factors, tested
//! for significance as `barrage compare` does.
//!
//! The binary turns each case's settings into [`RunOrder`]s (they are `run` flags); this module
//! owns everything else.

use crate::dir::{Role, StudyDir};
use crate::series::{measure, Finished, RunOrder, Runner};
use crate::StudyError;
use barrage_metrics::secrets::Redaction;
use barrage_metrics::summary::RunSummary;
use barrage_report::compare::{compare_judged, pool, CaseComparison, Unfit};
use barrage_report::{Slo, SloResult, StudyRow, StudyTable};
use barrage_testbed::{Balance, Eviction, Lifetime, Options, TestbedError, Topology};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What a run of a repeat is, for its stream's index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StreamRole {
    Measured,
    Background,
    WarmUp,
    WarmUpBackground,
}

impl StreamRole {
    const COUNT: u64 = 4;
}

// Every run of the largest experiment has a stream index of its own.
const _: () = assert!(
    1 + barrage_plan::limits::MAX_RUNS * barrage_plan::phases::MAX_PHASES as u64 * StreamRole::COUNT
        < barrage_plan::pick::MAX_STREAMS
);

/// A testbed a case runs against: `testbed = "varnish"` (and `testbed-tls = true`,
/// `testbed-backends`, `testbed-balance`, `testbed-weights`, `testbed-shape`). Cases with
/// the same one share a testbed.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Environment {
    /// Which servers.
    pub topology: Topology,
    /// HTTPS at the fronts and origins.
    pub tls: bool,
    /// Origins; `None`: the topology's default.
    pub backends: Option<u32>,
    /// How balancers spread requests.
    pub balance: Balance,
    /// The origins' weights at the balancers; empty: equal.
    pub weights: Vec<u32>,
    /// The origins' shapes, as `testbed up --shape` takes them.
    pub shapes: Vec<String>,
    /// The caches' size in bytes (`testbed-memory`).
    pub memory: Option<u64>,
    /// redis-server's eviction policy (`testbed-eviction`).
    pub eviction: Option<Eviction>,
}

impl Environment {
    /// A testbed of `topology` with nothing else said.
    pub fn of(topology: Topology) -> Environment {
        Environment {
            topology,
            tls: false,
            backends: None,
            balance: Balance::RoundRobin,
            weights: Vec::new(),
            shapes: Vec::new(),
            memory: None,
            eviction: None,
        }
    }

    /// The testbed's options, its origins run by the `barrage` binary at that path.
    pub fn options(&self, barrage: &Path) -> Options {
        Options {
            topology: self.topology,
            backends: self.backends.unwrap_or(self.topology.default_backends()),
            tls: self.tls,
            balance: self.balance,
            barrage: barrage.to_path_buf(),
            shapes: self.shapes.clone(),
            weights: self.weights.clone(),
            memory: self.memory,
            eviction: self.eviction,
            keep_logs: None,
        }
    }

    /// What it has beyond topology, TLS and origins: `uri-hash, weights 3,1, shape latency=100ms`,
    /// `64MiB, allkeys-lru`.
    fn extras(&self) -> String {
        let mut parts = Vec::new();
        if self.balance != Balance::RoundRobin {
            parts.push(self.balance.name().to_string());
        }
        if !self.weights.is_empty() {
            parts.push(format!("weights {}", self.weights.iter().map(u32::to_string).collect::<Vec<_>>().join(",")));
        }
        if !self.shapes.is_empty() {
            parts.push(format!("shape {}", self.shapes.join(" ")));
        }
        if let Some(b) = self.memory {
            parts.push(match b {
                b if b % (1 << 20) == 0 => format!("{}MiB", b >> 20),
                b if b % (1 << 10) == 0 => format!("{}KiB", b >> 10),
                b => format!("{b}B"),
            });
        }
        parts.extend(self.eviction.map(|e| e.name().to_string()));
        parts.join(", ")
    }

    /// `varnish`, `nginx-lb (tls)`, `haproxy-lb ×3` or `haproxy-lb ×3 [uri-hash, shape capacity=4]`.
    pub fn name(&self) -> String {
        let backends = self.backends.map_or(String::new(), |n| format!(" ×{n}"));
        let extras = self.extras();
        let extras = if extras.is_empty() { extras } else { format!(" [{extras}]") };
        format!("{}{}{backends}{extras}", self.topology.name(), if self.tls { " (tls)" } else { "" })
    }

    /// Its directory inside the experiment's: `testbed-haproxy-lb-tls-3`, and a digest of
    /// the balancing, weights, shapes and sizes when any is set (`-1a2b3c4d`), so the name stays
    /// short and safe whatever a shape says (a `file:` path, slashes).
    pub fn dir(&self, results: &Path) -> PathBuf {
        let backends = self.backends.map_or(String::new(), |n| format!("-{n}"));
        let extras = self.extras();
        let digest = if extras.is_empty() {
            String::new()
        } else {
            // FNV-1a: stable across releases, so a resumed experiment finds its directory.
            let h =
                extras.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
            format!("-{:08x}", h as u32 ^ (h >> 32) as u32)
        };
        results.join(format!(
            "testbed-{}{}{backends}{digest}",
            self.topology.name(),
            if self.tls { "-tls" } else { "" }
        ))
    }
}

/// A testbed server as URL placeholders see it: (name, URL, HTTPS URL).
pub type Server = (String, String, Option<String>);

/// The servers of a testbed as URL placeholders see them.
/// A server whose TLS another terminates (varnish, behind hitch as `varnish-tls`) has that
/// one's HTTPS URL as its `{NAME:https}`.
pub fn servers_of(specs: &[barrage_testbed::ServerSpec]) -> Vec<Server> {
    let terminator = |name: &str| specs.iter().find(|t| t.name == format!("{name}-tls")).and_then(|t| t.tls_url());
    specs.iter().map(|s| (s.name.clone(), s.url(), s.tls_url().or_else(|| terminator(&s.name)))).collect()
}

/// `{NAME}` (or `{NAME:http}`) and `{NAME:https}` of every server replaced by its URL
/// (without the trailing slash, so `{varnish}/bytes/1k` reads naturally). A placeholder
/// left after that, but `{id}` (the engine's object id), has no value: an error naming it.
/// The experiment's `vars` were filled before.
pub fn fill(flags: &[String], servers: &[Server]) -> Result<Vec<String>, String> {
    flags
        .iter()
        .map(|f| {
            let mut f = f.clone();
            for (name, url, tls_url) in servers {
                let url = url.trim_end_matches('/');
                f = f.replace(&format!("{{{name}}}"), url).replace(&format!("{{{name}:http}}"), url);
                if let Some(t) = tls_url {
                    f = f.replace(&format!("{{{name}:https}}"), t.trim_end_matches('/'));
                }
            }
            f = fill_all(&f, servers);
            // `{id}` is a URL template's; `{trace_id}` and `{span_id}` a --trace-url template's,
            // which an experiment refuses by name once its flags are read.
            match barrage_plan::experiment::placeholders(&f)
                .into_iter()
                .find(|p| !matches!(*p, "id" | "trace_id" | "span_id"))
            {
                Some(p) => Err(unknown_placeholder(p, &f, servers)),
                None => Ok(f),
            }
        })
        .collect()
}

/// `{KIND:all}`: the URLs of every server named `KIND` or `KIND-N`, comma-separated, so
/// that `servers = "{memcached:all}"` names all of a case's memcached instances however many
/// `testbed-backends` it has.
fn fill_all(flag: &str, servers: &[Server]) -> String {
    let mut f = flag.to_string();
    for p in barrage_plan::experiment::placeholders(flag) {
        let Some(kind) = p.strip_suffix(":all") else { continue };
        let urls: Vec<&str> = servers
            .iter()
            .filter(|(n, ..)| n == kind || n.strip_prefix(kind).is_some_and(|rest| rest.starts_with('-')))
            .map(|(_, url, _)| url.trim_end_matches('/'))
            .collect();
        if !urls.is_empty() {
            f = f.replace(&format!("{{{p}}}"), &urls.join(","));
        }
    }
    f
}

/// `{p}` in `flag` has no value: what could have given it one.
fn unknown_placeholder(p: &str, flag: &str, servers: &[Server]) -> String {
    let name = p.split(':').next().unwrap_or(p);
    let testbed = match servers.iter().find(|(n, ..)| n == name) {
        Some(_) => format!(
            "its testbed's {name} has no such form (only {{{name}}}, {{{name}:all}}, and {{{name}:https}} with TLS)"
        ),
        None if servers.is_empty() => "the case has no testbed".to_string(),
        None => {
            let names: Vec<&str> = servers.iter().map(|(n, ..)| n.as_str()).collect();
            format!("its testbed's servers are {}", names.join(", "))
        }
    };
    format!(
        "placeholder {{{p}}} in '{flag}' has no value: neither [base] nor a level of the case sets vars = {{ {name} = ... }}, and {testbed}"
    )
}

/// A case, ready to run.
#[derive(Clone, Debug)]
pub struct CaseSpec {
    /// `TC0`, ...
    pub id: String,
    /// (factor, level) for every factor.
    pub levels: Vec<(String, String)>,
    /// The testbed it runs against.
    pub testbed: Option<Environment>,
    /// Its testbed's caches are emptied (`testbed purge`) before each repeat's first phase,
    /// after the warm-up: every repeat starts from an empty cache, its fill phase included,
    /// and its later phases (measure) see what the fill put there.
    pub purge: bool,
    /// Its phases (fill, measure); empty: one run per repeat.
    pub phases: Vec<String>,
    /// The measured run as `run` flags, `{SERVER}` placeholders unfilled (for the manifest
    /// and the listing; the binary builds the runs from them).
    pub flags: Vec<String>,
    /// The background load's flags.
    pub background: Option<Vec<String>>,
    /// How its flags are shown (its runs' own `no-redact` and `redact-header`).
    pub redaction: Redaction,
}

impl CaseSpec {
    /// The measured run's flags as the manifest and the listing show them.
    pub(crate) fn shown_flags(&self) -> Vec<String> {
        self.redaction.args(&self.flags)
    }

    /// Its `at` events as (offset, command), as shown.
    pub(crate) fn events(&self) -> Vec<(String, String)> {
        let flags = self.shown_flags();
        flags
            .iter()
            .enumerate()
            .filter(|(_, f)| *f == "--at")
            .filter_map(|(i, _)| Some((flags.get(i + 1)?.clone(), flags.get(i + 2)?.clone())))
            .collect()
    }

    /// The background load's flags as shown.
    fn shown_background(&self) -> Option<Vec<String>> {
        self.background.as_ref().map(|b| self.redaction.args(b))
    }
}

/// The manifest of an experiment's directory: the file's settings and every case as it
/// runs, its flags redacted.
pub fn manifest(e: &barrage_plan::experiment::Experiment, cases: &[CaseSpec]) -> crate::dir::Manifest {
    let unredacted = cases.iter().any(|c| !c.redaction.enabled);
    let cases = cases
        .iter()
        .map(|c| crate::dir::ManifestCase {
            id: c.id.clone(),
            levels: c.levels.iter().cloned().collect(),
            run: c.shown_flags(),
            background: c.shown_background(),
            testbed: c.testbed.as_ref().map(Environment::name),
            phases: c.phases.clone(),
        })
        .collect();
    crate::dir::Manifest {
        name: e.name.clone(),
        repeats: e.repeats,
        warmup: e.warmup.clone(),
        pause: e.pause.clone(),
        order: order_name(e).into(),
        seed: e.seed,
        compare: e.compare.clone(),
        slo: e.slo.clone(),
        unredacted,
        cases,
        ..Default::default()
    }
}

fn order_name(e: &barrage_plan::experiment::Experiment) -> &'static str {
    match e.order {
        barrage_plan::experiment::Order::Random => "random",
        barrage_plan::experiment::Order::Sequential => "sequential",
    }
}

/// `--dry-run`: every case with the exact flags it runs with.
pub fn listing(e: &barrage_plan::experiment::Experiment, cases: &[CaseSpec]) -> String {
    let mut out = format!("{}: {} case(s) × {} repeat(s), {} order\n", e.name, cases.len(), e.repeats, order_name(e));
    for c in cases {
        out.push_str(&format!("{}  {}\n    run {}\n", c.id, levels_text(c), shell_words(&c.shown_flags())));
        if let Some(env) = &c.testbed {
            let tls = if env.tls { " with HTTPS" } else { "" };
            let backends =
                env.backends.map_or(String::new(), |n| format!(", {n} origin{}", if n == 1 { "" } else { "s" }));
            let extras = env.extras();
            let extras = if extras.is_empty() { extras } else { format!(" ({extras})") };
            let purge = if c.purge { ", its caches purged before each repeat" } else { "" };
            out.push_str(&format!("    against a testbed: {}{tls}{backends}{extras}{purge}\n", env.topology.name()));
        }
        if !c.phases.is_empty() {
            out.push_str(&format!("    phases {}\n", c.phases.join(", ")));
        }
        let events = c.events();
        if !events.is_empty() {
            let when = match c.phases.last() {
                Some(p) => format!("of phase {} (the measured one)", barrage_plan::phases::name(p)),
                None => "of each measured run (not the warm-up)".into(),
            };
            let on = if c.testbed.is_some() { ", on its testbed" } else { "" };
            out.push_str(&format!("    events {when}{on}:\n"));
            for (offset, command) in events {
                out.push_str(&format!("      at {offset}: {command}\n"));
            }
            if c.testbed.is_some() {
                out.push_str("      (a server they leave stopped is started again before the next run)\n");
            }
        }
        if let Some(flags) = &c.shown_background() {
            out.push_str(&format!("    background {}\n", shell_words(flags)));
        }
    }
    for line in shared_caches(cases, e.repeats) {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// Notes on cases that share a testbed's cache without emptying it and ask it for keys that
/// repeat from run to run (no `hit-ratio`, whose new objects are new to the whole study, and
/// no phases): each such run finds what the runs before it left, so its hits grow with the
/// order of the runs, not with its factors (found trying seed 001's study: 81% to 94% hits
/// over four runs of one memcached). One line per testbed, naming the cases; `repeats` runs
/// of each case.
pub fn shared_caches(cases: &[CaseSpec], repeats: u32) -> Vec<String> {
    let mut beds: Vec<(&Environment, Vec<&str>)> = Vec::new();
    for c in cases.iter().filter(|c| !c.purge && c.phases.is_empty() && !c.flags.iter().any(|f| f == "--hit-ratio")) {
        let Some(env) = &c.testbed else { continue };
        let Ok(servers) = crate::cases::planned(Some(env)) else { continue };
        // Asks a cache: names one of the testbed's caches, or every server of its kind.
        let named = |name: &str| {
            c.flags.iter().any(|f| f.contains(&format!("{{{name}}}")) || f.contains(&format!("{{{name}:")))
        };
        if !servers.iter().filter(|s| s.kind.is_cache()).any(|s| named(&s.name) || named(s.kind.name())) {
            continue;
        }
        match beds.iter_mut().find(|(e, _)| *e == env) {
            Some((_, ids)) => ids.push(&c.id),
            None => beds.push((env, vec![&c.id])),
        }
    }
    beds.into_iter()
        .filter(|(_, ids)| ids.len() as u64 * u64::from(repeats) > 1)
        .map(|(env, ids)| {
            format!(
                "note: {} share testbed {} and ask its cache for keys that repeat from run to run, without testbed-purge: each run finds what the runs before it left (testbed-purge = true starts each measured run from an empty cache)",
                ids.join(", "),
                env.name()
            )
        })
        .collect()
}

/// Flags as a shell would need them quoted.
fn shell_words(flags: &[String]) -> String {
    let quote = |f: &String| {
        // `<` and `>` too: a redacted value reads `<redacted>`.
        if f.contains([' ', '\'', '"', '{', '}', '&', ';', '<', '>']) {
            format!("'{}'", f.replace('\'', "'\\''"))
        } else {
            f.clone()
        }
    };
    flags.iter().map(quote).collect::<Vec<_>>().join(" ")
}

/// A case's runs, built once its testbed's servers are known.
pub struct Built {
    /// The measured run: plan and watches (labels and files are the experiment's).
    pub main: RunOrder,
    /// The background load beside it.
    pub background: Option<RunOrder>,
}

/// The testbed a case runs against, as its runs need it.
#[derive(Clone, Debug, Default)]
pub struct Bed {
    /// Its servers, for `{NAME}` placeholders (empty without a testbed).
    pub servers: Vec<Server>,
    /// Its directory: its servers are watched.
    pub dir: Option<PathBuf>,
    /// Its CA certificate: a case against a TLS testbed trusts it by itself.
    pub ca: Option<PathBuf>,
}

/// Builds case `index`'s runs against its testbed.
pub type Build<'a> = dyn Fn(usize, &Bed) -> Result<Built, String> + 'a;

/// An experiment to run.
pub struct Experiment<'a> {
    /// Its name.
    pub name: String,
    /// Its directory (the manifest written).
    pub dir: &'a StudyDir,
    /// The cases, in matrix order.
    pub cases: &'a [CaseSpec],
    /// The factors' names and their levels in file order (the order comparisons go).
    pub factors: Vec<(String, Vec<String>)>,
    /// Factors to compare along.
    pub compare: Vec<String>,
    /// Runs per case.
    pub repeats: u32,
    /// Shuffle (case, repeat) with this seed.
    pub shuffle: Option<u64>,
    /// A warm-up run of this length before each measured one, thrown away.
    pub warmup: Option<Duration>,
    /// A pause between runs.
    pub pause: Option<Duration>,
    /// The barrage binary, to run testbed origins.
    pub barrage: PathBuf,
    /// Objectives of every case's every repeat.
    pub slos: Vec<Slo>,
    /// The smallest change called significant.
    pub noise: f64,
}

/// A case (and phase) as its comparisons take it: its repeats pooled, labelled by the case,
/// and what its matrix row says of them ([`Unfit`]).
type Pooled = ((String, RunSummary), Unfit);

/// What an experiment gives: the matrix and the comparisons.
#[derive(Clone, Debug)]
pub struct Results {
    /// A row per case (and phase).
    pub table: StudyTable,
    /// Every pair of cases that differ only in a compared factor.
    pub comparisons: Vec<CaseComparison>,
}

impl Experiment<'_> {
    /// Runs every (case, repeat) not finished yet, then reads the whole directory back.
    pub fn run(&self, build: &Build, runner: &mut Runner) -> Result<Results, StudyError> {
        for line in shared_caches(self.cases, self.repeats) {
            runner.note(&line);
        }
        let mut testbeds = Testbeds::default();
        let order = self.order();
        runner.plan_runs(order.len());
        let total = order.len();
        let mut finished = true;
        for (n, (c, repeat)) in order.into_iter().enumerate() {
            let case = &self.cases[c];
            if self.done(case, repeat)? {
                runner.note(&format!("[{}/{total}] {} repeat {repeat}: done before, skipped", n + 1, case.id));
                continue;
            }
            if runner.stopped() {
                finished = false;
                break;
            }
            let bed = match case.testbed.clone().map(|env| testbeds.up(env, &self.dir.path, &self.barrage, runner)) {
                // Stopped while it came up (and it went down again): the study ends there.
                Some(Err(StudyError::Testbed(TestbedError::Interrupted))) => {
                    finished = false;
                    break;
                }
                Some(bed) => bed?,
                None => Bed::default(),
            };
            let built = build(c, &bed).map_err(|m| StudyError::Plan(format!("case {}: {m}", case.id)))?;
            runner.note(&format!("[{}/{total}] {} repeat {repeat}: {}", n + 1, case.id, levels_text(case)));
            if !self.run_repeat(c, repeat, &built, bed.dir.as_deref(), runner)? {
                finished = false;
                break;
            }
            if let Some(dir) = &bed.dir {
                restore(dir, &format!("{} repeat {repeat}", case.id), runner)?;
            }
            if let Some(d) = self.pause.filter(|_| n + 1 < total) {
                pause(d, runner);
            }
        }
        drop(testbeds);
        let mut results = self.read()?;
        results.table.partial = !finished || runner.stopped();
        Ok(results)
    }

    /// Every (case, repeat) in the order they run.
    pub(crate) fn order(&self) -> Vec<(usize, u32)> {
        let mut order: Vec<(usize, u32)> =
            (0..self.cases.len()).flat_map(|c| (1..=self.repeats).map(move |r| (c, r))).collect();
        if let Some(seed) = self.shuffle {
            use rand::seq::SliceRandom;
            use rand::SeedableRng;
            order.shuffle(&mut rand::rngs::StdRng::seed_from_u64(seed));
        }
        order
    }

    /// The names of a case's phases (`measure` of `measure:30s`: a file-name part and a
    /// label), or one unnamed run.
    pub(crate) fn phases(case: &CaseSpec) -> Vec<Option<&str>> {
        if case.phases.is_empty() {
            vec![None]
        } else {
            case.phases.iter().map(|p| Some(barrage_plan::phases::name(p))).collect()
        }
    }

    /// A repeat is done when the measured file of its last phase exists (it is renamed
    /// last), or the run made elsewhere is there: a complete split's shard files in a
    /// directory of that name (an incomplete one is refused, naming it).
    fn done(&self, case: &CaseSpec, repeat: u32) -> Result<bool, StudyError> {
        let last = *Self::phases(case).last().expect("at least one phase");
        let place = self.dir.file(&case.id, repeat, last, Role::Measured);
        if place.is_dir() {
            crate::dir::run_files(&place)?;
        }
        Ok(place.exists())
    }

    /// One repeat: a warm-up, then each phase with its background load. Files appear under
    /// their final names only once complete; an interrupted run stays `.part`, so
    /// `--resume` redoes it. False when the study was stopped.
    fn run_repeat(
        &self,
        c: usize,
        repeat: u32,
        built: &Built,
        testbed: Option<&Path>,
        runner: &mut Runner,
    ) -> Result<bool, StudyError> {
        let case = &self.cases[c];
        let phases = barrage_plan::phases::parse(&case.phases).map_err(StudyError::Plan)?;
        let (main_order, bg_order) = (
            self.streamed(&built.main, c, repeat, StreamRole::Measured),
            built.background.as_ref().map(|b| self.streamed(b, c, repeat, StreamRole::Background)),
        );
        if !self.warm_up(c, repeat, built, runner)? {
            return Ok(false);
        }
        if let Some(dir) = testbed.filter(|_| case.purge) {
            // After the warm-up, which would otherwise fill what was just emptied.
            runner.note(&format!("purging the caches of testbed {}", dir.display()));
            barrage_testbed::control(dir, "purge")?;
        }
        let names: Vec<Option<&str>> = Self::phases(case);
        let last = names.len() - 1;
        let mut warmed = 0;
        let mut fill_s = 0.0;
        for (i, phase) in names.into_iter().enumerate() {
            let file = self.dir.file(&case.id, repeat, phase, Role::Measured);
            let bg_file = self.dir.file(&case.id, repeat, phase, Role::Background);
            let mut main = main_order.clone().label("case", case.id.as_str()).label("repeat", repeat.to_string());
            let index = main.plan.stream.index;
            main.plan.in_study(index, &phases, i, warmed);
            if let Some(p) = phase {
                main = main.label("phase", p);
            }
            main.output = Some(StudyDir::part(&file));
            // `at` events happen in the last phase, the measured one (a fill only warms),
            // their offsets counted from its start.
            if i != last {
                main.at.clear();
            }
            let bg = bg_order.as_ref().map(|b| {
                let mut b = b.clone().label("case", case.id.as_str()).label("role", "background");
                b.plan.in_study(self.stream_index(c, repeat, StreamRole::Background, i), &[], 0, 0);
                b.plan.duration = background_length(&main.plan, b.plan.duration, fill_s);
                b.output = Some(StudyDir::part(&bg_file));
                b
            });
            let (m, b) = self.pair(runner, main, bg)?;
            let Some(m) = m.filter(|d| !d.interrupted) else { return Ok(false) };
            if b.as_ref().is_some_and(|d| d.interrupted) {
                return Ok(false);
            }
            if i == 0 {
                warmed = m.summary.sent_prefix;
                fill_s = m.summary.duration.attack_s;
            }
            if b.is_some() {
                rename(&StudyDir::part(&bg_file), &bg_file)?;
            }
            // The measured file last: its presence marks the repeat done for --resume.
            rename(m.path.as_deref().expect("written to a file"), &file)?;
        }
        Ok(true)
    }

    /// `j` as a stream of its own. Each case, repeat, warm-up and background load is one (its
    /// index in the study, so that no two ask for the same new object, and its seed), and the
    /// phases of a repeat share one: the fill asks for what the measure asks for again. A
    /// background's phases do not: its new objects are new in every phase.
    fn streamed(&self, j: &RunOrder, c: usize, repeat: u32, role: StreamRole) -> RunOrder {
        let mut j = j.clone();
        j.plan.in_study(self.stream_index(c, repeat, role, 0), &[], 0, 0);
        j
    }

    /// The warm-up before a repeat, when the study has one: the case and its background for
    /// the warm-up's length, on streams of their own. False when the study was stopped.
    fn warm_up(&self, c: usize, repeat: u32, built: &Built, runner: &mut Runner) -> Result<bool, StudyError> {
        let Some(w) = self.warmup else { return Ok(true) };
        let case = &self.cases[c];
        let warm = |j: &RunOrder, role: StreamRole| {
            let mut j = self.streamed(j, c, repeat, role);
            j.plan.duration = Some(w);
            j.plan.requests = None;
            // `at` events belong to the measured run: a warm-up does not stop servers.
            j.at.clear();
            j
        };
        let main =
            warm(&built.main, StreamRole::WarmUp).label("case", case.id.as_str()).label("warmup", repeat.to_string());
        let bg =
            built.background.as_ref().map(|b| warm(b, StreamRole::WarmUpBackground).label("case", case.id.as_str()));
        let (m, _) = self.pair(runner, main, bg)?;
        Ok(!m.is_none_or(|d| d.interrupted))
    }

    /// The study's index of a run: one for each case, repeat, phase and role, in that order.
    pub(crate) fn stream_index(&self, case: usize, repeat: u32, role: StreamRole, phase: usize) -> u64 {
        let run = case as u64 * u64::from(self.repeats) + u64::from(repeat.saturating_sub(1));
        let phases = barrage_plan::phases::MAX_PHASES as u64;
        1 + (run * phases + phase as u64) * StreamRole::COUNT + role as u64
    }

    /// The measured run through the runner (shown live), its background load beside it on
    /// another thread under the same token.
    fn pair(
        &self,
        runner: &mut Runner,
        main: RunOrder,
        bg: Option<RunOrder>,
    ) -> Result<(Option<Finished>, Option<Finished>), StudyError> {
        let token = runner.token();
        let (m, b) = std::thread::scope(|s| {
            let b = bg
                .as_ref()
                .map(|order| s.spawn(|| measure("experiment", order, token.child_token(), &mut |_| {}, &mut |_| {})));
            let m = runner.run(&main);
            (m, b.map(|h| h.join().expect("a background run does not panic")))
        });
        // A warm-up's runs have no output: their temporary files are gone already.
        Ok((m?, b.transpose()?.flatten()))
    }

    /// The matrix and comparisons, from the directory (so resumed runs count).
    pub fn read(&self) -> Result<Results, StudyError> {
        let any_phase = self.cases.iter().any(|c| !c.phases.is_empty());
        let mut columns = vec!["case"];
        columns.extend(self.factors.iter().map(|(f, _)| f.as_str()));
        if any_phase {
            columns.push("phase");
        }
        let mut table = StudyTable::new("matrix", &columns);
        table.spread = true;
        let mut pooled: HashMap<(String, Option<String>), Pooled> = HashMap::new();
        for case in self.cases {
            for phase in Self::phases(case) {
                let runs = crate::dir::summaries(&self.dir.measured(&case.id, phase))?;
                let background = crate::dir::summaries(&self.dir.background(&case.id, phase))?;
                let slos = self.check(case, &runs);
                let mut labels = vec![case.id.clone()];
                labels.extend(case.levels.iter().map(|(_, l)| l.clone()));
                if any_phase {
                    labels.push(phase.unwrap_or("-").to_string());
                }
                if !runs.is_empty() {
                    // Judged as the matrix judges the row: repeat by repeat, with its background.
                    let unfit = Unfit::of(&runs, &background);
                    pooled.insert(
                        (case.id.clone(), phase.map(String::from)),
                        ((case.id.clone(), pool(runs.clone())), unfit),
                    );
                }
                table.rows.push(StudyRow { labels, runs, background, slos, ..Default::default() });
            }
        }
        table.planned = table.rows.len();
        table.runs_per_row = self.repeats as usize;
        let comparisons = self.comparisons(&pooled);
        Ok(Results { table, comparisons })
    }

    fn check(&self, case: &CaseSpec, runs: &[RunSummary]) -> Vec<SloResult> {
        self.slos
            .iter()
            .flat_map(|slo| {
                runs.iter().enumerate().map(move |(i, s)| {
                    let r = slo.check(s);
                    SloResult { slo: format!("{} {} repeat {}", case.id, r.slo, i + 1), ..r }
                })
            })
            .collect()
    }

    /// For each factor compared along: each case at a later level against the case at the
    /// factor's first level (its baseline) that differs from it only in that factor,
    /// tested as `compare` tests two runs. Cases with the same phases are paired phase by
    /// phase; otherwise a phased case counts by its last phase (the measured one: `fill`
    /// only warms), so a cache-hit level with phases still meets an unphased baseline.
    fn comparisons(&self, pooled: &HashMap<(String, Option<String>), Pooled>) -> Vec<CaseComparison> {
        let mut out = Vec::new();
        for factor in &self.compare {
            let Some((_, levels)) = self.factors.iter().find(|(f, _)| f == factor) else { continue };
            let Some(baseline) = levels.first() else { continue };
            for a in self.cases.iter().filter(|c| level_of(c, factor) == baseline) {
                for b in self.cases.iter().filter(|b| level_of(b, factor) != baseline && same_except(a, b, factor)) {
                    for (pa, pb) in paired_phases(a, b) {
                        let key = |c: &CaseSpec, p: Option<&str>| (c.id.clone(), p.map(String::from));
                        let (Some(x), Some(y)) = (pooled.get(&key(a, pa)), pooled.get(&key(b, pb))) else { continue };
                        let others = a
                            .levels
                            .iter()
                            .filter(|(f, _)| f != factor)
                            .map(|(f, l)| format!("{f}={l}"))
                            .collect::<Vec<_>>()
                            .join(", ");
                        out.push(CaseComparison {
                            factor: factor.clone(),
                            from: baseline.clone(),
                            to: level_of(b, factor).to_string(),
                            others,
                            from_case: a.id.clone(),
                            to_case: b.id.clone(),
                            phase: pb.or(pa).map(String::from),
                            comparison: compare_judged(
                                &[x.0.clone(), y.0.clone()],
                                self.noise,
                                &[x.1.clone(), y.1.clone()],
                            ),
                        });
                    }
                }
            }
        }
        out
    }
}

/// The phases of `a` and `b` compared: each with itself when both have the same, else the
/// last of each (`None` for an unphased case).
fn paired_phases<'c>(a: &'c CaseSpec, b: &'c CaseSpec) -> Vec<(Option<&'c str>, Option<&'c str>)> {
    if a.phases == b.phases {
        return Experiment::phases(a).into_iter().map(|p| (p, p)).collect();
    }
    let last = |c: &'c CaseSpec| *Experiment::phases(c).last().expect("at least one");
    vec![(last(a), last(b))]
}

fn level_of<'c>(case: &'c CaseSpec, factor: &str) -> &'c str {
    case.levels.iter().find(|(f, _)| f == factor).map_or("", |(_, l)| l.as_str())
}

fn same_except(a: &CaseSpec, b: &CaseSpec, factor: &str) -> bool {
    a.levels.iter().zip(&b.levels).all(|((f, x), (_, y))| f == factor || x == y)
}

/// `protocol=https, cache=hit`.
fn levels_text(case: &CaseSpec) -> String {
    case.levels.iter().map(|(f, l)| format!("{f}={l}")).collect::<Vec<_>>().join(", ")
}

fn rename(from: &Path, to: &Path) -> Result<(), StudyError> {
    std::fs::rename(from, to).map_err(|e| StudyError::Io(from.to_path_buf(), e))
}

/// Waits `d`, or less if the study is stopped meanwhile.
fn pause(d: Duration, runner: &Runner) {
    let end = std::time::Instant::now() + d;
    while !runner.stopped() {
        let left = end.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            break;
        }
        std::thread::sleep(left.min(Duration::from_millis(50)));
    }
}

/// After a repeat: every server of the testbed in `dir` that is not running (stopped by
/// the case's `at` events, or ended on its own) is started again, and the study says so,
/// so that the next case never runs against a half-stopped testbed. One that will not start
/// ends the study with the reason.
fn restore(dir: &Path, after: &str, runner: &mut Runner) -> Result<(), StudyError> {
    let Some(state) = barrage_testbed::State::load(dir) else { return Ok(()) };
    for s in state.servers.iter().filter(|s| s.status != barrage_testbed::Status::Running) {
        let name = &s.spec.name;
        runner.note(&format!("{after} left {name} {}: starting it again for the next run", s.status));
        barrage_testbed::control(dir, &format!("start {name}")).map_err(|e| {
            StudyError::Plan(format!("{after} left {name} {} and it did not start again: {e}", s.status))
        })?;
    }
    Ok(())
}

/// The testbeds the cases need, each brought up once and taken down when the experiment
/// ends (or fails).
#[derive(Default)]
struct Testbeds {
    up: HashMap<Environment, Bed>,
}

impl Testbeds {
    /// The servers of `env`'s testbed, started on first use; it lives as long as this
    /// process at most (a SIGKILL included), and comes up only if the study is not stopped
    /// meanwhile.
    fn up(&mut self, env: Environment, results: &Path, barrage: &Path, runner: &mut Runner) -> Result<Bed, StudyError> {
        if let Some(bed) = self.up.get(&env) {
            return Ok(bed.clone());
        }
        let dir = env.dir(results);
        runner.note(&format!("bringing up testbed {} in {}", env.name(), dir.display()));
        runner.testbed_up(&dir);
        let stop = runner.token();
        // The servers' own logs, the study's ground truth, outlive the testbed beside it.
        let mut options = env.options(barrage);
        options.keep_logs = Some(logs_dir(&dir));
        let state = barrage_testbed::up(&options, &dir, Lifetime::Caller, &|| stop.is_cancelled())?;
        let servers = servers_of(&state.servers.iter().map(|s| s.spec.clone()).collect::<Vec<_>>());
        let bed = Bed { servers, dir: Some(dir), ca: state.ca.clone() };
        self.up.insert(env, bed.clone());
        Ok(bed)
    }
}

/// Where the servers' logs of the testbed in `dir` are kept once it is down:
/// `testbed-squid.logs/squid/access.log`.
pub fn logs_dir(dir: &Path) -> PathBuf {
    let mut name = dir.as_os_str().to_owned();
    name.push(".logs");
    PathBuf::from(name)
}

impl Drop for Testbeds {
    fn drop(&mut self) {
        for dir in self.up.values().filter_map(|b| b.dir.as_ref()) {
            if let Err(e) = barrage_testbed::down(dir) {
                eprintln!("barrage: taking the testbed in {} down: {e}", dir.display());
            }
        }
    }
}

/// How long a phase's background load runs: as long as the measured run beside it, so that
/// all of it is under load (found trying seed 000's study: a measure of as many requests as
/// its fill ran 2.3 s against a background of the case's 2 s). A run of a length has it; a
/// measure of a count of requests has none, and gets twice its fill's time (the same
/// requests again), at least `own`; what still falls short is marked by the row's workload
/// check ([`barrage_report::workload::deviation_of`]).
fn background_length(main: &barrage_plan::Plan, own: Option<Duration>, fill_s: f64) -> Option<Duration> {
    match (main.duration, main.requests) {
        (Some(d), _) => Some(d),
        (None, Some(_)) if fill_s > 0.0 => {
            let twice = Duration::try_from_secs_f64(2.0 * fill_s).unwrap_or(Duration::ZERO);
            Some(own.map_or(twice, |o| o.max(twice)))
        }
        // A count of requests without a fill before it: the background's own.
        _ => own,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A background runs as long as the measured run beside it: a phase's length; beside a
    /// measure of the fill's requests, twice the fill's time (at least its own); beside a
    /// fill of a count of requests, its own (what falls short is marked WORKLOAD).
    #[test]
    fn a_phases_background_runs_as_long_as_its_run() {
        let target = barrage_plan::Target::new(http::Method::GET, "http://127.0.0.1:1/").unwrap();
        let load = barrage_plan::Load::Closed { concurrency: 1, think_time: Duration::ZERO };
        let mut main = barrage_plan::Plan::new(vec![target], load);
        let secs = Duration::from_secs;
        (main.duration, main.requests) = (Some(secs(30)), None);
        assert_eq!(background_length(&main, Some(secs(2)), 0.0), Some(secs(30)));
        (main.duration, main.requests) = (None, Some(500));
        assert_eq!(background_length(&main, Some(secs(2)), 1.5), Some(secs(3)));
        assert_eq!(background_length(&main, Some(secs(5)), 1.5), Some(secs(5)));
        assert_eq!(background_length(&main, Some(secs(2)), 0.0), Some(secs(2)));
    }

    #[test]
    fn fill_gives_servers_their_urls_and_names_a_placeholder_without_a_value() {
        let servers: Vec<Server> = vec![
            ("varnish".into(), "http://127.0.0.1:1/".into(), None),
            ("origin-1".into(), "http://127.0.0.1:2/".into(), Some("https://127.0.0.1:3/".into())),
        ];
        let flags = ["--header", "X: ${HOME}", "{origin-1:https}/obj/{id}", "{varnish:http}/a", "{origin-1}/b"]
            .map(String::from);
        assert_eq!(
            fill(&flags, &servers).unwrap(),
            ["--header", "X: ${HOME}", "https://127.0.0.1:3/obj/{id}", "http://127.0.0.1:1/a", "http://127.0.0.1:2/b"]
        );
        for (flag, servers, want) in [
            ("{scheme}://a/", &servers[..], "placeholder {scheme} in '{scheme}://a/' has no value: neither [base] nor a level of the case sets vars = { scheme = ... }, and its testbed's servers are varnish, origin-1"),
            ("http://{host}/", &[][..], "placeholder {host} in 'http://{host}/' has no value: neither [base] nor a level of the case sets vars = { host = ... }, and the case has no testbed"),
            ("{varnish:https}/", &servers[..], "its testbed's varnish has no such form"),
        ] {
            let err = fill(&[flag.to_string()], servers).unwrap_err();
            assert!(err.contains(want), "{err}");
        }
    }

    #[test]
    fn environments_with_other_shapes_are_other_testbeds_in_short_safe_directories() {
        let plain = Environment::of(Topology::HaproxyLb);
        let mut slow = plain.clone();
        slow.backends = Some(3);
        slow.balance = Balance::UriHash;
        slow.shapes = vec!["latency=100ms,size=file:/some where/sizes.txt".into()];
        let mut fast = slow.clone();
        fast.shapes = vec!["latency=1ms".into()];
        let results = Path::new("/r");
        assert_eq!(plain.dir(results), Path::new("/r/testbed-haproxy-lb"));
        let (a, b) = (slow.dir(results), fast.dir(results));
        assert_ne!(a, b);
        for d in [&a, &b] {
            let name = d.file_name().unwrap().to_str().unwrap();
            assert!(
                name.starts_with("testbed-haproxy-lb-3-") && name.len() == "testbed-haproxy-lb-3-".len() + 8,
                "{name}"
            );
        }
        assert_eq!(slow.dir(results), a, "stable");
        assert_eq!(fast.name(), "haproxy-lb ×3 [uri-hash, shape latency=1ms]");
        let set: std::collections::HashSet<Environment> = [plain, slow, fast.clone(), fast].into_iter().collect();
        assert_eq!(set.len(), 3);
    }

    #[test]
    fn varnish_https_is_hitchs_and_sized_environments_get_testbeds_of_their_own() {
        let o = Environment { tls: true, ..Environment::of(Topology::Varnish) }.options(Path::new("barrage"));
        let specs = barrage_testbed::plan(&o, Path::new("/tmp/v")).unwrap();
        let servers = servers_of(&specs);
        let hitch = specs.iter().find(|s| s.name == "varnish-tls").unwrap().tls_url().unwrap();
        let filled = fill(&["{varnish:https}/a".to_string(), "{varnish-tls}/b".to_string()], &servers).unwrap();
        assert_eq!(filled, [format!("{hitch}a"), format!("{hitch}b")]);
        let redis = |memory, eviction| Environment { memory, eviction, ..Environment::of(Topology::Redis) };
        let plain = redis(None, None);
        let sized = redis(Some(64 << 20), Some(Eviction::AllKeysLru));
        assert_eq!(sized.name(), "redis [64MiB, allkeys-lru]");
        assert_ne!(plain.dir(Path::new("/r")), sized.dir(Path::new("/r")));
        assert_ne!(redis(Some(1536), None).dir(Path::new("/r")), redis(Some(1 << 20), None).dir(Path::new("/r")));
    }

    #[test]
    fn all_names_every_instance_of_a_kind() {
        let servers: Vec<Server> = ["memcached-1", "memcached-2", "memcached-10", "memcachedx-1", "redis-1"]
            .iter()
            .enumerate()
            .map(|(i, n)| (n.to_string(), format!("memcache://127.0.0.1:{i}"), None))
            .collect();
        assert_eq!(
            fill(&["{memcached:all}".to_string()], &servers).unwrap(),
            ["memcache://127.0.0.1:0,memcache://127.0.0.1:1,memcache://127.0.0.1:2"]
        );
        assert!(fill(&["{nginx:all}".to_string()], &servers).unwrap_err().contains("placeholder {nginx:all}"));
    }
}
