//! `barrage experiment FILE`: every case of a design, repeated, into a directory of results
//! files, then a matrix of cases and the comparisons the file asks for.

use super::run::{measure, Execution};
use crate::args::{ExperimentArgs, Format, RunArgs};
use crate::Outcome;
use anyhow::{bail, Context};
use barrage_metrics::summary::{summarize, RunSummary};
use barrage_plan::experiment::{Case, Experiment, Order, Settings};
use barrage_report::{Align, Cell, Sheet, Slo, SloResult, Table};
use clap::Parser;
use std::path::{Path, PathBuf};

/// `run`'s flags alone, to read a case's settings with the same parser and checks.
#[derive(Parser)]
#[command(name = "run", no_binary_name = false)]
struct RunOnly {
    #[command(flatten)]
    run: RunArgs,
}

/// A case ready to run: its flags for the measured run and for the background load, with
/// `{SERVER}` placeholders when it runs against a testbed.
struct Prepared {
    case: Case,
    flags: Vec<String>,
    background: Option<Vec<String>>,
    testbed: Option<Environment>,
}

/// A testbed a case runs against: `testbed = "varnish"` (and `testbed-tls = true`) in its
/// settings; `{varnish}`, `{origin-1}`, `{nginx-lb:https}` in its URLs are that testbed's
/// servers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Environment {
    topology: barrage_testbed::Topology,
    tls: bool,
}

impl Environment {
    /// Takes `testbed` and `testbed-tls` out of the settings.
    fn take(settings: &mut Settings) -> Result<Option<Environment>, String> {
        let tls = match settings.remove("testbed-tls") {
            None | Some(toml::Value::Boolean(false)) => false,
            Some(toml::Value::Boolean(true)) => true,
            Some(v) => return Err(format!("testbed-tls = {v}: expected true or false")),
        };
        match settings.remove("testbed") {
            None => Ok(None),
            Some(toml::Value::String(t)) => Ok(Some(Environment { topology: t.parse()?, tls })),
            Some(v) => Err(format!("testbed = {v}: expected a topology name such as \"varnish\"")),
        }
    }

    fn options(self) -> anyhow::Result<barrage_testbed::Options> {
        super::testbed::options(self.topology, None, self.tls, crate::args::BalanceArg::Roundrobin)
    }

    /// Its directory inside the experiment's.
    fn dir(self, results: &Path) -> PathBuf {
        results.join(format!("testbed-{}{}", self.topology.name(), if self.tls { "-tls" } else { "" }))
    }
}

/// A testbed server as URL placeholders see it: (name, URL, HTTPS URL).
type Server = (String, String, Option<String>);

/// `{NAME}` and `{NAME:https}` of every server of `state` replaced by its URL (without the
/// trailing slash, so `{varnish}/bytes/1k` reads naturally).
fn fill(flags: &[String], servers: &[Server]) -> Vec<String> {
    flags
        .iter()
        .map(|f| {
            let mut f = f.clone();
            for (name, url, tls_url) in servers {
                f = f.replace(&format!("{{{name}}}"), url.trim_end_matches('/'));
                if let Some(t) = tls_url {
                    f = f.replace(&format!("{{{name}:https}}"), t.trim_end_matches('/'));
                }
            }
            f
        })
        .collect()
}

/// The servers of a testbed as (name, URL, HTTPS URL).
fn servers_of(specs: &[barrage_testbed::ServerSpec]) -> Vec<Server> {
    specs.iter().map(|s| (s.name.clone(), s.url(), s.tls_url())).collect()
}

