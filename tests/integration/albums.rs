//! The album service of `barrage serve` (POST a multipart album, GET its profile back), as
//! in the study of a servlet behind a balancer: content read back intact, origins sharing
//! one store, ids that cannot leave it, bounded uploads, and the origin's counts against
//! barrage's. The balancer case is in `testbed.rs`.

use crate::util::{barrage, ServeProcess};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::Duration;

/// The study's profile.
pub const PROFILE: &str = r#"{"artist": "Rock Pistols", "title": "Never Mind The Bollocks!", "year": "1977"}"#;
/// The size of the study's image.
pub const IMAGE_LEN: usize = 3475;

const BOUNDARY: &str = "barrage-test-boundary-7d1f";

/// One part of a form: name, file name, content type, content.
type Part<'a> = (&'a str, Option<&'a str>, &'a str, &'a [u8]);

/// A multipart/form-data body of `parts`, as the study's client builds it.
pub fn form(parts: &[Part]) -> Vec<u8> {
    let mut body = Vec::new();
    for (name, file, ctype, data) in parts {
        write!(body, "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{name}\"").unwrap();
        if let Some(file) = file {
            write!(body, "; filename=\"{file}\"").unwrap();
        }
        write!(body, "\r\nContent-Type: {ctype}\r\n\r\n").unwrap();
        body.extend_from_slice(data);
        body.extend_from_slice(b"\r\n");
    }
    write!(body, "--{BOUNDARY}--\r\n").unwrap();
    body
}

/// The study's image: not an image, but bytes of its size.
pub fn image(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 31 % 251) as u8).collect()
}

/// The study's album: the image first, then the JSON profile.
pub fn album(profile: &str) -> Vec<u8> {
    form(&[
        ("image", Some("nmtb.png"), "application/octet-stream", &image(IMAGE_LEN)),
        ("profile", None, "application/json", profile.as_bytes()),
    ])
}

/// An answer: status, head, body.
pub struct Answer {
    pub status: u16,
    pub head: String,
    pub body: Vec<u8>,
}

impl Answer {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
        })
    }
}

/// One HTTP/1.1 request on a new connection (closed after it), with a form body when given.
pub fn send(addr: SocketAddr, method: &str, path: &str, form: Option<&[u8]>) -> Answer {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    if let Some(body) = form {
        head +=
            &format!("Content-Type: multipart/form-data; boundary={BOUNDARY}\r\nContent-Length: {}\r\n", body.len());
    }
    s.write_all(format!("{head}\r\n").as_bytes()).unwrap();
    if let Some(body) = form {
        s.write_all(body).unwrap();
    }
    let mut data = Vec::new();
    s.read_to_end(&mut data).unwrap();
    let end = data.windows(4).position(|w| w == b"\r\n\r\n").expect("a response head");
    let head = String::from_utf8_lossy(&data[..end]).into_owned();
    let status = head.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or_else(|| panic!("{head}"));
    Answer { status, head, body: data[end + 4..].to_vec() }
}

/// POSTs an album; returns its id, checking the answer is the study's.
pub fn post_album(addr: SocketAddr, profile: &str) -> (String, Answer) {
    let answer = send(addr, "POST", "/albums", Some(&album(profile)));
    assert_eq!(answer.status, 200, "{}", answer.text());
    assert_eq!(answer.header("content-type").as_deref(), Some("application/json"));
    let json: Value = serde_json::from_slice(&answer.body).unwrap();
    assert_eq!(json["imageSize"].as_u64(), Some(IMAGE_LEN as u64), "{json}");
    let id = json["albumID"].as_str().unwrap().to_string();
    assert!(id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()), "{id}");
    (id, answer)
}

/// The origin's album counts from `/_barrage/stats`.
pub fn album_counts(addr: SocketAddr) -> Value {
    let stats: Value = serde_json::from_slice(&send(addr, "GET", "/_barrage/stats", None).body).unwrap();
    stats["albums"].clone()
}

