//! What to request: target files, URL lists, picking strategies and the hit-ratio stream,
//! against `barrage serve`.

use crate::util::{barrage, closed, origin, plan, run, CaptureServer};
use barrage_engine::Pick;
use barrage_server::ServeConfig;

#[test]
fn zipf_over_a_template_hits_popular_objects_most() {
    let o = origin(ServeConfig::default());
    let mut p = plan(&format!("{}/obj/{{id}}", o.url()), closed(4));
    p.objects = Some(100_000);
    p.pick = Pick::Zipf(1.0);
    p.requests = Some(400);
    let s = run(p);
    assert_eq!(s.requests.ok, 400, "{:?}", s.errors);
    assert_eq!(o.requests(), 400);
}

/// `--pick gauss:STDDEV:MEDIAN` over a template, read from the request lines the server got:
/// ids gather at the median with the asked spread (300 draws: mean within 3 standard
/// errors, sample stddev within 20 %), none beyond 10σ.
#[test]
fn gauss_over_a_template_centres_ids_on_the_median() {
    let cap = CaptureServer::start();
    let out = barrage()
        .args(["run", "-c", "1", "-n", "300", "--pick", "gauss:20:5000", "--objects", "10000"])
        .arg(format!("http://{}/obj/{{id}}", cap.addr))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let ids: Vec<f64> = (0..300)
        .map(|_| {
            let req = cap.next();
            let path = req.strip_prefix("GET /obj/").and_then(|r| r.split(' ').next()).expect("GET /obj/ID");
            path.parse().unwrap()
        })
        .collect();
    assert!(ids.iter().all(|id| (4_800.0..=5_200.0).contains(id)), "{ids:?}");
    let mean = ids.iter().sum::<f64>() / 300.0;
    let sd = (ids.iter().map(|id| (id - mean).powi(2)).sum::<f64>() / 300.0).sqrt();
    assert!((mean + 0.5 - 5_000.0).abs() < 3.5, "mean {mean}");
    assert!((16.0..24.0).contains(&sd), "stddev {sd}");
}

