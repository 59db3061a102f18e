//! Secrets in request headers and URLs never reach an output: every file, report, stream
//! and error message of a run, a report, a comparison, a sweep, a capacity search, an
//! experiment and the live endpoint, while the origin shows the credentials did go out.

use crate::live::scrape;
use crate::util::{barrage, refused_url, require, CaptureServer, RawServer};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// What every secret below starts with; no output may hold it.
const MARK: &str = "S3CRET";

/// The credentials of the test as `run` flags, and the URL (with a password and a token).
fn secret_flags(addr: &str) -> Vec<String> {
    [
        "-H",
        "Authorization: Bearer S3CRET-A",
        "-H",
        "X-Api-Key: S3CRET-B",
        "-H",
        "Cookie: sid=S3CRET-C",
        &format!("http://user:S3CRET-D@{addr}/path?token=S3CRET-E&x=1"),
    ]
    .map(String::from)
    .to_vec()
}

/// barrage with a known umask, so file modes are exact.
fn cmd() -> Command {
    let mut c = barrage();
    // SAFETY: umask is async-signal-safe and touches only the child.
    unsafe {
        c.pre_exec(|| {
            libc::umask(0o022);
            Ok(())
        });
    }
    c
}

/// Runs `c`, keeping its stdout and stderr under `out` as NAME.stdout / NAME.stderr.
fn keep(out: &Path, name: &str, c: &mut Command) -> Output {
    let o = c.output().unwrap();
    std::fs::write(out.join(format!("{name}.stdout")), &o.stdout).unwrap();
    std::fs::write(out.join(format!("{name}.stderr")), &o.stderr).unwrap();
    o
}

fn ok(o: &Output) {
    assert!(o.status.success(), "{:?}: {}", o.status, String::from_utf8_lossy(&o.stderr));
}