/// The files in `dir`, sorted.
fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    names
}

/// A one-line reason: the body is one line (a reason phrase, or a sentence ending in a
/// newline).
fn one_line(answer: &Answer) -> String {
    let text = answer.text();
    assert!(!text.trim_end_matches('\n').contains('\n') && !text.is_empty(), "not one line: {text:?}");
    text
}

#[test]
fn an_album_posted_is_read_back_with_the_same_profile() {
    let origin = ServeProcess::start(&[]);
    let (id, _) = post_album(origin.addr, PROFILE);
    let got = send(origin.addr, "GET", &format!("/albums/{id}"), None);
    assert_eq!((got.status, got.text()), (200, PROFILE.to_string()), "the profile, byte for byte");
    assert_eq!(got.header("content-type").as_deref(), Some("application/json"));
    // The profile first, as curl and barrage's --form send it, and another profile.
    let other = r#"{"artist":"b","title":"c","year":"2024"}"#;
    let body =
        form(&[("profile", None, "application/json", other.as_bytes()), ("image", Some("c.jpg"), "image/jpeg", b"")]);
    let posted = send(origin.addr, "POST", "/albums", Some(&body));
    let json: Value = serde_json::from_slice(&posted.body).unwrap();
    assert_eq!((posted.status, json["imageSize"].as_u64()), (200, Some(0)), "an empty image is an image");
    let id2 = json["albumID"].as_str().unwrap();
    assert_ne!(id2, id);
    assert_eq!(send(origin.addr, "GET", &format!("/albums/{id2}"), None).text(), other);
    assert_eq!(send(origin.addr, "GET", &format!("/albums/{id}"), None).text(), PROFILE, "the first is still there");
    let head = send(origin.addr, "HEAD", &format!("/albums/{id}"), None);
    assert_eq!((head.status, head.header("content-length")), (200, Some(PROFILE.len().to_string())));
    let counts = album_counts(origin.addr);
    assert_eq!((&counts["created"], &counts["read"], &counts["not_found"]), (&2.into(), &4.into(), &0.into()));
}

#[test]
fn bad_album_requests_get_a_one_line_reason() {
    let origin = ServeProcess::start(&[]);
    let img = image(100);
    let image_part: Part = ("image", Some("a.png"), "image/png", &img);
    let profile_part: Part = ("profile", None, "application/json", PROFILE.as_bytes());
    let cases = [
        ("POST", "/albums", Some(form(&[image_part])), 400, "no 'profile' part"),
        ("POST", "/albums", Some(form(&[profile_part])), 400, "no 'image' part"),
        ("POST", "/albums", Some(form(&[("profile", None, "text/plain", b"artist=x"), image_part])), 400, "not JSON"),
        ("POST", "/albums", Some(form(&[("profile", None, "application/json", b"[1]"), image_part])), 400, "object"),
        ("POST", "/albums", Some(b"--nope\r\n".to_vec()), 400, "multipart"),
        ("GET", "/albums/0123456789abcdef0123456789abcdef", None, 404, "no such album"),
        ("GET", "/albums", None, 405, "Method Not Allowed"),
        ("DELETE", "/albums/0123456789abcdef0123456789abcdef", None, 405, "Method Not Allowed"),
    ];
    for (method, path, body, status, why) in &cases {
        let answer = send(origin.addr, method, path, body.as_deref());
        assert_eq!(answer.status, *status, "{method} {path}: {}", answer.text());
        assert!(one_line(&answer).contains(why), "{method} {path}: {}", answer.text());
    }
    // Without a multipart Content-Type at all.
    let mut s = TcpStream::connect(origin.addr).unwrap();
    s.write_all(b"POST /albums HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}").unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 400") && reply.contains("multipart/form-data; boundary"), "{reply}");
    let counts = album_counts(origin.addr);
    assert_eq!(counts, serde_json::json!({"created": 0, "read": 0, "not_found": 1, "rejected": 8, "failed": 0}));
}

