//! Scenario files: flows of steps (requests with captures and checks), CSV feeders, and
//! the groups that run the flows, read into a [`Scenario`] and the [`Target`] of each step.
//!
//! ```toml
//! name = "album study"            # default: the file's stem
//!
//! [vars]                          # constants for {{name}}; --var NAME=VALUE overrides
//! host = "127.0.0.1:8080"
//!
//! [feeder.users]
//! file = "users.csv"              # beside the scenario file; its header row names columns
//! order = "sequential"            # or "random", "per-worker"
//! on-end = "recycle"              # or "stop"
//!
//! [flow.album]
//! feeder = "users"
//! repeat = { first = "get-album", last = "get-album", times = 3 }
//!
//! [[flow.album.step]]
//! name = "post-album"
//! method = "POST"
//! url = "http://{{host}}/albums"
//! form.profile = { json = { user = "{{row.user}}" } }
//! form.image = { file = "img/cat.jpg", type = "image/jpeg" }
//! capture.albumID = { json-path = "$.albumID", public = true }   # shown in outputs; else secret
//! check.status = [200, 201]
//! think = "100ms..300ms"
//!
//! [[flow.album.step]]
//! name = "get-album"
//! url = "http://{{host}}/albums/{{albumID}}"
//! check.json = [{ path = "$.user", equals = "{{row.user}}" }]
//!
//! [group.writers]                 # without groups, the only flow runs under the run's load
//! flow = "album"
//! concurrency = 10                # or rate = 50 (flows started per second)
//! ramp = "5s"
//! start = "0s"
//! duration = "30s"               # at most; with iterations = 100, each worker stops
//!                                 # after its 100th flow
//! ```
//!
//! Everything is checked as the file is read, and each error names the file, the line and
//! the key: every `{{name}}` resolves to a constant (filled in at once), a feeder column, a
//! built-in, or a value an earlier step captures; JSONPaths are parsed and regexes
//! compiled. The scheme, host and port of a step's URL are fixed then, so the engine knows
//! where each step connects; only the path, headers and body may vary per flow.
//!
//! Reading goes in the file's order, a module for each part: the file as written (`raw`),
//! errors in its terms (`document`), constants and what `{{name}}` reads (`scope`), feeders,
//! each flow's steps (`step`), then the groups.

mod document;
mod feeder;
mod group;
mod raw;
mod scope;
mod step;

use crate::flow::Scenario;
use crate::limits::{MAX_EXPERIMENT_FILE, MAX_FLOWS};
use crate::plan::{Load, Target};
use crate::Pacer;
use document::Doc;
use feeder::feeder;
use group::groups;
use raw::RawFile;
use scope::{constants, unused_vars};
use std::fmt;
use std::path::Path;
use std::time::Duration;
use step::{flow, Targets};

/// A scenario file (or a file it names) that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    /// The file: the scenario, or a feeder's CSV.
    pub file: String,
    /// 1-based line; 0 when the error is about the whole file.
    pub line: usize,
    /// The key, what is wrong and what would be valid.
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            0 => write!(f, "{}: {}", self.file, self.message),
            line => write!(f, "{}:{line}: {}", self.file, self.message),
        }
    }
}

impl std::error::Error for ScenarioError {}

impl ScenarioError {
    /// An error on one line, whatever the text it quotes holds (a TOML string may hold a
    /// line break).
    fn new(file: &str, line: usize, message: &str) -> Self {
        let message = message.replace('\n', "\\n").replace('\r', "\\r");
        ScenarioError { file: file.into(), line, message }
    }
}

type Res<T> = Result<T, ScenarioError>;

/// Reads a scenario file: `vars` are `--var NAME=VALUE` (over the file's `[vars]`), and
/// `default_load` the run's load flags, for a scenario without groups. Returns the
/// scenario and the targets of its steps, one per step in flow and step order.
pub fn read(path: &Path, vars: &[(String, String)], default_load: &Load) -> Res<(Scenario, Vec<Target>)> {
    let file = path.display().to_string();
    let whole = |message: String| ScenarioError::new(&file, 0, &message);
    let bytes = barrage_metrics::limits::read_capped(path, MAX_EXPERIMENT_FILE).map_err(|e| match e.kind() {
        std::io::ErrorKind::FileTooLarge => whole(e.to_string()),
        _ => whole(format!("cannot read: {e}")),
    })?;
    let text = String::from_utf8(bytes).map_err(|_| whole("not UTF-8 text".into()))?;
    let base = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    parse(&text, &file, base, vars, default_load)
}