/// Every file under `dir`, recursively.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files(&p));
        } else {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// The text of a file as a reader of it would find secrets in it: a workbook's XML
/// unzipped, anything else as bytes.
fn readable(p: &Path) -> Vec<u8> {
    if p.extension().is_some_and(|e| e == "xlsx") {
        let o = Command::new("unzip").arg("-p").arg(p).output().unwrap();
        assert!(o.status.success() && !o.stdout.is_empty(), "unzip {}", p.display());
        return o.stdout;
    }
    std::fs::read(p).unwrap()
}

/// The files under `dir` holding `what`.
fn holding(dir: &Path, what: &str) -> Vec<String> {
    files(dir)
        .into_iter()
        .filter(|p| String::from_utf8_lossy(&readable(p)).contains(what))
        .map(|p| p.strip_prefix(dir).unwrap().display().to_string())
        .collect()
}

/// The requests the origin received since the last call: each must carry every credential
/// as given (the Bearer token, the API key, the cookie, the query token); the URL's
/// password never goes out (an Authorization header given takes the place of the URL's
/// user info, as in curl).
fn authorized(server: &CaptureServer) -> usize {
    let requests: Vec<String> = server.requests.try_iter().map(|r| String::from_utf8_lossy(&r).into_owned()).collect();
    for r in &requests {
        let lower = r.to_ascii_lowercase();
        assert!(r.starts_with("GET /path?token=S3CRET-E&x=1 HTTP/1.1\r\n"), "{r}");
        for header in ["authorization: bearer s3cret-a\r\n", "x-api-key: s3cret-b\r\n", "cookie: sid=s3cret-c\r\n"] {
            assert!(lower.contains(header), "{header} not sent: {r}");
        }
        assert!(!r.contains("S3CRET-D"), "{r}");
    }
    requests.len()
}

/// `barrage ARGS --metrics-addr 127.0.0.1:0` with stdout to `out/NAME.stdout`: the
/// endpoint is scraped once a closed interval is on it, into `out/NAME.metrics`.
fn run_scraped(out: &Path, name: &str, args: &[String]) -> Output {
    let mut child = cmd()
        .args(args)
        .args(["--metrics-addr", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut b = Vec::new();
        stdout.read_to_end(&mut b).unwrap();
        b
    });
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    stderr.read_line(&mut first).unwrap();
    let addr = first.trim().strip_prefix("metrics on http://").and_then(|l| l.strip_suffix("/metrics"));
    let addr = addr.unwrap_or_else(|| panic!("{first}")).to_string();
    let rest = std::thread::spawn(move || {
        let mut b = Vec::new();
        stderr.read_to_end(&mut b).unwrap();
        b
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    let body = loop {
        let (_, body) = scrape(&addr);
        let sent = body.lines().find_map(|l| l.strip_prefix("barrage_requests_sent_total "));
        if sent.is_some_and(|n| n.trim() != "0") || Instant::now() > deadline {
            break body;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    std::fs::write(out.join(format!("{name}.metrics")), body).unwrap();
    let status = child.wait().unwrap();
    let o =
        Output { status, stdout: reader.join().unwrap(), stderr: [first.into_bytes(), rest.join().unwrap()].concat() };
    std::fs::write(out.join(format!("{name}.stdout")), &o.stdout).unwrap();
    std::fs::write(out.join(format!("{name}.stderr")), &o.stderr).unwrap();
    o
}

/// Writes `text`, its `ADDR` the server's address, to `dir/name`.
fn at_server(dir: &Path, name: &str, text: &str, addr: std::net::SocketAddr) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text.replace("ADDR", &addr.to_string())).unwrap();
    path
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

#[test]
fn no_output_of_any_command_holds_a_secret_and_the_origin_got_every_credential() {
    if !require("unzip", Command::new("unzip").arg("-v").output().is_ok()) {
        return;
    }
    let server = CaptureServer::start();
    let addr = server.addr.to_string();
    let secrets = secret_flags(&addr);
    let tmp = tempfile::tempdir().unwrap();
    let (input, out) = (tmp.path().join("in"), tmp.path().join("out"));
    std::fs::create_dir_all(&input).unwrap();
    std::fs::create_dir_all(&out).unwrap();
    let o = |n: &str| out.join(n).display().to_string();

    // A run writing every output there is, scraped live.
    let mut run: Vec<String> =
        ["run", "--rate", "20", "-d", "3s", "--format", "json", "--slo", "p99<10s"].map(String::from).to_vec();
    for (flag, file) in [
        ("-o", "run.brg"),
        ("--html", "run.html"),
        ("--xlsx", "run.xlsx"),
        ("--csv-dir", "csv"),
        ("--junit", "junit.xml"),
        ("--log", "requests.csv"),
        ("--hdr-log", "run.hdr"),
        ("--history", "history.db"),
    ] {
        run.extend([flag.to_string(), o(file)]);
    }
    // An --at command quoting credentials, and printing them: recorded as an event.
    let at = "echo 'Cookie: sid=S3CRET-C' http://u:S3CRET-D@127.0.0.1:1/?token=S3CRET-E";
    run.extend(["--at", "0s", at].map(String::from));
    run.extend(secrets.iter().cloned());
    let r = run_scraped(&out, "run", &run);
    ok(&r);
    let json: Value = serde_json::from_slice(&r.stdout).unwrap();
    let sent = json["requests"]["ok"].as_u64().unwrap();
    assert!(sent >= 50, "{json}");
    assert_eq!(authorized(&server) as u64, sent, "the origin saw every request, credentials and all");
    // A JSON-lines log too, and the report and comparison of the results file.
    let mut jsonl = secrets.clone();
    jsonl.splice(0..0, ["run", "-n", "3", "-c", "1", "--log", &o("requests.jsonl")].map(String::from));
    ok(&keep(&out, "jsonl", cmd().args(&jsonl)));
    for format in ["text", "json", "csv", "html"] {
        ok(&keep(&out, &format!("report-{format}"), cmd().args(["report", "--format", format, &o("run.brg")])));
    }
    ok(&keep(&out, "compare", cmd().args(["compare", &o("run.brg"), &o("run.brg"), "--xlsx", &o("compare.xlsx")])));

    // A sweep, a capacity search, an experiment (listed, then run).
    let mut sweep: Vec<String> = ["sweep", "-c", "1,2", "--step", "1s", "--format", "json"].map(String::from).to_vec();
    sweep.extend(["-o", &o("sweep"), "--xlsx", &o("sweep.xlsx"), "--html", &o("sweep.html")].map(String::from));
    sweep.extend(["--log", &o("sweep.jsonl")].map(String::from));
    sweep.extend(secrets.iter().cloned());
    ok(&keep(&out, "sweep", cmd().args(&sweep)));
    let mut capacity: Vec<String> =
        ["capacity", "--start-rate", "10", "--max-rate", "20", "--step", "1s", "--precision", "50%"]
            .map(String::from)
            .to_vec();
    capacity
        .extend(["--slo", "p99<10s", "--html", &o("capacity.html"), "--xlsx", &o("capacity.xlsx")].map(String::from));
    capacity.extend(secrets.iter().cloned());
    ok(&keep(&out, "capacity", cmd().args(&capacity)));
    let file = input.join("exp.toml");
    std::fs::write(
        &file,
        format!(
            "name = \"secrets\"\nduration = \"1s\"\n\n[base]\nheader = [\"Authorization: Bearer S3CRET-A\", \"X-Api-Key: S3CRET-B\", \"Cookie: sid=S3CRET-C\"]\nurl = \"http://user:S3CRET-D@{addr}/path?token=S3CRET-E&x=1\"\n\n[factors.load]\none = {{ concurrency = 1 }}\ntwo = {{ concurrency = 2 }}\n"
        ),
    )
    .unwrap();
    ok(&keep(&out, "experiment-dry-run", cmd().arg("experiment").arg(&file).arg("--dry-run")));
    let exp = ["--format", "json", "--slo", "p99<10s", "--junit", &o("exp-junit.xml"), "--xlsx", &o("exp.xlsx")];
    ok(&keep(&out, "experiment", cmd().arg("experiment").arg(&file).args(["-o", &o("exp")]).args(exp)));
    assert!(authorized(&server) > 0);

    // Failures: a refused origin (its error examples), a bad URL, a bad header value.
    let refused = refused_url().replace("http://", "http://user:S3CRET-D@") + "?token=S3CRET-E";
    let mut failed = secrets.clone();
    *failed.last_mut().unwrap() = refused;
    failed.splice(0..0, ["run", "-n", "2", "-c", "1", "--format", "json", "-o", &o("refused.brg")].map(String::from));
    assert_eq!(keep(&out, "refused", cmd().args(&failed)).status.code(), Some(3));
    let bad_url = keep(&out, "bad-url", cmd().args(["run", "-n", "1", "http://user:S3CRET-D@/?token=S3CRET-E"]));
    assert_eq!(bad_url.status.code(), Some(2));
    let bad_header =
        keep(&out, "bad-header", cmd().args(["run", "-n", "1", "-H", "X-Api-Key: S3CRET-B\u{1}", "http://a/"]));
    assert_eq!(bad_header.status.code(), Some(2));

    let leaks = holding(&out, MARK);
    eprintln!("outputs holding a secret: {} of {}: {leaks:?}", leaks.len(), files(&out).len());
    assert!(leaks.is_empty(), "secrets written to {leaks:?}");
    // What is said instead: the header name stays, its value does not.
    let text = std::fs::read_to_string(out.join("report-text.stdout")).unwrap();
    assert!(text.contains("http://user:<redacted>@") && text.contains("token=<redacted>&x=1"), "{text}");
    assert!(text.contains("echo 'Cookie: <redacted>' http://u:<redacted>@127.0.0.1:1/?token=<redacted>"), "{text}");
    let listing = std::fs::read_to_string(out.join("experiment-dry-run.stdout")).unwrap();
    assert!(listing.contains("'Authorization: Bearer <redacted>'"), "{listing}");
    assert!(listing.contains("'X-Api-Key: <redacted>'") && listing.contains("'Cookie: <redacted>'"), "{listing}");
    // Files that hold request data are the user's alone; reports are readable as usual.
    let private = ["run.brg", "requests.csv", "requests.jsonl", "refused.brg", "sweep/level-01-1workers.brg"];
    for p in private.iter().chain(&["exp/TC0.r1.brg", "sweep.level-02-2workers.jsonl"]) {
        assert_eq!(mode(&out.join(p)), 0o600, "{p}");
    }
    let shared = ["run.html", "run.xlsx", "junit.xml", "csv/summary.csv", "run.hdr", "sweep.xlsx", "capacity.html"];
    for p in shared.iter().chain(&["exp/experiment.json", "exp/report.html", "exp/summary.txt", "exp-junit.xml"]) {
        assert_eq!(mode(&out.join(p)), 0o644, "{p}");
    }
}

#[test]
fn no_redact_writes_the_secrets_and_says_so() {
    let server = CaptureServer::start();
    let tmp = tempfile::tempdir().unwrap();
    let (brg, html) = (tmp.path().join("run.brg"), tmp.path().join("run.html"));
    // A results file left readable by others before: it holds secrets now, so it is not.
    std::fs::write(&brg, b"old").unwrap();
    std::fs::set_permissions(&brg, std::fs::Permissions::from_mode(0o644)).unwrap();
    let mut args: Vec<String> =
        ["run", "-n", "3", "-c", "1", "--format", "json", "--no-redact"].map(String::from).to_vec();
    args.extend(["--redact-header".into(), "x-extra".into(), "-o".into(), brg.display().to_string()]);
    args.extend(["--html".into(), html.display().to_string()]);
    args.extend(secret_flags(&server.addr.to_string()));
    let o = cmd().args(&args).output().unwrap();
    ok(&o);
    assert_eq!(authorized(&server), 3);
    let json: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(json["unredacted"], true, "{json}");
    assert!(json["urls"][0].as_str().unwrap().contains("user:S3CRET-D@"), "{json}");
    assert!(json["urls"][0].as_str().unwrap().contains("token=S3CRET-E"), "{json}");
    let text = cmd().arg("report").arg(&brg).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("S3CRET-E") && text.contains("not redacted (--no-redact)"), "{text}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("not redacted (--no-redact)"), "the page says so too");
    assert_eq!((mode(&brg), mode(&html)), (0o600, 0o600), "both hold secrets");
    // The run history is kept beside every other run's: redacted whatever --no-redact says.
    let again = cmd().args(&args).arg("--history").arg(tmp.path().join("history.db")).output().unwrap();
    ok(&again);
    assert!(tmp.path().join("history.db").is_file(), "the run was kept");
    for f in std::fs::read_dir(tmp.path())
        .unwrap()
        .flatten()
        .filter(|f| f.file_name().to_string_lossy().starts_with("history"))
    {
        let bytes = std::fs::read(f.path()).unwrap();
        assert!(!bytes.windows(6).any(|w| w == b"S3CRET"), "{} holds a secret", f.path().display());
    }
    // Redacted, the same run says nothing of the kind.
    let plain =
        cmd().args(["run", "-n", "1", "--format", "json"]).arg(format!("http://{}/", server.addr)).output().unwrap();
    ok(&plain);
    let json: Value = serde_json::from_slice(&plain.stdout).unwrap();
    assert_eq!(json["unredacted"], false, "{json}");
}

#[test]
fn redact_header_adds_names_for_headers_and_query_parameters() {
    let server = CaptureServer::start();
    let tmp = tempfile::tempdir().unwrap();
    let brg = tmp.path().join("run.brg");
    let url = format!("http://{}/p?sig=S3CRET-S&page=2", server.addr);
    let o = cmd()
        .args([
            "run",
            "-n",
            "2",
            "-c",
            "1",
            "-H",
            "X-Custom: S3CRET-X",
            "--redact-header",
            "X-Custom",
            "--redact-header",
            "sig",
        ])
        .args(["--format", "json", "-o"])
        .arg(&brg)
        .arg(&url)
        .output()
        .unwrap();
    ok(&o);
    let requests: Vec<String> = server.requests.try_iter().map(|r| String::from_utf8_lossy(&r).into_owned()).collect();
    assert_eq!(requests.len(), 2);
    assert!(requests.iter().all(|r| r.contains("sig=S3CRET-S") && r.contains("S3CRET-X")), "{requests:?}");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(!stdout.contains(MARK) && stdout.contains("sig=<redacted>&page=2"), "{stdout}");
    assert!(!String::from_utf8_lossy(&readable(&brg)).contains(MARK));
}

#[test]
fn a_url_password_authenticates_by_basic_and_is_never_written() {
    // As curl and Go's net/http: user info becomes `Authorization: Basic`, percent-decoded,
    // and stays out of the Host header.
    let server = CaptureServer::start();
    let tmp = tempfile::tempdir().unwrap();
    let brg = tmp.path().join("run.brg");
    let url = format!("http://al%40ice:S3CRET-P%3Aw@{}/p", server.addr);
    let o = cmd().args(["run", "-n", "2", "-c", "1", "--format", "json", "-o"]).arg(&brg).arg(&url).output().unwrap();
    ok(&o);
    let basic = "YWxAaWNlOlMzQ1JFVC1QOnc="; // base64 of `al@ice:S3CRET-P:w`
    let requests: Vec<String> = server.requests.try_iter().map(|r| String::from_utf8_lossy(&r).into_owned()).collect();
    assert_eq!(requests.len(), 2);
    for r in &requests {
        assert!(r.contains(&format!("authorization: Basic {basic}\r\n")), "{r}");
        assert!(r.contains(&format!("host: {}\r\n", server.addr)), "{r}");
    }
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(!stdout.contains(MARK) && !stdout.contains(basic) && stdout.contains("al%40ice:<redacted>@"), "{stdout}");
    let file = String::from_utf8_lossy(&readable(&brg)).into_owned();
    assert!(!file.contains(MARK) && !file.contains(basic));
}

#[test]
fn a_header_barrage_cannot_parse_is_never_echoed() {
    // A header without its colon is a credential typed with a space instead: the value is
    // not shown, neither by clap's "invalid value" nor by the reason, nor in an experiment's
    // or a target file's error; the flag or the file and line say where.
    let tmp = tempfile::tempdir().unwrap();
    let exp = tmp.path().join("exp.toml");
    std::fs::write(
        &exp,
        "name = \"h\"\nduration = \"1s\"\n[base]\nurl = \"http://127.0.0.1:1/\"\nheader = [\"Authorization S3CRET-A\"]\n[factors.c]\none = { concurrency = 1 }\n",
    )
    .unwrap();
    let targets = tmp.path().join("targets.txt");
    std::fs::write(&targets, "GET http://127.0.0.1:1/\nAuthorization S3CRET-A\n").unwrap();
    let runs: [(&[&str], &str); 6] = [
        (&["run", "-n", "1", "-H", "Authorization S3CRET-A", "http://127.0.0.1:1/"], "-H"),
        (&["run", "-n", "1", "--header=Authorization S3CRET-A", "http://127.0.0.1:1/"], "-H"),
        (&["run", "-n", "1", "-H", "Authorization Bearer S3CRET-A: x", "http://127.0.0.1:1/"], "-H"),
        (&["run", "-n", "1", "-H", "X-Api-Key: S3CRET-B\u{1}", "http://127.0.0.1:1/"], "'x-api-key'"),
        (&["experiment", exp.to_str().unwrap(), "--dry-run"], "exp.toml"),
        (&["run", "-n", "1", "--targets", targets.to_str().unwrap()], "targets.txt:2"),
    ];
    for (args, names) in runs {
        let o = cmd().args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(!stderr.contains(MARK), "{args:?} echoed the header: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(names) && stderr.contains("'Name: value'"), "{args:?}: {stderr}");
    }
}

#[test]
fn an_experiment_lists_custom_header_values_only_with_show_secrets() {
    // A custom header's value is as likely a credential as not (`X-Tenant`): redacted in the
    // listing and experiment.json unless --show-secrets, which makes experiment.json private.
    let server = CaptureServer::start();
    let tmp = tempfile::tempdir().unwrap();
    let text = r#"name = "custom"
duration = "1s"

[base]
header = ["X-Tenant: S3CRET-T", "Accept: application/json"]
url = "http://ADDR/"

[factors.load]
one = { concurrency = 1 }
"#;
    let file = at_server(tmp.path(), "exp.toml", text, server.addr);
    let dir = tmp.path().join("exp");
    let list = |extra: &[&str]| {
        let o = cmd().arg("experiment").arg(&file).arg("--dry-run").args(extra).output().unwrap();
        ok(&o);
        String::from_utf8(o.stdout).unwrap()
    };
    let listing = list(&[]);
    assert!(!listing.contains(MARK) && listing.contains("'X-Tenant: <redacted>'"), "{listing}");
    assert!(listing.contains("'Accept: application/json'"), "a plain header keeps its value: {listing}");
    assert!(list(&["--show-secrets"]).contains("'X-Tenant: S3CRET-T'"));

    ok(&cmd().arg("experiment").arg(&file).arg("-o").arg(&dir).output().unwrap());
    assert!(server.requests.try_iter().all(|r| String::from_utf8_lossy(&r).contains("S3CRET-T")), "sent as given");
    let manifest = dir.join("experiment.json");
    let text = std::fs::read_to_string(&manifest).unwrap();
    assert!(!text.contains(MARK) && text.contains("X-Tenant: <redacted>"), "{text}");
    assert_eq!(mode(&manifest), 0o644);
    // Shown on a resume: the same cases, now written as given and private.
    ok(&cmd().arg("experiment").arg(&file).arg("-o").arg(&dir).args(["--resume", "--show-secrets"]).output().unwrap());
    let text = std::fs::read_to_string(&manifest).unwrap();
    assert!(text.contains("X-Tenant: S3CRET-T") && text.contains("\"unredacted\": true"), "{text}");
    assert_eq!(mode(&manifest), 0o600);
}

#[test]
fn a_captured_value_is_secret_in_every_output_unless_its_capture_is_public() {
    // A login answer's token, captured and sent back in a path and a query parameter no
    // rule names, and echoed by every answer: no output holds it; the public id shows.
    let server = RawServer::answering(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 29\r\n\r\n{\"t\":\"S3CRET-L\",\"id\":\"id-42\"}",
        true,
    );
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let o = |n: &str| out.join(n).display().to_string();
    let text = r#"[vars]
base = "http://ADDR"

[[flow.f.step]]
name = "login"
method = "POST"
url = "{{base}}/login"
capture.tok = { json-path = "$.t" }
capture.item = { json-path = "$.id", public = true }

[[flow.f.step]]
name = "use"
url = "{{base}}/items/{{item}}/{{tok}}?sig={{tok}}"
check.body-contains = "absent"
"#;
    let scenario = at_server(tmp.path(), "login.toml", text, server.addr);
    let run = |log: &str, brg: &str, extra: &[&str]| {
        let mut c = cmd();
        c.args(["run", "--scenario", scenario.to_str().unwrap(), "-d", "1s", "--rate", "5", "--format", "json"]);
        c.args(["-o", &o(brg), "--html", &o(&format!("{brg}.html")), "--log", &o(log)]).args(extra);
        c
    };
    let r = keep(&out, "run", &mut run("log.csv", "run.brg", &[]));
    assert_eq!(r.status.code(), Some(3), "every flow fails its check: {}", String::from_utf8_lossy(&r.stderr));
    keep(&out, "jsonl", &mut run("log.jsonl", "jsonl.brg", &[]));
    for format in ["text", "json", "csv", "html"] {
        keep(&out, &format!("report-{format}"), cmd().args(["report", "--format", format, &o("run.brg")]));
    }
    let leaks = holding(&out, MARK);
    assert!(leaks.is_empty(), "the captured token written to {leaks:?}");
    let log = std::fs::read_to_string(out.join("log.csv")).unwrap();
    assert!(log.contains("/items/id-42/<redacted>?sig=<redacted>,"), "the filled URL, the token concealed: {log}");
    let text = std::fs::read_to_string(out.join("report-text.stdout")).unwrap();
    // Quoted as it was read (its keys in the answer's order), the captured token concealed.
    assert!(text.contains(r#"{\"t\":\"<redacted>\",\"id\":\"id-42\"}"#), "the answer quoted, concealed: {text}");
    // --no-redact shows it, as it shows everything.
    keep(&out, "unredacted", &mut run("unredacted.jsonl", "unredacted.brg", &["--no-redact"]));
    let log = std::fs::read_to_string(out.join("unredacted.jsonl")).unwrap();
    assert!(log.contains("/items/id-42/S3CRET-L?sig=S3CRET-L"), "{log}");
}

#[test]
fn no_output_follows_a_link_planted_in_a_directory_others_can_write() {
    // With fs.protected_symlinks=0, anyone can plant `shared/run.brg -> victim` in a sticky
    // world-writable directory: barrage refuses it, and the victim stays as it was.
    use std::os::unix::fs::symlink;
    let server = CaptureServer::start();
    let url = format!("http://{}/", server.addr);
    let tmp = tempfile::tempdir().unwrap();
    let chmod = |p: &Path, mode: u32| std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    let (victim, shared, private) =
        (tmp.path().join("victim.txt"), tmp.path().join("shared"), tmp.path().join("private"));
    std::fs::write(&victim, b"precious").unwrap();
    chmod(&victim, 0o644);
    for (dir, mode) in [(&shared, 0o1777), (&private, 0o700)] {
        std::fs::create_dir(dir).unwrap();
        chmod(dir, mode);
    }
    for (flag, name) in [("-o", "run.brg"), ("--log", "log.csv"), ("--html", "run.html"), ("--hdr-log", "run.hdr")] {
        let link = shared.join(name);
        symlink(&victim, &link).unwrap();
        let o = cmd().args(["run", "-n", "1", flag]).arg(&link).arg(&url).output().unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{flag}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{flag}: {stderr}");
        assert!(stderr.contains(name) && stderr.contains("symbolic link in a directory others can write"), "{stderr}");
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious", "{flag} wrote the victim");
        assert_eq!(mode(&victim), 0o644, "{flag} changed the victim's mode");
    }
    // A link the user made in a directory of their own is theirs to follow; a device works.
    let target = tmp.path().join("target.brg");
    symlink(&target, private.join("run.brg")).unwrap();
    ok(&cmd().args(["run", "-n", "1", "-o"]).arg(private.join("run.brg")).arg(&url).output().unwrap());
    assert!(std::fs::read(&target).unwrap().starts_with(b"BARRAGE\n") && mode(&target) == 0o600);
    ok(&cmd().args(["run", "-n", "1", "--log", "/dev/null", "--html", "/dev/null"]).arg(&url).output().unwrap());
}