#[test]
fn origins_sharing_an_album_store_find_each_others_albums() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("albums");
    let store_arg = store.to_str().unwrap();
    let a = ServeProcess::start(&["--album-store", store_arg]);
    let b = ServeProcess::start(&["--album-store", store_arg]);
    let mut ids = Vec::new();
    for i in 0..10 {
        let (writer, reader) = if i % 2 == 0 { (&a, &b) } else { (&b, &a) };
        let profile = format!(r#"{{"artist": "a{i}", "title": "t", "year": "1977"}}"#);
        let (id, _) = post_album(writer.addr, &profile);
        let got = send(reader.addr, "GET", &format!("/albums/{id}"), None);
        assert_eq!((got.status, got.text()), (200, profile), "album {i} read from the other origin");
        ids.push(id);
    }
    // One file per album, named by its id, nothing half-written left behind, private.
    ids.sort();
    assert_eq!(files(&store), ids);
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&store), 0o700);
    assert_eq!(mode(&store.join(&ids[0])), 0o600);
    for origin in [&a, &b] {
        let counts = album_counts(origin.addr);
        assert_eq!((&counts["created"], &counts["read"]), (&5.into(), &5.into()), "{counts}");
    }
    // An origin started later sees them all.
    let c = ServeProcess::start(&["--album-store", store_arg]);
    assert!(ids.iter().all(|id| send(c.addr, "GET", &format!("/albums/{id}"), None).status == 200));

    // Without the flag each origin keeps its own: the other one does not know the album.
    let (m1, m2) = (ServeProcess::start(&[]), ServeProcess::start(&[]));
    let (id, _) = post_album(m1.addr, PROFILE);
    assert_eq!(send(m2.addr, "GET", &format!("/albums/{id}"), None).status, 404);
    assert_eq!(send(m1.addr, "GET", &format!("/albums/{id}"), None).status, 200);
}

#[test]
fn album_ids_that_are_not_hex_never_reach_the_file_system() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("albums");
    let secret = r#"{"secret": "outside the store"}"#;
    std::fs::write(dir.path().join("secret"), secret).unwrap();
    let origin = ServeProcess::start(&["--album-store", store.to_str().unwrap()]);
    // A link in the store named like an album, pointing out of it: not followed.
    let linked = "0123456789abcdef0123456789abcdef";
    std::os::unix::fs::symlink(dir.path().join("secret"), store.join(linked)).unwrap();
    let snapshot = |p: &Path| -> Vec<(String, u64, std::time::SystemTime)> {
        files(p)
            .into_iter()
            .map(|n| {
                let m = std::fs::symlink_metadata(p.join(&n)).unwrap();
                (n, m.len(), m.modified().unwrap())
            })
            .collect()
    };
    let (outside, inside) = (snapshot(dir.path()), snapshot(&store));
    let bad = [
        "..%2F..%2Fetc%2Fpasswd",
        "..%2Fsecret",
        "../secret",
        "%2e%2e%2fsecret",
        "..",
        "0123456789ABCDEF0123456789ABCDEF",
        "0123456789abcdef0123456789abcde",
        "0123456789abcdef0123456789abcdef/",
        "0123456789abcdef0123456789abcdef/..%2F..%2Fsecret",
        "",
    ];
    for id in bad {
        let answer = send(origin.addr, "GET", &format!("/albums/{id}"), None);
        assert_eq!(answer.status, 400, "{id}: {}", answer.text());
        assert!(one_line(&answer).contains("32 lowercase hex digits"), "{id}");
        // Nor can a POST to such a path store anything.
        assert_eq!(send(origin.addr, "POST", &format!("/albums/{id}"), Some(&album(PROFILE))).status, 405, "{id}");
    }
    let linked_answer = send(origin.addr, "GET", &format!("/albums/{linked}"), None);
    assert_eq!(linked_answer.status, 404);
    assert!(!linked_answer.text().contains("secret"));
    assert_eq!((snapshot(dir.path()), snapshot(&store)), (outside, inside), "nothing in or out of the store changed");
    assert_eq!(std::fs::read_to_string(dir.path().join("secret")).unwrap(), secret);
    let counts = album_counts(origin.addr);
    assert_eq!((&counts["created"], &counts["not_found"]), (&0.into(), &1.into()), "{counts}");
    assert_eq!(counts["rejected"].as_u64(), Some(2 * bad.len() as u64), "{counts}");
}