/// Parses the text of a scenario file named `file`, whose relative paths (feeders, body
/// files, form files) are from `base_dir`; otherwise as [`read`].
pub fn parse(
    text: &str,
    file: &str,
    base_dir: &Path,
    vars: &[(String, String)],
    default_load: &Load,
) -> Res<(Scenario, Vec<Target>)> {
    let doc = Doc { file, text, base: base_dir };
    let raw: RawFile = toml::from_str(text).map_err(|e| doc.serde_error(&e))?;
    let given = vars;
    let vars = constants(&doc, &raw.vars, given)?;
    unused_vars(&doc, &raw.vars, given)?;
    let feeders = raw.feeder.iter().map(|(name, f)| feeder(&doc, name, f)).collect::<Res<Vec<_>>>()?;
    if raw.flow.is_empty() {
        return Err(doc.whole("no flows: a scenario needs a [[flow.NAME.step]] table with at least a name and a url"));
    }
    if let Some((name, f)) = raw.flow.get_index(MAX_FLOWS) {
        return Err(doc.fail(f.span(), &format!("flow.{name}"), format!("more than {MAX_FLOWS} flows, the limit")));
    }
    let mut out = Targets { targets: Vec::new(), bodies: 0 };
    let mut flows = Vec::new();
    for (name, f) in &raw.flow {
        flows.push(flow(&doc, name, f, &vars, &feeders, &mut out)?);
    }
    let groups = groups(&doc, &raw, &flows, default_load)?;
    let stem = Path::new(file).file_stem().map_or_else(|| "scenario".into(), |s| s.to_string_lossy().into_owned());
    Ok((Scenario::new(raw.name.unwrap_or(stem), flows, feeders, groups), out.targets))
}

/// What the groups add up to, for the run's header and its thread count: open loop at the
/// sum of the groups' rates (each at its peak) and of their in-flight bounds when every
/// group is open loop, else closed loop with the sum of their workers (an open group
/// counting its in-flight bound).
pub fn overall_load(s: &Scenario) -> Load {
    let open: Option<Vec<(f64, usize)>> = s
        .groups
        .iter()
        .map(|g| match &g.load {
            Load::Open { pacer, max_in_flight } => Some((peak_rate(pacer), *max_in_flight)),
            Load::Closed { .. } => None,
        })
        .collect();
    match open {
        Some(open) => Load::Open {
            pacer: Pacer::Constant { rate: open.iter().map(|(r, _)| r).sum() },
            max_in_flight: open.iter().map(|(_, m)| m).sum(),
        },
        None => Load::Closed {
            concurrency: s
                .groups
                .iter()
                .map(|g| match &g.load {
                    Load::Open { max_in_flight, .. } => *max_in_flight,
                    Load::Closed { concurrency, .. } => *concurrency,
                })
                .sum(),
            think_time: Duration::ZERO,
        },
    }
}

fn peak_rate(p: &Pacer) -> f64 {
    match p {
        Pacer::Constant { rate } => *rate,
        Pacer::Ramp { from, to, .. } => from.max(*to),
        Pacer::Steps { rates, .. } => rates.iter().copied().fold(0.0, f64::max),
    }
}

/// The most flows a group's worker may be asked to run (`iterations`).
pub const MAX_ITERATIONS: u64 = 1_000_000_000;

/// When the last group ends (its start plus its duration); `None` when a group runs to
/// the end of the run (or until its workers ran their `iterations`).
pub fn span(s: &Scenario) -> Option<Duration> {
    s.groups.iter().map(|g| g.duration.map(|d| g.start + d)).collect::<Option<Vec<_>>>()?.into_iter().max()
}

/// Whether every group ends by itself (a duration, or its workers' `iterations`): the run
/// then lasts until the last one ends, with no default duration.
pub fn ends_by_itself(s: &Scenario) -> bool {
    s.groups.iter().all(|g| g.duration.is_some() || g.iterations.is_some())
}

/// What the tests of the parts share: the album scenario and the files it names.
#[cfg(test)]
mod testing {
    use super::*;

    pub(super) const IMAGE: &[u8] = b"\xff\xd8\x00{{row.user}}\r\n--not-a-boundary\r\n\x01\xfe";