/// Checks every case, then lists them (`--dry-run`) or runs them.
pub fn experiment(a: ExperimentArgs) -> anyhow::Result<Outcome> {
    let e = Experiment::read(&a.file)?;
    let prepared = e.cases().into_iter().map(|c| prepare(&e, &a, c)).collect::<anyhow::Result<Vec<_>>>()?;
    if prepared.is_empty() {
        bail!("{}: every combination is excluded: no case to run", a.file.display());
    }
    if a.dry_run {
        print!("{}", dry_run(&e, &prepared));
        return Ok(Outcome::Ok);
    }
    let dir = a.output.clone().unwrap_or_else(|| default_dir(&a.file));
    start_dir(&dir, a.resume, &e, &prepared)?;
    run_all(&e, &prepared, &dir)?;
    let rows = prepared.iter().map(|p| case_row(&e, &a, p, &dir)).collect::<anyhow::Result<Vec<_>>>()?;
    report(&e, &a, &rows, &dir)
}

/// `cache-study.toml` → `cache-study.results`.
fn default_dir(file: &Path) -> PathBuf {
    let stem = file.file_stem().map_or_else(|| "experiment".into(), |s| s.to_string_lossy().into_owned());
    file.with_file_name(format!("{stem}.results"))
}

/// The case's settings as `run` flags, parsed and checked like `run`'s own.
fn prepare(e: &Experiment, a: &ExperimentArgs, case: Case) -> anyhow::Result<Prepared> {
    let at = |what: &str| {
        let lines: Vec<String> = case.lines.iter().map(|l| l.to_string()).collect();
        format!(
            "{}: case {} ({}; levels on lines {}): {what}",
            a.file.display(),
            case.id,
            levels_text(&case),
            lines.join(", ")
        )
    };
    let mut settings = case.settings.clone();
    let background = settings.remove("background");
    let testbed = Environment::take(&mut settings).map_err(|m| anyhow::anyhow!(at(&m)))?;
    if let Some(d) = &e.duration {
        settings.entry("duration".into()).or_insert_with(|| toml::Value::String(d.clone()));
    }
    // Checked now with stand-in addresses for the testbed's servers, which start later.
    let stand_in = match testbed {
        Some(env) => servers_of(&barrage_testbed::plan(&env.options()?, Path::new("/nonexistent"))?),
        None => Vec::new(),
    };
    let check = |flags: &[String], what: &str| -> anyhow::Result<()> {
        let run = parse_run(&fill(flags, &stand_in)).map_err(|m| anyhow::anyhow!(at(&format!("{what}{m}"))))?;
        super::run::plan(&run).map_err(|err| anyhow::anyhow!(at(&format!("{what}{err}"))))?;
        Ok(())
    };
    for key in [
        "slo",
        "junit",
        "phases",
        "log",
        "hdr-log",
        "html",
        "tui",
        "metrics-addr",
        "xlsx",
        "csv-dir",
        "format",
        "output",
    ] {
        if settings.contains_key(key) || settings.contains_key(&key.replace('-', "_")) {
            bail!(at(&format!("'{key}' is not a case setting (objectives go in `slo = [...]` at the top; outputs are the experiment's own)")));
        }
    }
    let flags = to_flags(&settings).map_err(|m| anyhow::anyhow!(at(&m)))?;
    check(&flags, "")?;
    let background = match background {
        None => None,
        Some(toml::Value::Table(bg)) => {
            // The background shares the case's target and duration; its own keys win.
            let mut merged = settings.clone();
            for key in ["rate", "concurrency", "connections", "max-in-flight", "think-time"] {
                merged.remove(key);
            }
            merged.extend(bg);
            let flags = to_flags(&merged).map_err(|m| anyhow::anyhow!(at(&format!("background: {m}"))))?;
            check(&flags, "background: ")?;
            Some(flags)
        }
        Some(_) => bail!(at("background must be a table of settings, e.g. background = { rate = 500 }")),
    };
    Ok(Prepared { case, flags, background, testbed })
}