#[test]
fn an_oversized_image_is_refused_with_413_and_nothing_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("albums");
    let origin = ServeProcess::start(&["--album-store", store.to_str().unwrap()]);
    let max = barrage_server::MAX_ALBUM_IMAGE as usize;
    let too_big = vec![7u8; max + 1];
    let body =
        form(&[("profile", None, "application/json", PROFILE.as_bytes()), ("image", Some("big"), "a/b", &too_big)]);
    let answer = send(origin.addr, "POST", "/albums", Some(&body));
    assert_eq!(answer.status, 413, "{}", answer.text());
    assert_eq!(one_line(&answer), "the image part is over 50 MiB\n");
    assert!(files(&store).is_empty(), "{:?}", files(&store));
    // The largest image allowed is stored.
    let body = form(&[
        ("profile", None, "application/json", PROFILE.as_bytes()),
        ("image", Some("big"), "a/b", &too_big[..max]),
    ]);
    let answer = send(origin.addr, "POST", "/albums", Some(&body));
    let json: Value = serde_json::from_slice(&answer.body).unwrap();
    assert_eq!((answer.status, json["imageSize"].as_u64()), (200, Some(max as u64)));
    assert_eq!(files(&store).len(), 1);
    let counts = album_counts(origin.addr);
    assert_eq!((&counts["created"], &counts["rejected"]), (&1.into(), &1.into()), "{counts}");
}

#[test]
fn the_origin_counts_the_albums_barrage_posted() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("albums");
    let origin = ServeProcess::start(&["--album-store", store.to_str().unwrap(), "--latency", "2ms"]);
    let image = dir.path().join("nmtb.png");
    std::fs::write(&image, crate::albums::image(IMAGE_LEN)).unwrap();
    let out = barrage()
        .args(["run", "-X", "POST", "-n", "50", "-c", "4", "--format", "json"])
        .args(["--form", &format!("profile={PROFILE};type=application/json")])
        .args(["--form", &format!("image=@{}", image.display())])
        .arg(format!("http://{}/albums", origin.addr))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let s: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(s["status_codes"]["200"].as_u64(), Some(50), "{}", s["status_codes"]);
    let stats: Value = serde_json::from_slice(&send(origin.addr, "GET", "/_barrage/stats", None).body).unwrap();
    assert_eq!(stats["albums"]["created"].as_u64(), Some(50), "{stats}");
    // --latency applies to albums as to any route: the origin delayed every one.
    assert_eq!(stats["delay_us"]["count"].as_u64(), Some(50), "{stats}");
    assert_eq!(files(&store).len(), 50);
    // Every stored profile is the one sent.
    assert!(files(&store).iter().all(|f| std::fs::read_to_string(store.join(f)).unwrap() == PROFILE));
}

#[test]
fn an_album_store_that_is_a_file_is_a_one_line_error() {
    let file = tempfile::NamedTempFile::new().unwrap();
    let out = barrage().args(["serve", "--listen", "127.0.0.1:0", "--album-store"]).arg(file.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("cannot use the album store") && err.contains(file.path().to_str().unwrap()), "{err}");
}