    /// A folder with the files the album scenario names.
    pub(super) fn fixtures() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("users.csv"), "user,caption\nann,first\nbob,\"say \"\"hi\"\"\"\n").unwrap();
        std::fs::create_dir(dir.path().join("img")).unwrap();
        std::fs::write(dir.path().join("img/cat.jpg"), IMAGE).unwrap();
        dir
    }

    pub(super) fn closed(concurrency: usize) -> Load {
        Load::Closed { concurrency, think_time: Duration::ZERO }
    }

    pub(super) fn parse_in(dir: &Path, text: &str) -> Res<(Scenario, Vec<Target>)> {
        parse(text, "s.toml", dir, &[], &closed(4))
    }

    pub(super) const ALBUM: &str = r#"name = "album study"

[vars]
host = "127.0.0.1:8080"

[feeder.users]
file = "users.csv"

[flow.album]
feeder = "users"

[[flow.album.step]]
name = "post-album"
method = "POST"
url = "http://{{host}}/albums"
headers = { "X-User" = "{{row.user}}", "X-Client" = "barrage" }
form.profile = { json = { user = "{{row.user}}", caption = "{{row.caption}}", n = 3 } }
form.image = { file = "img/cat.jpg", type = "image/jpeg" }
capture.albumID = { json-path = "$.albumID" }
capture.size = { json-pointer = "/imageSize" }
check.status = [200, 201]
think = "100ms..300ms"

[[flow.album.step]]
name = "get-album"
url = "http://{{host}}/albums/{{albumID}}?v={{seq}}"
check.status = 200
check.json = [
  { path = "$.user", equals = "{{row.user}}" },
  { pointer = "/n", matches = "^[0-9]+$" },
]
check.body-contains = "{{albumID}}"
check.header = { name = "Content-Type", matches = "json" }
capture.etag = { header = "ETag" }

[group.writers]
flow = "album"
concurrency = 10
ramp = "5s"
think-time = "1s"

[group.readers]
rate = 50
max-in-flight = 200
start = "20s"
duration = "30s"
"#;
}

#[cfg(test)]
mod tests {
    use super::testing::{closed, fixtures, parse_in, ALBUM};
    use super::*;
    use crate::flow::{Check, Source, CHECK_KINDS};
    use crate::limits::{MAX_FLOW_STEPS, MAX_GROUPS, MAX_TARGETS_FILE};
    use std::path::PathBuf;