#[test]
fn hit_ratio_stream_and_template_via_the_cli() {
    let o = origin(ServeConfig::default());
    let out = barrage()
        .args(["run", "-c", "2", "-n", "200", "--hit-ratio", "0.5", "--objects", "1000000", "--format", "json"])
        .arg(format!("{}/obj/{{id}}", o.url()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["requests"]["ok"], 200);
}

#[test]
fn targets_file_sends_each_target_with_its_method_and_body() {
    let o = origin(ServeConfig::default());
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("item.txt"), b"stored through a target file").unwrap();
    let file = dir.path().join("targets.txt");
    let text = format!(
        "# name: put-item\nPUT {u}/store/item\n@item.txt\n\n# name: get-item\nGET {u}/store/item\n",
        u = o.url()
    );
    std::fs::write(&file, text).unwrap();
    let out = barrage()
        .args(["run", "-c", "1", "-n", "2", "--format", "json", "--targets", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // The PUT stored the body (201), the GET read it back (200), in that order.
    assert_eq!(v["status_codes"]["201"], 1, "{v}");
    assert_eq!(v["status_codes"]["200"], 1, "{v}");
    assert!(v["bytes"]["in_total"].as_u64().unwrap() > "stored through a target file".len() as u64);
    // Every report breaks down by name and by method.
    let names: Vec<(&str, u64)> = v["by_name"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["name"].as_str().unwrap(), g["requests"].as_u64().unwrap()))
        .collect();
    assert_eq!(names, [("get-item", 1), ("put-item", 1)]);
    let methods: Vec<&str> = v["by_method"].as_array().unwrap().iter().map(|g| g["name"].as_str().unwrap()).collect();
    assert_eq!(methods, ["GET", "PUT"]);
}

/// `{id}` in a target file: the targets go round robin, each request drawing its id from
/// `--objects` as `--pick` says (here round robin too), and the log shows the ids sent.
#[test]
fn ids_fill_every_template_of_a_target_file() {
    let o = origin(ServeConfig::default());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("targets.txt");
    std::fs::write(
        &file,
        format!("# name: a\nGET {u}/obj/{{id}}\n\n# name: b\nGET {u}/bytes/{{id}}?v=1\n", u = o.url()),
    )
    .unwrap();
    let log = dir.path().join("log.csv");
    let out = barrage()
        .args(["run", "-c", "1", "-n", "12", "--objects", "5", "--targets", file.to_str().unwrap()])
        .args(["--log", log.to_str().unwrap(), "-o", dir.path().join("r.brg").to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(o.requests(), 12);
    let text = std::fs::read_to_string(&log).unwrap();
    let sent: Vec<String> =
        text.lines().skip(1).map(|l| l.split(',').nth(4).unwrap().rsplit_once(":").unwrap().1.to_string()).collect();
    let port = o.url().rsplit_once(':').unwrap().1.trim_end_matches('/').to_string();
    let want: Vec<String> = (0..12)
        .map(|k| match k % 2 {
            0 => format!("{port}/obj/{}", k % 5),
            _ => format!("{port}/bytes/{}?v=1", k % 5),
        })
        .collect();
    assert_eq!(sent, want);
}

/// Found in issue 32: a template was shown as its first id (`/obj/0`), and a file of a PUT
/// and a GET of one template showed one URL. Every output shows every target, a template
/// as written, a method other than GET before its URL as a target file writes it.
#[test]
fn reports_show_every_target_and_templates_as_written() {
    let o = origin(ServeConfig::default());
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("item.txt"), b"an object").unwrap();
    let file = dir.path().join("targets.txt");
    let u = o.url().trim_end_matches('/').to_string();
    std::fs::write(&file, format!("PUT {u}/obj/{{id}}\n@item.txt\n\nGET {u}/obj/{{id}}\n")).unwrap();
    let results = dir.path().join("r.brg");
    let out = barrage()
        .args(["run", "-c", "1", "-n", "4", "--objects", "5", "--targets", file.to_str().unwrap(), "-o"])
        .arg(&results)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let want = [format!("PUT {u}/obj/{{id}}"), format!("{u}/obj/{{id}}")];
    let report = |format: &str| {
        let out = barrage().arg("report").arg(&results).args(["--format", format]).output().unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    let v: serde_json::Value = serde_json::from_str(&report("json")).unwrap();
    assert_eq!(v["urls"], serde_json::json!(want), "{}", v["urls"]);
    let text = report("text");
    assert!(want.iter().all(|t| text.contains(t.as_str())) && !text.contains("/obj/0"), "{text}");
    let html = report("html");
    assert!(want.iter().all(|t| html.contains(t.as_str())), "the HTML lists both");
}

#[test]
fn url_list_file_and_pick_same() {
    let (a, b) = (origin(ServeConfig::default()), origin(ServeConfig::default()));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("urls.txt");
    std::fs::write(&file, format!("# two origins\n{}\n{}\n", a.url(), b.url())).unwrap();
    let run_with = |pick: &str| {
        let out = barrage()
            .args(["run", "-c", "2", "-n", "40", "--pick", pick, "--urls", file.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };
    run_with("same");
    assert_eq!((a.requests(), b.requests()), (40, 0));
    run_with("round-robin");
    assert_eq!((a.requests(), b.requests()), (60, 20));
}

#[test]
fn bad_target_files_name_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.txt");
    std::fs::write(&file, "GET http://127.0.0.1:9/\nthis is not a header\n").unwrap();
    let out = barrage().args(["run", "-n", "1", "--targets", file.to_str().unwrap()]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("{}:2:", file.display())), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    for args in [
        vec!["run", "-n", "1", "http://127.0.0.1:9/obj/{id}"],
        vec!["run", "-n", "1", "--objects", "10", "http://127.0.0.1:9/"],
        vec!["run", "-n", "1", "--pick", "zipf:-1", "http://127.0.0.1:9/"],
        vec!["run", "-n", "1", "--pick", "gauss:0", "http://127.0.0.1:9/"],
        vec!["run", "-n", "1", "--pick", "gauss:10:1000", "--objects", "1000", "http://127.0.0.1:9/obj/{id}"],
        vec!["run", "-n", "1", "--hit-ratio", "1.5", "http://127.0.0.1:9/"],
    ] {
        let out = barrage().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn phases_replay_the_stream_fill_then_measure() {
    let o = origin(ServeConfig { cache_headers: Some(barrage_server::CacheStyle::Varnish), ..Default::default() });
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("run.brg");
    let out = barrage()
        .args(["run", "-n", "200", "-c", "2", "--objects", "1000000", "--phases", "fill,measure"])
        .args(["-o", out_path.to_str().unwrap()])
        .arg(format!("{}/obj/{{id}}", o.url()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("== phase 1/2: fill") && text.contains("== phase 2/2: measure"), "{text}");
    let hit_ratio = |phase: &str| {
        let file = dir.path().join(format!("run.{phase}.brg"));
        let out = barrage().args(["report", "--format", "json", file.to_str().unwrap()]).output().unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["settings"]["labels"]["phase"], phase);
        assert_eq!(v["settings"]["plan"]["objects"], 1_000_000, "the header says what ran: {}", v["settings"]);
        v["cache"]["hit_ratio"].as_f64().unwrap()
    };
    // The fill phase only met new objects; the measure phase asked for the same ones again:
    // as many requests as the fill sent.
    assert_eq!(hit_ratio("fill"), 0.0);
    assert_eq!(hit_ratio("measure"), 1.0);
}

/// A closed loop over a two-target file: every worker sends both targets, in turn, whichever
/// thread it runs on (the round used to go by the request's number, and with two engine
/// threads half the workers sent only the first target and half only the second).
#[test]
fn every_closed_loop_worker_sends_every_target_of_a_file() {
    let o = origin(ServeConfig::default());
    let dir = tempfile::tempdir().unwrap();
    let targets = dir.path().join("targets.txt");
    let file = format!("# name: put\nPUT {0}/store/a\n@{1}\n\n# name: get\nGET {0}/bytes/10\n", o.url(), "body.txt");
    std::fs::write(dir.path().join("body.txt"), "x").unwrap();
    std::fs::write(&targets, file).unwrap();
    let log = dir.path().join("log.csv");
    let out = barrage()
        .current_dir(dir.path())
        .args(["run", "-c", "20", "-n", "400", "--threads", "2", "--targets"])
        .arg(&targets)
        .arg("--log")
        .arg(&log)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&log).unwrap();
    let mut header = text.lines().next().unwrap().split(',');
    let (worker, name) =
        (header.clone().position(|c| c == "worker").unwrap(), header.position(|c| c == "name").unwrap());
    let mut sent: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> = Default::default();
    for line in text.lines().skip(1) {
        let cells: Vec<&str> = line.split(',').collect();
        sent.entry(cells[worker].to_string()).or_default().insert(cells[name].to_string());
    }
    assert_eq!(sent.len(), 20, "every worker sent: {sent:?}");
    let one_sided: Vec<_> = sent.iter().filter(|(_, names)| names.len() < 2).collect();
    assert!(one_sided.is_empty(), "workers that sent one target only: {one_sided:?}");
}