/// Settings to flags: `url` values are the targets, `true` is a bare flag, `false` leaves it
/// out, a list repeats the flag.
fn to_flags(settings: &Settings) -> Result<Vec<String>, String> {
    let mut urls = Vec::new();
    let mut flags = Vec::new();
    for (key, value) in settings {
        let key = key.replace('_', "-");
        let values = match value {
            toml::Value::Array(items) => items.clone(),
            v => vec![v.clone()],
        };
        for v in values {
            let text = match &v {
                toml::Value::String(s) => s.clone(),
                toml::Value::Integer(i) => i.to_string(),
                toml::Value::Float(f) => f.to_string(),
                toml::Value::Boolean(true) => {
                    flags.push(format!("--{key}"));
                    continue;
                }
                toml::Value::Boolean(false) => continue,
                other => {
                    return Err(format!("'{key}' = {other}: expected text, a number, true/false or a list of them"))
                }
            };
            if key == "url" {
                urls.push(text);
            } else {
                flags.push(format!("--{key}"));
                flags.push(text);
            }
        }
    }
    flags.extend(urls);
    Ok(flags)
}

fn parse_run(flags: &[String]) -> Result<RunArgs, String> {
    let args = std::iter::once("run".to_string()).chain(flags.iter().cloned());
    RunOnly::try_parse_from(args).map(|r| r.run).map_err(|e| {
        let text = e.render().to_string();
        let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("invalid settings");
        first.trim_start_matches("error: ").to_string()
    })
}

fn levels_text(case: &Case) -> String {
    case.levels.iter().map(|(f, l)| format!("{f}={l}")).collect::<Vec<_>>().join(", ")
}

fn dry_run(e: &Experiment, prepared: &[Prepared]) -> String {
    let mut out = format!(
        "{}: {} case(s) × {} repeat(s), {} order\n",
        e.name,
        prepared.len(),
        e.repeats,
        if e.order == Order::Random { "random" } else { "sequential" }
    );
    for p in prepared {
        out.push_str(&format!("{}  {}\n    run {}\n", p.case.id, levels_text(&p.case), shell_words(&p.flags)));
        if let Some(env) = p.testbed {
            let tls = if env.tls { " with HTTPS" } else { "" };
            out.push_str(&format!("    against a testbed: {}{tls}\n", env.topology.name()));
        }
        if let Some(flags) = &p.background {
            out.push_str(&format!("    background {}\n", shell_words(flags)));
        }
    }
    out
}