/// `examples/albums/albums.toml` run exactly as its header says (only the origin's port is
/// the test's: never a fixed one), from a directory holding the repository's `examples/`,
/// against `barrage serve`: every flow succeeds, each of the 30 workers ran its 50 flows
/// and stopped, and the origin's own album counts are barrage's (found in issue 34: the
/// example's unbounded workers filled the store and 42% of flows failed with 507).
#[test]
fn the_album_example_runs_as_shipped_with_every_flow_succeeding() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("examples/albums/albums.toml")).unwrap();
    // The command of the header: its `#   barrage run` line and the lines it continues to.
    let mut command = String::new();
    for line in text.lines().map(|l| l.trim_start_matches('#').trim()) {
        if command.is_empty() && !line.starts_with("barrage run") {
            continue;
        }
        command.push_str(line.trim_end_matches('\\'));
        command.push(' ');
        if !line.ends_with('\\') {
            break;
        }
    }
    let words: Vec<&str> = command.split_whitespace().collect();
    assert!(words.starts_with(&["barrage", "run", "--scenario", "examples/albums/albums.toml"]), "{command}");
    let origin = ServeProcess::start(&[]);
    let base = "base=http://127.0.0.1:8080";
    assert!(words.contains(&base), "the header's base URL: {command}");
    let own_base = format!("base=http://{}", origin.addr);
    let args: Vec<&str> = words[1..].iter().map(|w| if *w == base { own_base.as_str() } else { w }).collect();
    let work = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(root.join("examples"), work.path().join("examples")).unwrap();
    let started = std::time::Instant::now();
    let out = barrage().args(&args).current_dir(work.path()).output().unwrap();
    let took = started.elapsed();
    assert!(out.status.success(), "{command}: {}", String::from_utf8_lossy(&out.stderr));
    // Each worker's 50 flows 100 ms apart (its think time), phase-2 from 2 s: about 9 s.
    assert!(took > Duration::from_secs(5) && took < Duration::from_secs(40), "well under a minute: {took:?}");
    let report =
        barrage().args(["report", "--format", "json", "albums.brg"]).current_dir(work.path()).output().unwrap();
    assert!(report.status.success(), "{}", String::from_utf8_lossy(&report.stderr));
    let s: Value = serde_json::from_slice(&report.stdout).unwrap();
    let total = &s["flows_total"];
    assert_eq!((total["flows"].as_u64(), total["ok"].as_u64()), (Some(1500), Some(1500)), "30 workers × 50: {total}");
    // Over the time the flows took, not the groups' 60 s bound.
    let per_sec = total["flows_per_sec"].as_f64().unwrap();
    assert!(per_sec >= 1500.0 / took.as_secs_f64(), "{per_sec} flows/s in {took:?}");
    for (group, workers) in [("phase-1", 10), ("phase-2", 20)] {
        let g = s["flows"].as_array().unwrap().iter().find(|g| g["name"] == group).unwrap();
        assert_eq!(g["flows"].as_u64(), Some(workers * 50), "{g}");
        assert_eq!(g["load"], format!("{workers} workers, {} flows", workers * 50), "{g}");
    }
    // Phase-1's workers are done after their 50 flows, 100 ms apart (about 5 s), while
    // phase-2's still run: its rate is over the time it ran (it read 55/s over the whole
    // run's 9 s).
    let phase_1 = s["flows"].as_array().unwrap().iter().find(|g| g["name"] == "phase-1").unwrap();
    let (span, rate) = (phase_1["duration_s"].as_f64().unwrap(), phase_1["flows_per_sec"].as_f64().unwrap());
    assert!(span > 4.5 && span < took.as_secs_f64() - 1.0, "{phase_1}");
    assert!((rate - 500.0 / span).abs() < 1.0 && rate > 70.0, "{phase_1}");
    assert_eq!(s["requests"]["ok"], s["requests"]["total"], "{}", s["errors"]);
    // The origin's own counts: an album created for every POST barrage saw succeed, read
    // for every GET; none missing, none refused.
    let ok_of = |step: &str| -> u64 {
        let named = s["by_name"].as_array().unwrap();
        named
            .iter()
            .filter(|n| n["name"].as_str().unwrap().ends_with(step))
            .map(|n| n["requests"].as_u64().unwrap())
            .sum()
    };
    let counts = album_counts(origin.addr);
    assert_eq!(counts["created"].as_u64(), Some(ok_of("post-album")), "{counts}");
    assert_eq!(counts["read"].as_u64(), Some(ok_of("get-album")), "{counts}");
    assert_eq!(counts["created"].as_u64(), Some(1500), "{counts}");
    assert_eq!((&counts["not_found"], &counts["rejected"], &counts["failed"]), (&0.into(), &0.into(), &0.into()));
    // The request log the command asked for: a row per request.
    let log = std::fs::read_to_string(work.path().join("albums.csv")).unwrap();
    assert_eq!(log.lines().count(), 1 + 3000, "a header and 3,000 rows");

    // Cut short by -d, a group of iterations says it ran fewer flows than it asked for.
    let out = barrage()
        .args(["run", "--scenario", "examples/albums/albums.toml", "--var", &own_base, "-d", "1s"])
        .current_dir(work.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let warning = text.lines().find(|l| l.contains("group phase-1: ")).unwrap_or_else(|| panic!("{text}"));
    assert!(warning.contains(" of the 500 flows asked (10 workers, 500 flows) finished"), "{warning}");
}