    #[test]
    fn the_album_file_parses_into_its_steps_captures_checks_and_groups() {
        let dir = fixtures();
        let (s, targets) = parse_in(dir.path(), ALBUM).unwrap();
        assert_eq!(s.name, "album study");
        let flow = &s.flows[0];
        let names: Vec<&str> = flow.steps.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            (names, &flow.order[..], flow.feeder, flow.slots),
            (vec!["post-album", "get-album"], &[0, 1][..], Some(0), 3)
        );
        // One target per step, named after it; the constant parts on the target.
        assert_eq!(targets.len(), 2);
        let (post, get) = (&targets[0], &targets[1]);
        assert_eq!(
            (post.method.as_str(), post.url.to_string().as_str(), post.name.as_deref()),
            ("POST", "http://127.0.0.1:8080/albums", Some("post-album"))
        );
        assert_eq!(post.headers["x-client"], "barrage");
        assert!(post.headers.get("x-user").is_none(), "a header variables fill is the step's, not the target's");
        assert!(post.headers["content-type"].to_str().unwrap().starts_with("multipart/form-data; boundary="));
        assert!(post.body.is_empty() && flow.steps[0].body.is_some());
        assert_eq!(flow.steps[0].headers[0].0.as_str(), "x-user");
        assert!(flow.steps[0].path.is_none(), "a constant path stays on the target");
        assert_eq!((get.method.as_str(), get.url.to_string().as_str()), ("GET", "http://127.0.0.1:8080/albums/0?v=0"));
        assert_eq!(flow.steps[1].target, 1);
        // Captures: slots per name, in the order first captured.
        let caps: Vec<(&str, usize)> =
            flow.steps.iter().flat_map(|s| &s.captures).map(|c| (c.name.as_str(), c.slot)).collect();
        assert_eq!(caps, [("albumID", 0), ("size", 1), ("etag", 2)]);
        assert!(matches!(&flow.steps[0].captures[0].source, Source::Json(at) if at.to_string() == "$.albumID"));
        assert!(matches!(&flow.steps[0].captures[1].source, Source::Json(at) if at.to_string() == "/imageSize"));
        assert!(matches!(&flow.steps[1].captures[0].source, Source::Header(h) if h == "etag"));
        let kinds = |i: usize| flow.steps[i].checks.iter().map(|c| CHECK_KINDS[c.kind()]).collect::<Vec<_>>();
        assert_eq!((kinds(0), kinds(1)), (vec!["status"], vec!["status", "json", "json", "body", "header"]));
        assert!(matches!(&flow.steps[1].checks[0], Check::Status(c) if c == &[200]));
        assert_eq!(flow.steps[0].think, Some((Duration::from_millis(100), Duration::from_millis(300))));
        assert_eq!(flow.steps[1].think, None);
        // Groups: their own loads, starts and durations.
        let g = &s.groups;
        assert_eq!(
            (g[0].name.as_str(), g[0].flow, &g[0].load, g[0].ramp),
            (
                "writers",
                0,
                &Load::Closed { concurrency: 10, think_time: Duration::from_secs(1) },
                Duration::from_secs(5)
            )
        );
        assert_eq!((g[0].start, g[0].duration), (Duration::ZERO, None));
        assert_eq!(g[1].load, Load::Open { pacer: Pacer::Constant { rate: 50.0 }, max_in_flight: 200 });
        assert_eq!((g[1].start, g[1].duration), (Duration::from_secs(20), Some(Duration::from_secs(30))));
        assert_eq!(overall_load(&s), closed(210), "an open group counts its in-flight bound among workers");
        assert_eq!(span(&s), None, "writers run to the end of the run");
        // Variables fill from a flow's state: the feeder's first row, a capture, the counter.
        let mut st = s.start_flow(0, 0, 0, 1).unwrap();
        st.captures[0] = Some("a-1".into());
        assert_eq!(flow.steps[1].path.as_ref().unwrap().fill_string(&mut st), "/albums/a-1?v=0");
        assert_eq!(flow.steps[0].headers[0].1.fill_string(&mut st), "ann");
    }

    /// The album flow's two steps, small, for the table of errors.
    const BASE: &str = "[vars]\nhost = \"h:1\"\n\n[flow.album]\n\n[[flow.album.step]]\nname = \"post\"\nurl = \"http://{{host}}/x\"\ncapture.albumID = { json-path = \"$.id\" }\n\n[[flow.album.step]]\nname = \"get\"\nurl = \"http://{{host}}/x/{{albumID}}\"\n";

    #[test]
    fn errors_name_the_file_the_line_and_the_key() {
        assert!(parse_in(Path::new("."), BASE).is_ok());
        let r = |from: &str, to: &str| BASE.replace(from, to);
        let with = |more: &str| format!("{BASE}{more}");
        let table = [
            (with("bogus = 1\n"), "s.toml:14: unknown field `bogus`, expected one of `name`, `method`, `url`"),
            (r("{{albumID}}\"", "{{albumId}}\""), "s.toml:13: url: '{{albumId}}' is not captured before step get (did you mean albumID?)"),
            (r("{{albumID}}\"", "{{zzz}}\""), "s.toml:13: url: '{{zzz}}' is not captured before step get, nor is it a [vars] name or a built-in (known here: albumID, host, flow.iteration"),
            (r("/x\"\ncapture", "/x/{{albumID}}\"\ncapture"), "s.toml:8: url: '{{albumID}}' is not captured before step post: a step's captures are for the steps after it"),
            (r("http://{{host}}/x/", "http://{{albumID}}/x/"), "s.toml:13: url: '{{albumID}}' is read at run time, but the scheme, host and port must be known"),
            (r("$.id", "$.["), "s.toml:9: capture.albumID: invalid JSONPath '$.[': "),
            (r("json-path = \"$.id\"", "regex = 'id=('"), "s.toml:9: capture.albumID: invalid regex 'id=(': unclosed group"),
            (r("json-path = \"$.id\"", "json-path = \"$.id\", status = true"), "s.toml:9: capture.albumID: a capture reads one of json-path"),
            (r("json-path = \"$.id\"", "json-pointer = \"id\""), "s.toml:9: capture.albumID: invalid JSON Pointer 'id': it starts with '/'"),
            (r("capture.albumID", "capture.host"), "s.toml:9: capture.host: 'host' is a [vars] name too"),
            (with("check.json = [{ path = \"$.a\", matches = \"(\" }]\n"), "s.toml:14: check.json: invalid regex '(': unclosed group"),
            (with("check.json = [\n  { path = \"$.a\", present = true },\n  { path = \"$.a\" },\n]\n"), "s.toml:16: check.json: a check expects one of equals"),
            (with("check.header = { name = \"ETag\", present = false }\n"), "s.toml:14: check.header: present = false: write present = true"),
            (with("check.status = [200, 700]\n"), "s.toml:14: check.status: 700 is not a status code"),
            (with("check.status = \"200\"\n"), "s.toml:14: check.status: invalid type: string \"200\", expected one value or a list of them"),
            (with("think = \"3s..1s\"\n"), "s.toml:14: think: '3s..1s' ends before it starts"),
            (with("think = \"soon\"\n"), "s.toml:14: think: invalid duration 'soon'"),
            (with("body = \"a\"\njson = { a = 1 }\n"), "s.toml:15: json: body and json given together: a step has at most one of body, body-file, json and form"),
            (with("body-file = \"nope.bin\"\n"), "s.toml:14: body-file: cannot read ./nope.bin"),
            (with("form.f = { text = \"a\" }\nheaders = { Content-Type = \"x\" }\n"), "s.toml:15: headers.Content-Type: a form sets its own Content-Type"),
            (with("form.f = { text = \"a\", file = \"b\" }\n"), "s.toml:14: form.f: a part is one of json = "),
            (with("headers = { \"X A\" = \"1\" }\n"), "s.toml:14: headers.X A: 'X A' is not a header name"),
            (with("method = \"G T\"\n"), "s.toml:14: method: 'G T' is not a method"),
            (with("body = \"{{random:0}}\"\n"), "s.toml:14: body: '{{random:0}}': N of {{random:N}} is a whole number from 1"),
            (with("body = \"{{row.user}}\"\n"), "s.toml:14: body: '{{row.user}}': flow album has no feeder"),
            (r("name = \"get\"", "name = \"post\""), "s.toml:12: name: a second step named post in flow album"),
            (r("name = \"get\"", "name = \"get/1\""), "s.toml:12: name: 'get/1' is not a name"),
            (r("/x/{{albumID}}", "/x/{id}"), "s.toml:13: url: '{id}' in 'http://h:1/x/{id}' is `run`'s URL template"),
            (r("http://{{host}}/x\"", "ftp://{{host}}/x\""), "s.toml:8: url: invalid URL 'ftp://h:1/x': the scheme must be http or https"),
            (r("[flow.album]\n", "[flow.album]\nfeeder = \"users\"\n"), "s.toml:5: feeder: no [feeder.users] (there are none)"),
            (r("[flow.album]\n", "[flow.album]\nrepeat = { first = \"gett\", last = \"get\", times = 2 }\n"), "s.toml:5: repeat.first: no step gett in flow album (did you mean get?)"),
            (with("[group.g]\nflow = \"albums\"\n"), "s.toml:15: group.g.flow: no flow albums (did you mean album?)"),
            (with("[[flow.other.step]]\nname = \"x\"\nurl = \"http://h:1/\"\n"), "s.toml:14: flow.other: several flows and no [group.NAME]"),
            (with("[[flow.other.step]]\nname = \"x\"\nurl = \"http://h:1/\"\n[group.g]\nrate = 5\n"), "s.toml:17: group.g: several flows: say which this group runs with flow = \"NAME\" (album, other)"),
            (with("[group.g]\nrate = 5\nconcurrency = 2\n"), "s.toml:16: group.g.concurrency: concurrency and rate given together"),
            (with("[group.g]\nrate = 5\nramp = \"1s\"\n"), "s.toml:16: group.g.ramp: ramp starts workers over time"),
            (with("[group.g]\nrate = 5\nthink-time = \"1s\"\n"), "s.toml:16: group.g.think-time: is for closed loop"),
            (with("[group.g]\nconcurrency = 5\nmax-in-flight = 9\n"), "s.toml:16: group.g.max-in-flight: is for open loop"),
            (with("[group.g]\nconcurrency = 0\n"), "s.toml:15: group.g.concurrency: 0: from 1 to 1000000"),
            (with("[group.g]\nrate = \"10:100\"\n"), "s.toml:15: group.g.rate: a ramp or steps of rates run over the group's duration"),
            (with("[group.g]\nrate = \"fast\"\n"), "s.toml:15: group.g.rate: invalid rate 'fast': expected"),
            (with("[group.g]\nrate = 5\nstart = \"later\"\n"), "s.toml:16: group.g.start: invalid duration 'later'"),
            (with("[group.g]\nrate = 5\nduraton = \"1s\"\n"), "s.toml:16: unknown field `duraton`, expected one of"),
            (r("host = \"h:1\"", "seq = \"1\""), "s.toml:2: vars.seq: 'seq' is a built-in name"),
            (r("host = \"h:1\"", "host = [1]"), "s.toml:2: vars.host: [1] is not text or a number"),
            (r("/x\"\ncapture", "/x\\n\"\ncapture"), "s.toml:8: url: invalid URL 'http://h:1/x\\n': not a URL"),
            (r("url = \"http://{{host}}/x\"", "url = 3"), "s.toml:8: url: invalid type: integer `3`, expected a string"),
            (r("name = \"get\"\n", ""), "s.toml:11: flow.album.step: missing field `name`"),
            ("[vars]\n".into(), "s.toml: no flows"),
            ("[flow.a]\n".into(), "s.toml:1: flow.a: no steps"),
        ];
        for (text, want) in table {
            let e = parse_in(Path::new("."), &text).unwrap_err().to_string();
            assert!(e.starts_with(want) && !e.contains('\n'), "{text}\nwant: {want}\ngot:  {e}");
        }
    }

    #[test]
    fn read_takes_files_beside_the_scenario_and_bounds_its_size() {
        let dir = fixtures();
        let path: PathBuf = dir.path().join("album.toml");
        std::fs::write(&path, ALBUM.replace("name = \"album study\"\n", "")).unwrap();
        let (s, targets) = read(&path, &[], &closed(1)).unwrap();
        assert_eq!((s.name.as_str(), targets.len(), s.feeders[0].rows.len()), ("album", 2, 2));
        let e = read(Path::new("/dev/zero"), &[], &closed(1)).unwrap_err();
        assert_eq!(e.to_string(), "/dev/zero: over the 16 MiB limit");
        let e = read(&dir.path().join("none.toml"), &[], &closed(1)).unwrap_err();
        assert!(e.to_string().contains("none.toml: cannot read: "), "{e}");
    }

    #[test]
    fn flows_steps_and_groups_are_bounded() {
        let step = |f: &str, i: usize| format!("[[flow.{f}.step]]\nname = \"s{i}\"\nurl = \"http://h:1/\"\n");
        let steps: String = (0..=MAX_FLOW_STEPS).map(|i| step("a", i)).collect();
        let e = parse_in(Path::new("."), &steps).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("s.toml:{}: flow.a.step: more than 1000 steps, the limit of a flow", 3 * MAX_FLOW_STEPS + 1)
        );
        let flows: String = (0..=MAX_FLOWS).map(|i| step(&format!("f{i}"), 0)).collect();
        let e = parse_in(Path::new("."), &flows).unwrap_err();
        assert_eq!(e.to_string(), format!("s.toml:{}: flow.f64: more than 64 flows, the limit", 3 * MAX_FLOWS + 1));
        let groups: String = (0..=MAX_GROUPS).map(|i| format!("[group.g{i}]\nrate = 1\n")).collect();
        let e = parse_in(Path::new("."), &format!("{}{groups}", step("a", 0))).unwrap_err();
        assert_eq!(e.to_string(), format!("s.toml:{}: group.g64: more than 64 groups, the limit", 4 + 2 * MAX_GROUPS));
        // A feeder file over the limit is refused from its size, unread.
        let dir = tempfile::tempdir().unwrap();
        std::fs::File::create(dir.path().join("big.csv")).unwrap().set_len(MAX_TARGETS_FILE + 1).unwrap();
        let e = parse_in(dir.path(), &format!("[feeder.big]\nfile = \"big.csv\"\n{}", step("a", 0))).unwrap_err();
        assert!(
            e.to_string().starts_with("s.toml:2: file: ") && e.to_string().ends_with("big.csv: over the 256 MiB limit"),
            "{e}"
        );
    }

    proptest::proptest! {
        /// Whatever a file holds, reading it ends in a scenario or a one-line error, never a
        /// panic: the album file with a piece cut out and other text put in.
        #[test]
        fn a_damaged_file_never_panics(cut in 0usize..2000, len in 0usize..40, insert in "[{}\\[\\]=\"'./:?a-zé€ \n0-9$]{0,12}") {
            let dir = fixtures();
            let mut text = ALBUM.to_string();
            let at = text.char_indices().map(|(i, _)| i).nth(cut % ALBUM.chars().count()).unwrap_or(0);
            let end = text[at..].char_indices().map(|(i, _)| at + i).nth(len).unwrap_or(text.len());
            text.replace_range(at..end, &insert);
            if let Err(e) = parse_in(dir.path(), &text) {
                proptest::prop_assert!(!e.to_string().contains('\n'), "{}", e);
            }
        }
    }
}