fn shell_words(flags: &[String]) -> String {
    flags
        .iter()
        .map(|f| {
            if f.contains([' ', '\'', '"', '{', '}', '&', ';']) {
                format!("'{}'", f.replace('\'', "'\\''"))
            } else {
                f.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The results file of a case's repeat (written as `.part` until complete).
fn result_file(dir: &Path, id: &str, repeat: u32, role: &str) -> PathBuf {
    dir.join(format!("{id}.r{repeat}{role}.brg"))
}

/// Creates the directory; refuses earlier results unless resuming; writes the resolved
/// experiment beside them.
fn start_dir(dir: &Path, resume: bool, e: &Experiment, prepared: &[Prepared]) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("-o {}", dir.display()))?;
    let has_results = std::fs::read_dir(dir)?.flatten().any(|f| f.path().extension().is_some_and(|x| x == "brg"));
    if has_results && !resume {
        bail!("{} holds results of an earlier run: --resume to finish it, or -o another directory", dir.display());
    }
    let cases: Vec<serde_json::Value> = prepared
        .iter()
        .map(|p| {
            serde_json::json!({
                "id": p.case.id,
                "levels": p.case.levels.iter().map(|(f, l)| (f.clone(), l.clone())).collect::<std::collections::BTreeMap<_, _>>(),
                "run": p.flags,
                "background": p.background,
                "testbed": p.testbed.map(|t| format!("{}{}", t.topology.name(), if t.tls { " (tls)" } else { "" })),
            })
        })
        .collect();
    let resolved = serde_json::json!({
        "name": e.name, "repeats": e.repeats, "warmup": e.warmup, "pause": e.pause,
        "order": if e.order == Order::Random { "random" } else { "sequential" }, "seed": e.seed,
        "compare": e.compare, "slo": e.slo, "cases": cases,
    });
    let resolved_path = dir.join("experiment.json");
    if resume {
        // Case ids are positions in the matrix: an edited file would give old results new
        // meanings.
        if let Ok(earlier) = std::fs::read_to_string(&resolved_path) {
            let earlier: serde_json::Value = serde_json::from_str(&earlier).unwrap_or_default();
            if earlier["cases"] != resolved["cases"] || earlier["repeats"] != resolved["repeats"] {
                bail!("{}: the experiment file changed since the first run (cases or repeats differ): run it into another directory", dir.display());
            }
        }
    }
    std::fs::write(resolved_path, serde_json::to_string_pretty(&resolved)?)?;
    Ok(())
}

/// Every (case, repeat) not finished yet, in the experiment's order.
fn run_all(e: &Experiment, prepared: &[Prepared], dir: &Path) -> anyhow::Result<()> {
    let mut order: Vec<(usize, u32)> = (0..prepared.len()).flat_map(|c| (1..=e.repeats).map(move |r| (c, r))).collect();
    if e.order == Order::Random {
        use rand::seq::SliceRandom;
        use rand::SeedableRng;
        order.shuffle(&mut rand::rngs::StdRng::seed_from_u64(e.seed));
    }
    let pause = e.pause.as_deref().map(parse_duration).transpose()?;
    let warmup = e.warmup.as_deref().map(parse_duration).transpose()?;
    let total = order.len();
    let mut testbeds = Testbeds::default();
    for (n, (c, repeat)) in order.into_iter().enumerate() {
        let p = &prepared[c];
        let servers = match p.testbed {
            Some(env) => testbeds.up(env, dir)?,
            None => Vec::new(),
        };
        let file = result_file(dir, &p.case.id, repeat, "");
        if file.exists() {
            eprintln!("[{}/{total}] {} repeat {repeat}: done before, skipped", n + 1, p.case.id);
            continue;
        }
        eprintln!("[{}/{total}] {} repeat {repeat}: {}", n + 1, p.case.id, levels_text(&p.case));
        if let Some(w) = warmup {
            run_once(p, &servers, dir, repeat, Some(w))?;
        }
        run_once(p, &servers, dir, repeat, None)?;
        if let Some(d) = pause.filter(|_| n + 1 < total) {
            std::thread::sleep(d);
        }
    }
    Ok(())
}

/// The testbeds the cases need, each brought up once and taken down when the experiment
/// ends (or fails).
#[derive(Default)]
struct Testbeds {
    up: std::collections::HashMap<Environment, (PathBuf, Vec<Server>)>,
}

impl Testbeds {
    /// The servers of `env`'s testbed, started on first use.
    fn up(&mut self, env: Environment, results: &Path) -> anyhow::Result<Vec<Server>> {
        if let Some((_, servers)) = self.up.get(&env) {
            return Ok(servers.clone());
        }
        let dir = env.dir(results);
        eprintln!("bringing up testbed {} in {}", env.topology.name(), dir.display());
        super::run::down_on_exit(&dir);
        let state = barrage_testbed::up(&env.options()?, &dir)?;
        let servers = servers_of(&state.servers.iter().map(|s| s.spec.clone()).collect::<Vec<_>>());
        self.up.insert(env, (dir, servers.clone()));
        Ok(servers)
    }
}

impl Drop for Testbeds {
    fn drop(&mut self) {
        for (dir, _) in self.up.values() {
            if let Err(e) = barrage_testbed::down(dir) {
                eprintln!("barrage: taking the testbed in {} down: {e}", dir.display());
            }
        }
    }
}

fn parse_duration(s: &str) -> anyhow::Result<std::time::Duration> {
    barrage_metrics::units::parse_duration(s).map_err(|e| anyhow::anyhow!("'{s}': {e}"))
}

/// One measured run (with its background load), or a warm-up of `warmup` whose results
/// are thrown away. Files appear under their final names only once complete.
fn run_once(
    p: &Prepared,
    servers: &[Server],
    dir: &Path,
    repeat: u32,
    warmup: Option<std::time::Duration>,
) -> anyhow::Result<()> {
    let role = |r: &str| if warmup.is_some() { format!(".warmup{r}") } else { r.to_string() };
    let testbed_dir = p.testbed.map(|env| env.dir(dir));
    let launch = |flags: &[String], role: String| -> anyhow::Result<PathBuf> {
        let mut args = parse_run(&fill(flags, servers)).map_err(anyhow::Error::msg)?;
        // A testbed's servers are watched by themselves.
        args.testbed = args.testbed.or(testbed_dir.clone());
        let mut plan = super::run::plan(&args)?;
        if let Some(w) = warmup {
            plan.duration = Some(w);
            plan.requests = None;
        }
        let part = dir.join(format!("{}.r{repeat}{role}.brg.part", p.case.id));
        let watch = super::watch::watches(&args.monitor, args.testbed.as_deref(), &plan)?;
        let settings_json = serde_json::json!({ "case": p.case.id, "repeat": repeat, "role": role }).to_string();
        measure(plan, Execution { settings_json, output: Some(part.clone()), watch, ..Default::default() })?;
        Ok(part)
    };
    let (main, background) = std::thread::scope(|s| {
        let bg = p.background.as_ref().map(|flags| s.spawn(|| launch(flags, role(".background"))));
        let main = launch(&p.flags, role(""));
        (main, bg.map(|h| h.join().expect("the background run does not panic")))
    });
    let main = main?;
    let background = background.transpose()?;
    if super::run::interrupted() {
        for part in std::iter::once(main).chain(background) {
            let _ = std::fs::remove_file(part);
        }
        bail!("interrupted: the finished runs are kept; --resume continues");
    }
    if warmup.is_some() {
        for part in std::iter::once(main).chain(background) {
            let _ = std::fs::remove_file(part);
        }
        return Ok(());
    }
    if let Some(bg) = background {
        std::fs::rename(&bg, result_file(dir, &p.case.id, repeat, ".background"))?;
    }
    // The measured file last: its presence marks the repeat done for --resume.
    std::fs::rename(&main, result_file(dir, &p.case.id, repeat, ""))?;
    Ok(())
}

/// A figure over the repeats: mean and standard deviation.
#[derive(Clone, Copy, Debug, Default)]
struct Spread {
    mean: f64,
    sd: f64,
}

impl Spread {
    fn of(values: &[f64]) -> Spread {
        let n = values.len() as f64;
        if values.is_empty() {
            return Spread::default();
        }
        let mean = values.iter().sum::<f64>() / n;
        let var =
            if values.len() > 1 { values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0) } else { 0.0 };
        Spread { mean, sd: var.sqrt() }
    }
}

/// The figures of one case over its repeats.
struct CaseRow {
    case: Case,
    throughput: Spread,
    mean_us: Spread,
    p50_us: Spread,
    p99_us: Spread,
    success: Spread,
    hit_ratio: Option<Spread>,
    background_throughput: Option<Spread>,
    /// Mean of each phase that happened (dns, connect, tls, wait), µs: what one client of a
    /// probe under a background load sees.
    phases: Vec<(&'static str, Spread)>,
    slos: Vec<SloResult>,
}

/// The phases a matrix shows.
const PHASES: [&str; 4] = ["dns", "connect", "tls", "wait"];

/// How to read a metric off a row.
type Figure = fn(&CaseRow) -> f64;

/// The metrics a comparison changes, with how to read them off a row.
const METRICS: [(&str, Figure); 5] = [
    ("throughput", |r| r.throughput.mean),
    ("mean", |r| r.mean_us.mean),
    ("p50", |r| r.p50_us.mean),
    ("p99", |r| r.p99_us.mean),
    ("success", |r| r.success.mean),
];

fn case_row(e: &Experiment, a: &ExperimentArgs, p: &Prepared, dir: &Path) -> anyhow::Result<CaseRow> {
    let read = |role: &str| -> anyhow::Result<Vec<RunSummary>> {
        (1..=e.repeats)
            .map(|r| result_file(dir, &p.case.id, r, role))
            .filter(|f| role.is_empty() || f.exists())
            .map(|f| Ok(summarize(&[f])?))
            .collect()
    };
    let runs = read("")?;
    let background = read(".background")?;
    let slos: Vec<Slo> = e.slo.iter().map(|s| s.parse()).collect::<Result<_, String>>().map_err(anyhow::Error::msg)?;
    let slos: Vec<SloResult> = slos
        .iter()
        .chain(&a.slo)
        .flat_map(|slo| {
            runs.iter().enumerate().map(move |(i, s)| {
                let r = slo.check(s);
                SloResult { slo: format!("{} {} repeat {}", p.case.id, r.slo, i + 1), ..r }
            })
        })
        .collect();
    let of = |f: fn(&RunSummary) -> f64| Spread::of(&runs.iter().map(f).collect::<Vec<_>>());
    let hits: Vec<f64> = runs.iter().filter_map(|s| s.cache.as_ref().map(|c| c.hit_ratio)).collect();
    Ok(CaseRow {
        case: p.case.clone(),
        throughput: of(|s| s.throughput_per_sec),
        mean_us: of(|s| s.latency.corrected.mean_us),
        p50_us: of(|s| s.latency.corrected.p50_us as f64),
        p99_us: of(|s| s.latency.corrected.p99_us as f64),
        success: of(|s| s.success_ratio),
        hit_ratio: (!hits.is_empty()).then(|| Spread::of(&hits)),
        background_throughput: (!background.is_empty())
            .then(|| Spread::of(&background.iter().map(|s| s.throughput_per_sec).collect::<Vec<_>>())),
        phases: PHASES
            .iter()
            .map(|name| {
                let means: Vec<f64> = runs
                    .iter()
                    .filter_map(|s| s.phases.get(*name).filter(|p| p.count > 0).map(|p| p.mean_us))
                    .collect();
                (*name, Spread::of(&means))
            })
            .collect(),
        slos,
    })
}

/// The matrix: a row per case with its levels and figures.
fn matrix_sheet(e: &Experiment, rows: &[CaseRow]) -> Sheet {
    let mut header: Vec<String> = vec!["case".into()];
    header.extend(e.factors.iter().map(|f| f.name.clone()));
    header.extend(
        [
            "throughput_per_sec",
            "throughput_sd",
            "mean_ms",
            "mean_sd_ms",
            "p50_ms",
            "p50_sd_ms",
            "p99_ms",
            "p99_sd_ms",
            "success_percent",
            "hit_ratio_percent",
            "background_throughput_per_sec",
        ]
        .map(String::from),
    );
    header.extend(PHASES.iter().map(|p| format!("{p}_mean_ms")));
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut sheet = Sheet::new("matrix", &header);
    for r in rows {
        let mut cells = vec![Cell::from(r.case.id.clone())];
        cells.extend(r.case.levels.iter().map(|(_, l)| Cell::from(l.clone())));
        let ms = |x: f64| x / 1e3;
        cells.extend([
            Cell::from(r.throughput.mean),
            Cell::from(r.throughput.sd),
            Cell::from(ms(r.mean_us.mean)),
            Cell::from(ms(r.mean_us.sd)),
            Cell::from(ms(r.p50_us.mean)),
            Cell::from(ms(r.p50_us.sd)),
            Cell::from(ms(r.p99_us.mean)),
            Cell::from(ms(r.p99_us.sd)),
            Cell::from(r.success.mean * 100.0),
            Cell::from(r.hit_ratio.map(|h| h.mean * 100.0)),
            Cell::from(r.background_throughput.map(|b| b.mean)),
        ]);
        cells.extend(r.phases.iter().map(|(_, s)| Cell::from((s.mean > 0.0).then(|| ms(s.mean)))));
        sheet.push(cells);
    }
    sheet
}

/// For each factor to compare along: every pair of cases that differ only in it, and the %
/// change of each metric from the earlier level to the later one.
fn comparisons_sheet(e: &Experiment, rows: &[CaseRow]) -> Sheet {
    let mut header = vec!["factor", "from", "to", "other levels", "from case", "to case"];
    let changes: Vec<String> = METRICS.iter().map(|(m, _)| format!("{m}_change_percent")).collect();
    header.extend(changes.iter().map(String::as_str));
    let mut sheet = Sheet::new("comparisons", &header);
    for factor in &e.compare {
        let Some(f) = e.factors.iter().find(|x| &x.name == factor) else { continue };
        let rank = |level: &str| f.levels.iter().position(|l| l.name == level).unwrap_or(usize::MAX);
        for a in rows {
            for b in rows {
                let (la, lb) = (a.case.level(factor).unwrap_or(""), b.case.level(factor).unwrap_or(""));
                if rank(la) >= rank(lb) || !same_except(&a.case, &b.case, factor) {
                    continue;
                }
                let others: Vec<String> =
                    a.case.levels.iter().filter(|(f, _)| f != factor).map(|(f, l)| format!("{f}={l}")).collect();
                let mut cells = vec![
                    Cell::from(factor.as_str()),
                    Cell::from(la),
                    Cell::from(lb),
                    Cell::from(others.join(", ")),
                    Cell::from(a.case.id.clone()),
                    Cell::from(b.case.id.clone()),
                ];
                cells.extend(METRICS.iter().map(|(_, m)| {
                    let (x, y) = (m(a), m(b));
                    Cell::from((x != 0.0).then(|| (y - x) / x * 100.0))
                }));
                sheet.push(cells);
            }
        }
    }
    sheet
}

fn same_except(a: &Case, b: &Case, factor: &str) -> bool {
    a.levels.iter().zip(&b.levels).all(|((f, x), (_, y))| f == factor || x == y)
}

fn spread_text(s: Spread, show: impl Fn(f64) -> String) -> String {
    if s.sd > 0.0 {
        format!("{} ±{}", show(s.mean), show(s.sd))
    } else {
        show(s.mean)
    }
}

fn text(e: &Experiment, rows: &[CaseRow], comparisons: &Sheet) -> String {
    use barrage_metrics::units::fmt_us;
    // Phases only when some case measured them (new connections, a probe).
    let shown: Vec<usize> = (0..PHASES.len()).filter(|i| rows.iter().any(|r| r.phases[*i].1.mean > 0.0)).collect();
    let mut align = vec![Align::Left];
    align.extend(e.factors.iter().map(|_| Align::Left));
    align.extend(std::iter::repeat_n(Align::Right, 7 + shown.len()));
    let mut t = Table::new(&align);
    let mut head = vec!["case".to_string()];
    head.extend(e.factors.iter().map(|f| f.name.clone()));
    head.extend(["throughput", "mean", "p50", "p99", "success", "hit ratio", "background"].map(String::from));
    head.extend(shown.iter().map(|i| PHASES[*i].to_string()));
    t.row(head);
    for r in rows {
        let mut cells = vec![r.case.id.clone()];
        cells.extend(r.case.levels.iter().map(|(_, l)| l.clone()));
        cells.extend([
            spread_text(r.throughput, |v| format!("{v:.1}/s")),
            spread_text(r.mean_us, fmt_us),
            spread_text(r.p50_us, fmt_us),
            spread_text(r.p99_us, fmt_us),
            format!("{:.2}%", r.success.mean * 100.0),
            r.hit_ratio.map_or("-".into(), |h| format!("{:.1}%", h.mean * 100.0)),
            r.background_throughput.map_or("-".into(), |b| format!("{:.0}/s", b.mean)),
        ]);
        cells.extend(shown.iter().map(|i| fmt_us(r.phases[*i].1.mean)));
        t.row(cells);
    }
    let mut out = format!("Experiment {}: {} case(s) × {} repeat(s)\n", e.name, rows.len(), e.repeats);
    out.push_str(&t.to_text());
    out.push_str("(mean ± standard deviation over the repeats; latency is corrected; phases are means)\n");
    for factor in &e.compare {
        let mut t = Table::new(&[
            Align::Left,
            Align::Left,
            Align::Right,
            Align::Right,
            Align::Right,
            Align::Right,
            Align::Right,
        ]);
        t.row(["", "other levels", "throughput", "mean", "p50", "p99", "success"]);
        for row in comparisons.rows.iter().filter(|r| r[0] == Cell::from(factor.as_str())) {
            let text = |c: &Cell| match c {
                Cell::Text(s) => s.clone(),
                Cell::Number(n) => format!("{n:+.1}%"),
                Cell::Empty => "-".into(),
            };
            let mut cells = vec![
                format!("{} → {} ({} → {})", text(&row[1]), text(&row[2]), text(&row[4]), text(&row[5])),
                text(&row[3]),
            ];
            cells.extend(row[6..].iter().map(text));
            t.row(cells);
        }
        out.push_str(&format!("\nComparison along {factor} (% change from the first level to the second)\n"));
        out.push_str(&t.to_text());
    }
    out
}

/// Prints the matrix and comparisons, writes them beside the results, checks objectives.
fn report(e: &Experiment, a: &ExperimentArgs, rows: &[CaseRow], dir: &Path) -> anyhow::Result<Outcome> {
    let matrix = matrix_sheet(e, rows);
    let comparisons = comparisons_sheet(e, rows);
    let text = text(e, rows, &comparisons);
    std::fs::write(dir.join("summary.txt"), &text)?;
    std::fs::write(dir.join("matrix.csv"), barrage_report::to_csv(&matrix))?;
    std::fs::write(dir.join("comparisons.csv"), barrage_report::to_csv(&comparisons))?;
    match a.format {
        Format::Text => print!("{text}"),
        Format::Csv => print!("{}", barrage_report::to_csv(&matrix)),
        Format::Json => println!("{}", json(&matrix, &comparisons)),
        Format::Html => print!("{}", page(e, &matrix, &comparisons)),
        Format::HdrLog => bail!("--format hdr-log is for `barrage report`"),
    }
    // The pictures go beside the tables, and wherever --html says.
    let html = page(e, &matrix, &comparisons);
    std::fs::write(dir.join("report.html"), &html)?;
    if let Some(path) = &a.html {
        std::fs::write(path, &html).with_context(|| format!("--html {}", path.display()))?;
    }
    super::export::export(&[matrix, comparisons], a.xlsx.as_deref(), None)?;
    let slos: Vec<SloResult> = rows.iter().flat_map(|r| r.slos.iter().cloned()).collect();
    if slos.is_empty() {
        return Ok(Outcome::Ok);
    }
    let lines = barrage_report::slo_lines(&slos);
    if a.format == Format::Text {
        print!("\n{lines}");
    } else {
        eprint!("{lines}");
    }
    if let Some(path) = &a.junit {
        std::fs::write(path, barrage_report::junit(&format!("barrage experiment {}", e.name), &slos, 0.0))
            .with_context(|| format!("--junit {}", path.display()))?;
    }
    Ok(if slos.iter().all(|r| r.pass) { Outcome::Ok } else { Outcome::Failed })
}

fn page(e: &Experiment, matrix: &Sheet, comparisons: &Sheet) -> String {
    barrage_report::html(&barrage_report::Page::Experiment { title: &e.name, matrix, comparisons })
}

fn json(matrix: &Sheet, comparisons: &Sheet) -> String {
    let rows = |s: &Sheet| -> Vec<serde_json::Value> {
        s.rows
            .iter()
            .map(|r| {
                let obj: serde_json::Map<String, serde_json::Value> = s
                    .header
                    .iter()
                    .zip(r)
                    .map(|(h, c)| {
                        let v = match c {
                            Cell::Text(t) => serde_json::Value::from(t.clone()),
                            Cell::Number(n) => serde_json::Value::from(*n),
                            Cell::Empty => serde_json::Value::Null,
                        };
                        (h.clone(), v)
                    })
                    .collect();
                serde_json::Value::Object(obj)
            })
            .collect()
    };
    serde_json::json!({ "matrix": rows(matrix), "comparisons": rows(comparisons) }).to_string()
}