/// `iterations` is for closed-loop groups, and a whole number from 1: anything else is
/// refused with the file, line and key, exit 2.
#[test]
fn iterations_that_cannot_run_are_refused_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.toml");
    for (group, want) in [
        (
            "rate = 5\niterations = 3\n",
            "s.toml:6: group.g.iterations: iterations counts each closed-loop worker's flows",
        ),
        ("concurrency = 2\niterations = 0\n", "s.toml:6: group.g.iterations: 0: flows per worker, from 1 to"),
        ("concurrency = 2\niterations = \"many\"\n", "s.toml:6"),
    ] {
        let text = format!("[[flow.f.step]]\nname = \"s\"\nurl = \"http://127.0.0.1:9/\"\n[group.g]\n{group}");
        std::fs::write(&file, text).unwrap();
        let out = barrage().args(["run", "--scenario"]).arg(&file).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(want) && err.trim_end().lines().count() == 1, "{err}");
    }
}

/// `examples/albums/study.toml` as shipped: origins of known capacity (one request at a
/// time, 40 ms each) behind haproxy, 1 to 4 of them. Four give at least 3.5 times the
/// throughput of one, every flow succeeds, and the origins' own access logs (kept beside
/// each testbed when it goes down) hold every request barrage counted.
#[test]
fn the_album_study_scales_with_capacity_limited_origins() {
    if !crate::util::require("haproxy", barrage_testbed::program_path("haproxy").is_some()) {
        return;
    }
    let out_dir = tempfile::tempdir().unwrap();
    let results = out_dir.path().join("study");
    let v = crate::util::experiment_ok(Path::new("examples/albums/study.toml"), &results);
    let rows = v["matrix"].as_array().unwrap();
    assert_eq!(rows.len(), 4, "{v}");
    let mut throughput = Vec::new();
    for (row, origins) in rows.iter().zip(1..) {
        assert_eq!(row["labels"]["origins"], origins.to_string(), "{row}");
        assert_eq!(row["flow_success_ratio"].as_f64(), Some(1.0), "{row}");
        assert_eq!(row["success_ratio"].as_f64(), Some(1.0), "{row}");
        throughput.push(row["throughput_per_sec"].as_f64().unwrap());
        // The origins' own logs of this case's testbed: one line per request barrage sent.
        let logs = crate::util::kept_logs(&results, &format!("testbed-haproxy-lb-{origins}-"));
        let lines: usize = (1..=origins)
            .map(|i| {
                let log = std::fs::read_to_string(logs.join(format!("origin-{i}/access.log"))).unwrap();
                log.lines().filter(|l| l.contains(" /albums")).count()
            })
            .sum();
        assert_eq!(lines as u64, row["requests"].as_u64().unwrap(), "{origins} origin(s): {row}");
    }
    let ratio = throughput[3] / throughput[0];
    assert!(ratio >= 3.5, "4 origins give {ratio:.2}× the throughput of 1: {throughput:?}");
}
