//! deploy/k8s: the manifests validated offline for Kubernetes 1.27, 1.29 and the newest
//! schema kubernetes-validate ships, their fields checked, the pods' commands run locally as
//! the kubelet would, and the image's build steps run.

use super::{assert_three_shards, read, spawn_logged, stats_requests, Running, DEPLOY};
use crate::util::{origin, require};
use barrage_server::ServeConfig;
use barrage_testbed::program_path;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What envsubst fills in (and nothing else), as docs/scale-out.md names them.
const ENVSUBST: [&str; 3] = ["BARRAGE_IMAGE", "BARRAGE_SHARDS", "BARRAGE_RUN"];

/// The manifests in apply order.
const FILES: [&str; 3] = ["scenario", "collector", "shards"];

/// The merge patch docs/scale-out.md applies to shards.yaml on Kubernetes 1.29 and later.
const PATCH_1_29: &str = "k8s/shards-1.29.patch.yaml";

/// The image's user (deploy/k8s/Dockerfile), which every pod and container runs as.
const UID: u64 = 10001;

fn k8s_file(name: &str) -> PathBuf {
    Path::new(DEPLOY).join("k8s").join(name)
}

/// envsubst with a list of names: `$NAME` and `${NAME}` of the listed names are replaced,
/// every other `$` is left alone.
fn envsubst(text: &str, values: &[(&str, String)]) -> String {
    let mut out = text.to_string();
    for (name, value) in values {
        assert!(ENVSUBST.contains(name), "{name} is not one of the envsubst names of docs/scale-out.md");
        out = out.replace(&format!("${{{name}}}"), value);
        let bare = format!("${name}");
        let mut rest = out.as_str();
        let mut done = String::new();
        while let Some(at) = rest.find(&bare) {
            let after = &rest[at + bare.len()..];
            let whole = !after.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
            done.push_str(&rest[..at]);
            done.push_str(if whole { value } else { &bare });
            rest = after;
        }
        done.push_str(rest);
        out = done;
    }
    out
}

/// The YAML documents of `text` as JSON, through PyYAML (the YAML library kubernetes-validate
/// reads manifests with); `None` when python3 has no yaml module.
fn yaml_documents(text: &str) -> Option<Vec<Value>> {
    let script = "import json, sys, yaml; json.dump(list(yaml.safe_load_all(sys.stdin)), sys.stdout)";
    let mut child = Command::new("python3")
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    use std::io::Write;
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("No module named 'yaml'"), "the manifests do not parse: {err}");
        return None;
    }
    serde_json::from_slice(&out.stdout).ok()
}

/// A JSON merge patch (RFC 7386), as `kubectl patch --type merge` applies it: objects merge
/// key by key, `null` removes a key, anything else replaces.
fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(fields) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = json!({});
    }
    let object = target.as_object_mut().unwrap();
    for (key, value) in fields {
        if value.is_null() {
            object.remove(key);
        } else {
            merge_patch(object.entry(key.clone()).or_insert(Value::Null), value);
        }
    }
}

/// The manifests as applied: each file rendered with envsubst and `values`, and with
/// `patched`, shards.yaml through the 1.29 patch. `None` (after `require`) without PyYAML.
fn manifests(values: &[(&str, String)], patched: bool) -> Option<Vec<Value>> {
    let mut docs = Vec::new();
    for f in FILES {
        let parsed = yaml_documents(&envsubst(&read(&k8s_file(&format!("{f}.yaml"))), values));
        if !require("python3 module yaml (pip install pyyaml)", parsed.is_some()) {
            return None;
        }
        docs.extend(parsed.unwrap());
    }
    if patched {
        let patch = yaml_documents(&read(&Path::new(DEPLOY).join(PATCH_1_29))).unwrap().remove(0);
        let job = docs.iter_mut().find(|d| d["metadata"]["name"] == "barrage-shards").unwrap();
        merge_patch(job, &patch);
    }
    Some(docs)
}

fn by_name<'a>(docs: &'a [Value], kind: &str, name: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name}"))
}

fn example_values() -> Vec<(&'static str, String)> {
    vec![
        ("BARRAGE_IMAGE", "registry.example.com/barrage:0.1".into()),
        ("BARRAGE_SHARDS", "3".into()),
        ("BARRAGE_RUN", "20300101T000000Z".into()),
    ]
}

/// The Kubernetes versions whose schemas kubernetes-validate ships, from its `--help`
/// (which names its default, the newest).
fn newest_schema() -> String {
    let out = Command::new("kubernetes-validate").arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout).to_string();
    let mut versions: Vec<Vec<u32>> = help
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .filter(|w| w.starts_with("1.") && w.matches('.').count() == 2)
        .map(|w| w.trim_end_matches('.').split('.').map(|n| n.parse().unwrap()).collect())
        .collect();
    versions.sort();
    let newest = versions.last().unwrap_or_else(|| panic!("no version in kubernetes-validate --help:\n{help}"));
    assert!(newest[..2] >= [1, 34][..], "kubernetes-validate's newest schema is {newest:?}");
    newest.iter().map(u32::to_string).collect::<Vec<_>>().join(".")
}

/// kubernetes-validate --strict for `version` over `docs`: whether it passed, its output.
fn validate(docs: &[Value], version: &str, dir: &Path) -> (bool, String) {
    let file = dir.join(format!("rendered-{version}.yaml"));
    let text: Vec<String> = docs.iter().map(|d| serde_json::to_string_pretty(d).unwrap()).collect();
    std::fs::write(&file, text.join("\n---\n")).unwrap();
    let out = Command::new("kubernetes-validate").args(["--strict", "-k", version]).arg(&file).output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr))
}

#[test]
fn k8s_manifests_validate_for_1_27_1_29_and_the_newest_schema() {
    if !require("kubernetes-validate", program_path("kubernetes-validate").is_some()) {
        return;
    }
    let (Some(base), Some(patched)) = (manifests(&example_values(), false), manifests(&example_values(), true)) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let newest = newest_schema();
    // The manifests as they are are valid everywhere; through the patch, from 1.29 (the
    // first with backoffLimitPerIndex and podReplacementPolicy on by default) to the newest.
    for (docs, versions) in [(&base, vec!["1.27.0", "1.29.0", &newest]), (&patched, vec!["1.29.0", &newest])] {
        for version in versions {
            let (ok, text) = validate(docs, version, tmp.path());
            assert!(ok, "kubernetes {version}: {text}");
            assert_eq!(text.matches("passed for resource").count(), docs.len(), "{text}");
        }
    }
    assert_eq!(base.len(), 5, "ConfigMap, PersistentVolumeClaim, Service and two Jobs");
    // Which is why the patch is one: 1.27 knows neither field.
    let (ok, text) = validate(&patched, "1.27.0", tmp.path());
    assert!(!ok && text.contains("backoffLimitPerIndex"), "the patched Job passed for 1.27: {text}");
    // The validator rejects what it should: a misspelt field under --strict.
    let mut misspelt = base.clone();
    let job = misspelt.iter_mut().find(|d| d["metadata"]["name"] == "barrage-collector" && d["kind"] == "Job");
    job.unwrap()["spec"]["template"]["spec"]["securityContext"]["runAsNonRot"] = json!(true);
    assert!(!validate(&misspelt, &newest, tmp.path()).0, "a misspelt field passed");
}

/// kubectl's own merge patch, where kubectl is installed (CI has none): the documented
/// `kubectl patch --local` gives what [`merge_patch`] gives.
#[test]
fn k8s_patch_for_1_29_is_what_kubectl_patch_local_makes() {
    let Some(patched) = manifests(&example_values(), true) else { return };
    if program_path("kubectl").is_none() {
        println!("kubectl not found: the patch is checked by the test's own merge patch only");
        return;
    }
    let rendered = envsubst(&read(&k8s_file("shards.yaml")), &example_values());
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("shards.yaml"), rendered).unwrap();
    // Offline: no kubeconfig, --local.
    let out = Command::new("kubectl")
        .env("KUBECONFIG", "/dev/null")
        .args(["patch", "--local", "-f", "shards.yaml", "--type", "merge", "--patch-file"])
        .arg(Path::new(DEPLOY).join(PATCH_1_29))
        .args(["-o", "json"])
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let by_kubectl: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(&by_kubectl, by_name(&patched, "Job", "barrage-shards"));
}

/// Every pod and container of `docs`: the pod specs, by the name of their owner.
fn pods(docs: &[Value]) -> Vec<(String, &Value)> {
    docs.iter()
        .filter(|d| d["kind"] == "Job")
        .map(|d| (d["metadata"]["name"].as_str().unwrap().to_string(), &d["spec"]["template"]["spec"]))
        .collect()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array().map_or(vec![], |a| a.iter().map(|s| s.as_str().unwrap().to_string()).collect())
}

/// The word after `flag` in `argv`.
fn after<'a>(argv: &'a [String], flag: &str) -> &'a str {
    let at = argv.iter().position(|a| a == flag).unwrap_or_else(|| panic!("no {flag} in {argv:?}"));
    &argv[at + 1]
}

#[test]
fn k8s_pods_run_as_non_root_bounded_and_share_no_volume() {
    let Some(docs) = manifests(&example_values(), false) else { return };
    for (job, pod) in pods(&docs) {
        let ctx = &pod["securityContext"];
        assert_eq!(
            (&ctx["runAsNonRoot"], &ctx["runAsUser"], &ctx["runAsGroup"]),
            (&json!(true), &json!(UID), &json!(UID))
        );
        assert_eq!(ctx["seccompProfile"]["type"], "RuntimeDefault", "{job}");
        assert_eq!(pod["restartPolicy"], "Never", "{job}");
        assert_eq!(pod["automountServiceAccountToken"], false, "{job}");
        for c in pod["containers"].as_array().unwrap() {
            let ctx = &c["securityContext"];
            assert_eq!((&ctx["runAsNonRoot"], &ctx["runAsUser"]), (&json!(true), &json!(UID)), "{job}");
            assert_eq!(ctx["readOnlyRootFilesystem"], true, "{job}");
            assert_eq!(ctx["allowPrivilegeEscalation"], false, "{job}");
            assert_eq!(ctx["capabilities"]["drop"], json!(["ALL"]), "{job}");
            assert_eq!(ctx["seccompProfile"]["type"], "RuntimeDefault", "{job}");
            for kind in ["requests", "limits"] {
                for r in ["cpu", "memory"] {
                    assert!(c["resources"][kind][r].is_string(), "{job}: no {kind}.{r}");
                }
            }
            assert_eq!(c["image"], "registry.example.com/barrage:0.1");
        }
        // Only emptyDirs, ConfigMaps and the collector's own ReadWriteOnce claim.
        for v in pod["volumes"].as_array().unwrap() {
            let claim = v["persistentVolumeClaim"]["claimName"].as_str();
            assert!(v["emptyDir"].is_object() || v["configMap"].is_object() || claim == Some("barrage-results"), "{v}");
            assert!(claim.is_none() || job == "barrage-collector", "{job} mounts {v}");
        }
        let spec = &by_name(&docs, "Job", &job)["spec"];
        assert!(spec["activeDeadlineSeconds"].as_u64().is_some_and(|s| s > 0), "{job} is bounded");
        assert!(spec["ttlSecondsAfterFinished"].as_u64().is_some_and(|s| s > 0), "{job} is cleaned up");
    }
    for d in &docs {
        assert!(!d.to_string().contains("ReadWriteMany"), "{d}");
    }
    let pvc = by_name(&docs, "PersistentVolumeClaim", "barrage-results");
    assert_eq!(pvc["spec"]["accessModes"], json!(["ReadWriteOnce"]));
}

#[test]
fn k8s_shards_are_indexed_never_retried_and_report_to_the_collector() {
    let (Some(base), Some(patched)) = (manifests(&example_values(), false), manifests(&example_values(), true)) else {
        return;
    };
    for docs in [&base, &patched] {
        let job = &by_name(docs, "Job", "barrage-shards")["spec"];
        assert_eq!(job["completionMode"], "Indexed");
        assert_eq!((&job["completions"], &job["parallelism"]), (&json!(3), &json!(3)));
        let pod = &job["template"]["spec"];
        let c = &pod["containers"][0];
        let command = strings(&c["command"]);
        assert_eq!(command[..2], ["barrage", "run"]);
        assert_eq!(after(&command, "--shard"), "$(JOB_COMPLETION_INDEX)/$(BARRAGE_SHARDS)");
        assert_eq!(after(&command, "--report-to"), "http://barrage-collector:8080/");
        assert!(command.contains(&"--rendezvous".to_string()), "{command:?}");
        assert_eq!(after(&command, "-o"), "/work/shard.brg");
        let mounts = c["volumeMounts"].as_array().unwrap();
        let mount = |path: &str| mounts.iter().find(|m| m["mountPath"] == path).unwrap_or_else(|| panic!("{path}"));
        let volume = |name: &Value| pod["volumes"].as_array().unwrap().iter().find(|v| v["name"] == *name).unwrap();
        assert!(volume(&mount("/work")["name"])["emptyDir"].is_object());
        let scenario = mount("/etc/barrage/scenario");
        assert_eq!(scenario["readOnly"], true);
        assert_eq!(volume(&scenario["name"])["configMap"]["name"], "barrage-scenario");
    }
    // Everywhere: not retried; before 1.29 the first failure ends the Job.
    let job = &by_name(&base, "Job", "barrage-shards")["spec"];
    assert_eq!(job["backoffLimit"], 0);
    assert!(job.get("backoffLimitPerIndex").is_none());
    // From 1.29: not retried either, and the other shards go on.
    let job = &by_name(&patched, "Job", "barrage-shards")["spec"];
    assert!(job.get("backoffLimit").is_none(), "a limit for the whole Job would stop every shard");
    assert_eq!(job["backoffLimitPerIndex"], 0);
    assert_eq!(job["podReplacementPolicy"], "Failed");
    // The collector: reached through its Service, on the port it listens on.
    let service = &by_name(&base, "Service", "barrage-collector")["spec"];
    let collector = &by_name(&base, "Job", "barrage-collector")["spec"]["template"];
    for (key, value) in service["selector"].as_object().unwrap() {
        assert_eq!(&collector["metadata"]["labels"][key], value, "the Service selects the collector's pod");
    }
    let c = &collector["spec"]["containers"][0];
    let port = c["ports"].as_array().unwrap().iter().find(|p| p["name"] == service["ports"][0]["targetPort"]);
    assert_eq!(port.unwrap()["containerPort"], 8080);
    assert_eq!(service["ports"][0]["port"], 8080);
    let args = strings(&c["args"]);
    assert_eq!(after(&args, "--listen"), "0.0.0.0:8080");
    assert_eq!(after(&args, "--shards"), "$(BARRAGE_SHARDS)");
    assert!(c["readinessProbe"].is_object(), "kubectl wait waits for the collector to listen");
    assert_eq!(collector["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"], "barrage-results");
}

#[test]
fn k8s_scenario_configmap_is_the_albums_example_byte_for_byte() {
    let Some(docs) = manifests(&example_values(), false) else { return };
    let files = configmap_files(by_name(&docs, "ConfigMap", "barrage-scenario"));
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/albums");
    assert_eq!(files.keys().collect::<Vec<_>>(), ["albums.toml", "artists.csv", "nmtb.png"]);
    for (name, bytes) in &files {
        assert_eq!(bytes, &std::fs::read(example.join(name)).unwrap(), "{name} differs from examples/albums");
    }
}

/// A ConfigMap's files as its volume shows them: `data` as text, `binaryData` decoded.
fn configmap_files(map: &Value) -> BTreeMap<String, Vec<u8>> {
    use base64::Engine;
    let mut files = BTreeMap::new();
    for (name, text) in map["data"].as_object().unwrap() {
        files.insert(name.clone(), text.as_str().unwrap().as_bytes().to_vec());
    }
    for (name, b64) in map["binaryData"].as_object().into_iter().flatten() {
        files.insert(name.clone(), base64::engine::general_purpose::STANDARD.decode(b64.as_str().unwrap()).unwrap());
    }
    files
}

/// The plan of the comment above the shards' args in shards.yaml: a scenario's args.
fn scenario_args() -> Vec<String> {
    let text = read(&k8s_file("shards.yaml"));
    let start = text.find("#   args:\n").expect("the scenario's args in a comment of shards.yaml");
    text[start..].lines().skip(1).map_while(|l| l.trim_start().strip_prefix("#     - ")).map(str::to_string).collect()
}

/// Runs the collector and the shards of `docs` locally as the kubelet would (the shards with
/// JOB_COMPLETION_INDEX 0..N-1, each pod with its own emptyDir under `tmp`), with `edits` to
/// the plan's variables and `args` for the plan when given. The collector listens on a free
/// loopback port instead of the Service's 8080, and the shards report to it there. The
/// collector's report (its log) and `barrage report` of the copies it kept, as JSON.
fn run_fleet(docs: &[Value], edits: &[(&str, String)], args: Option<Vec<String>>, tmp: &Path) -> (Value, String) {
    let bin = tmp.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_barrage"), bin.join("barrage")).unwrap();
    // The ConfigMap's volume.
    let scenario = tmp.join("scenario");
    std::fs::create_dir(&scenario).unwrap();
    for (name, bytes) in configmap_files(by_name(docs, "ConfigMap", "barrage-scenario")) {
        std::fs::write(scenario.join(name), bytes).unwrap();
    }
    let results = tmp.join("results");
    std::fs::create_dir(&results).unwrap();
    let collector =
        Pod::of(by_name(docs, "Job", "barrage-collector"), &[], &bin, &BTreeMap::from([("results", results)]));
    let argv: Vec<String> = collector.argv(&[]).into_iter().map(|a| a.replace("0.0.0.0:8080", "127.0.0.1:0")).collect();
    let (dir, html) = (PathBuf::from(after(&argv, "--dir")), after(&argv, "--html").to_string());
    let collecting = collector.spawn(argv, &[], tmp);
    let url = collector_url(&tmp.join("pod-collector.log"));
    let mut shards = by_name(docs, "Job", "barrage-shards").clone();
    if let Some(args) = args {
        shards["spec"]["template"]["spec"]["containers"][0]["args"] = json!(args);
    }
    let n = shards["spec"]["completions"].as_u64().unwrap();
    let mut children = Vec::new();
    for i in 0..n {
        let work = tmp.join(format!("pod-{i}"));
        std::fs::create_dir(&work).unwrap();
        let volumes = BTreeMap::from([("work", work.clone()), ("scenario", scenario.clone())]);
        let pod = Pod::of(&shards, edits, &bin, &volumes);
        let argv = pod.argv(&[("JOB_COMPLETION_INDEX", i.to_string())]);
        assert!(argv.iter().any(|a| a == "--rendezvous"), "the shard starts when the collector says: {argv:?}");
        let argv = argv.into_iter().map(|a| a.replace("http://barrage-collector:8080/", &url)).collect();
        children.push(pod.spawn(argv, &[("JOB_COMPLETION_INDEX", i.to_string())], tmp));
    }
    for (i, child) in children.into_iter().enumerate() {
        let (out, status) = child.wait(Duration::from_secs(90));
        assert!(status.success(), "shard {i} ({status}): {out}");
    }
    let (text, status) = collecting.wait(Duration::from_secs(60));
    assert!(status.success(), "the collector ({status}): {text}");
    assert!(read(Path::new(&html)).contains("<html"));
    let files: Vec<PathBuf> = (0..n).map(|i| dir.join(format!("shard-{i}.brg"))).collect();
    let json = Command::new(env!("CARGO_BIN_EXE_barrage"))
        .arg("report")
        .args(&files)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(json.status.success(), "{}", String::from_utf8_lossy(&json.stderr));
    (serde_json::from_slice(&json.stdout).unwrap(), text)
}

/// The collector's address, from the first line of its log once it is there.
fn collector_url(log: &Path) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if let Some(url) = text.split_whitespace().find(|w| w.starts_with("http://")) {
            return url.to_string();
        }
        assert!(Instant::now() < deadline, "the collector never said where it listens: {text}");
        // Polls the collector's log for its first line; synchronises nothing else.
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn k8s_shards_run_locally_as_the_kubelet_would_and_merge_exactly() {
    let Some(docs) = manifests(&example_values(), true) else { return };
    let o = origin(ServeConfig::default());
    let tmp = tempfile::tempdir().unwrap();
    // What a user edits: the plan's variables.
    let edits = [("BARRAGE_URL", o.url()), ("BARRAGE_RATE", "300".to_string()), ("BARRAGE_COUNT", "450".to_string())];
    let (json, text) = run_fleet(&docs, &edits, None, tmp.path());
    assert_eq!(json["requests"]["total"], 450, "{}", json["requests"]);
    assert_eq!(stats_requests(o.addr()), 450, "the origin's count");
    assert_three_shards(&json, &text, 150);
}

// Found here first: split into 3 shards, the album scenario failed each shard's workload
// check ("asked 0.0% of the requests as phase-2/get-album, got 31.8%": a check of rounds of
// targets applied to a scenario's flows) and each shard's header asked for the whole run's
// flows ("150 of the 500 flows asked"): a shard's groups now say its own part.
#[test]
fn k8s_shards_run_the_scenario_of_the_configmap() {
    let Some(docs) = manifests(&example_values(), true) else { return };
    let o = origin(ServeConfig::default());
    let tmp = tempfile::tempdir().unwrap();
    // The comment's args, the scenario's base pointed at the origin.
    let base = o.url().trim_end_matches('/').to_string();
    let args: Vec<String> =
        scenario_args().into_iter().map(|a| a.replace("http://app.default.svc.cluster.local:8080", &base)).collect();
    assert_eq!(args[..2], ["--scenario", "/etc/barrage/scenario/albums.toml"]);
    assert!(args.contains(&format!("base={base}")), "{args:?}");
    let (json, text) = run_fleet(&docs, &[], Some(args), tmp.path());
    // 30 workers over the shards, 50 albums each, a POST and a GET per album; all succeed.
    assert_eq!(json["requests"]["total"], 3000, "{}", json["requests"]);
    assert_eq!(stats_requests(o.addr()), 3000, "the origin's count");
    assert_eq!(json["shards"].as_array().map(Vec::len), Some(3), "{text}");
    assert_eq!(json["requests"]["failed"].as_u64().unwrap_or(0), 0, "{}", json["requests"]);
}

#[test]
fn k8s_collector_command_runs_collect_in_a_new_directory_per_run() {
    let Some(docs) = manifests(&example_values(), true) else { return };
    let tmp = tempfile::tempdir().unwrap();
    // A stand-in for the image's barrage that notes its arguments: the wrapper's own work
    // (a new directory per run) is what is checked here; the real collector runs in
    // run_fleet.
    let bin = tmp.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let noted = tmp.path().join("argv");
    let stub = format!("#!/bin/sh\nprintf '%s\\n' \"$@\" > '{}'\n", noted.display());
    std::fs::write(bin.join("barrage"), stub).unwrap();
    let executable = std::os::unix::fs::PermissionsExt::from_mode(0o755);
    std::fs::set_permissions(bin.join("barrage"), executable).unwrap();
    let volume = tmp.path().join("volume");
    std::fs::create_dir(&volume).unwrap();
    let pod =
        Pod::of(by_name(&docs, "Job", "barrage-collector"), &[], &bin, &BTreeMap::from([("results", volume.clone())]));
    let run = || pod.spawn(pod.argv(&[]), &[], tmp.path()).wait(Duration::from_secs(30));
    let (out, status) = run();
    assert!(status.success(), "{out}");
    let dir = volume.join("20300101T000000Z");
    assert!(dir.is_dir(), "the run's directory is made");
    let dir = dir.display().to_string();
    let expected = [
        "collect",
        "--shards",
        "3",
        "--listen",
        "0.0.0.0:8080",
        "--dir",
        &dir,
        "--html",
        &format!("{dir}/report.html"),
    ];
    assert_eq!(read(&noted).lines().collect::<Vec<_>>(), expected);
    // The same BARRAGE_RUN again: refused before collect starts.
    std::fs::remove_file(&noted).unwrap();
    let (out, status) = run();
    assert_eq!(status.code(), Some(2), "{out}");
    assert!(out.contains("exists: give each run its own BARRAGE_RUN"), "{out}");
    assert!(!noted.exists(), "collect did not start");
}

/// deploy/k8s/Dockerfile's stages: each a list of (instruction, arguments), comments left
/// out and continued lines joined.
fn dockerfile_stages() -> Vec<Vec<(String, String)>> {
    let text = read(&k8s_file("Dockerfile")).replace("\\\n", " ");
    let mut stages: Vec<Vec<(String, String)>> = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let (instruction, args) = line.split_once(' ').unwrap_or((line, ""));
        if instruction == "FROM" {
            stages.push(Vec::new());
        }
        if let Some(stage) = stages.last_mut() {
            stage.push((instruction.to_string(), args.split_whitespace().collect::<Vec<_>>().join(" ")));
        }
    }
    stages
}

/// The arguments of a stage's instructions named `instruction`.
fn instructions<'a>(stage: &'a [(String, String)], instruction: &str) -> Vec<&'a str> {
    stage.iter().filter(|(i, _)| i == instruction).map(|(_, a)| a.as_str()).collect()
}

/// A builder that can build and run the image here: docker with a daemon, or podman.
fn image_builder() -> Option<&'static str> {
    let works = |b: &str| Command::new(b).arg("info").output().is_ok_and(|o| o.status.success());
    ["docker", "podman"].into_iter().find(|b| program_path(b).is_some() && works(b))
}

#[test]
fn k8s_image_builds_from_the_repository() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let stages = dockerfile_stages();
    assert_eq!(stages.len(), 2, "a build stage and a runtime stage");
    let (build, runtime) = (&stages[0], &stages[1]);
    // The same Debian in both (the binary links against the build's glibc).
    assert!(
        instructions(build, "FROM")[0].starts_with("rust:")
            && instructions(build, "FROM")[0].ends_with("-bookworm AS build")
    );
    assert_eq!(instructions(runtime, "FROM"), ["debian:bookworm-slim"]);
    assert_eq!(instructions(build, "WORKDIR"), ["/src"]);
    assert_eq!(instructions(build, "COPY"), [". ."]);
    let steps = instructions(build, "RUN");
    assert_eq!(steps, ["cargo build --release --locked --bin barrage"]);
    assert_eq!(instructions(runtime, "COPY"), ["--from=build /src/target/release/barrage /usr/local/bin/barrage"]);
    // The manifests' user.
    assert_eq!(instructions(runtime, "USER"), [format!("{UID}:{UID}")]);
    let setup = instructions(runtime, "RUN").join(" ");
    assert!(setup.contains(&format!("--uid {UID}")) && setup.contains(&format!("--gid {UID}")), "{setup}");
    // The build context: all but the build's output and git's.
    let ignored = read(&root.join(".dockerignore"));
    let patterns: Vec<&str> = ignored.lines().filter(|l| !l.is_empty() && !l.starts_with('#')).collect();
    assert!(patterns.contains(&"target/"), "{patterns:?}");
    for needed in ["Cargo.toml", "Cargo.lock", "crates", "schema", "tests"] {
        assert!(!patterns.iter().any(|p| needed.starts_with(p.trim_end_matches('/'))), "{needed} is left out");
    }
    if let Some(builder) = image_builder() {
        let tag = format!("barrage-k8s-test:{}", std::process::id());
        let built = Command::new(builder)
            .args(["build", "-f", "deploy/k8s/Dockerfile", "-t", &tag, "."])
            .current_dir(root)
            .status()
            .unwrap();
        assert!(built.success(), "{builder} build");
        let run = Command::new(builder)
            .args(["run", "--rm", "--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges", &tag])
            .arg("--version")
            .output()
            .unwrap();
        let _ = Command::new(builder).args(["rmi", &tag]).output();
        assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
        return;
    }
    // No builder here: the build stage's step, run in the repository (the context /src
    // stands for) in the test profile: `--locked` and the binary's name checked, the code
    // built as this test's binary was (a cold release build would take CI's 2 cores most of
    // ten minutes, and compiles the same code); then the libraries that binary needs.
    println!("no docker daemon or podman: running the Dockerfile's build step with cargo, without --release");
    let step = steps[0].replace(" --release", "");
    let out = Command::new("sh").args(["-c", &step]).current_dir(root).output().unwrap();
    assert!(out.status.success(), "{step}: {}", String::from_utf8_lossy(&out.stderr));
    let binary = PathBuf::from(env!("CARGO_BIN_EXE_barrage"));
    let version = Command::new(&binary).arg("--version").output().unwrap();
    assert!(version.status.success() && String::from_utf8_lossy(&version.stdout).starts_with("barrage "));
    // It needs nothing debian:bookworm-slim lacks: glibc's own libraries and libgcc_s.
    let ldd = Command::new("ldd").arg(&binary).output().unwrap();
    for line in String::from_utf8_lossy(&ldd.stdout).lines() {
        let lib = line.split_whitespace().next().unwrap_or_default();
        let glibc = ["linux-vdso", "libc.", "libm.", "libgcc_s.", "libpthread.", "libdl.", "librt.", "ld-linux"];
        assert!(glibc.iter().any(|g| lib.contains(g)), "the binary needs {lib}, not in the runtime image");
    }
}

#[test]
fn kubelet_expansion_follows_kubernetes_rules() {
    let env = BTreeMap::from([("A".to_string(), "x".to_string()), ("B".to_string(), "$(A)".to_string())]);
    for (input, expanded) in [
        ("$(A)/$(A)", "x/x"),
        ("$(B)", "$(A)"),
        ("$$(A)", "$(A)"),
        ("$(MISSING)", "$(MISSING)"),
        ("$((n + 1))", "$((n + 1))"),
        ("$1 \"$@\" $?", "$1 \"$@\" $?"),
        ("$(A", "$(A"),
        ("a$", "a$"),
    ] {
        assert_eq!(kubelet_expand(input, &env), expanded, "{input}");
    }
}

/// A Job's pod template, as the kubelet would run its first container here: the command and
/// args with `$(NAME)` expanded from the container's environment, and each volume's mount
/// path standing for a local directory.
struct Pod {
    command: Vec<String>,
    env: Vec<(String, String)>,
    /// Mount path, local directory.
    mounts: Vec<(String, PathBuf)>,
    working_dir: Option<String>,
    bin: PathBuf,
}

impl Pod {
    /// The pod of `job`, with the values of the variables named in `edits` replaced, and
    /// its volumes (by name) standing for the directories of `volumes`.
    fn of(job: &Value, edits: &[(&str, String)], bin: &Path, volumes: &BTreeMap<&str, PathBuf>) -> Pod {
        let container = &job["spec"]["template"]["spec"]["containers"][0];
        let mounts = container["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|m| {
                let dir = volumes.get(m["name"].as_str().unwrap())?;
                Some((m["mountPath"].as_str().unwrap().to_string(), dir.clone()))
            })
            .collect();
        let mut command = strings(&container["command"]);
        command.extend(strings(&container["args"]));
        let env = container["env"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                let name = e["name"].as_str().unwrap().to_string();
                let edited = edits.iter().find(|(n, _)| *n == name).map(|(_, v)| v.clone());
                (name, edited.unwrap_or_else(|| e["value"].as_str().unwrap().to_string()))
            })
            .collect();
        let working_dir = container["workingDir"].as_str().map(str::to_string);
        Pod { command, env, mounts, working_dir, bin: bin.to_path_buf() }
    }

    /// A path in the container as a local one: under a mount path, under its directory.
    fn local(&self, value: &str) -> String {
        for (mount, dir) in &self.mounts {
            match value.strip_prefix(mount.as_str()) {
                Some(rest) if rest.is_empty() || rest.starts_with('/') => return format!("{}{rest}", dir.display()),
                _ => {}
            }
        }
        value.to_string()
    }

    /// The container's environment with `extra` variables (the Job controller's): the
    /// kubelet expands each value with those defined before it.
    fn environment(&self, extra: &[(&str, String)]) -> BTreeMap<String, String> {
        let mut env = BTreeMap::new();
        for (name, value) in extra.iter().map(|(n, v)| (n.to_string(), v.clone())).chain(self.env.iter().cloned()) {
            let value = kubelet_expand(&value, &env);
            env.insert(name, value);
        }
        env
    }

    /// The command and args as the kubelet runs them (expanded with all the variables),
    /// paths in the volumes made local.
    fn argv(&self, extra: &[(&str, String)]) -> Vec<String> {
        let env = self.environment(extra);
        self.command.iter().map(|a| self.local(&kubelet_expand(a, &env))).collect()
    }

    /// Starts `argv` in the pod's environment and working directory, with no home to keep a
    /// history in (as the image's user), its output into a file under `dir`.
    fn spawn(&self, argv: Vec<String>, extra: &[(&str, String)], dir: &Path) -> Running {
        let env = self.environment(extra);
        let log = dir.join(format!("pod-{}.log", env.get("JOB_COMPLETION_INDEX").map_or("collector", |s| s.as_str())));
        let path = format!("{}:/usr/local/bin:/usr/bin:/bin", self.bin.display());
        let mut cmd = Command::new(&argv[0]);
        // A home under the test's own directory that is never made: missing on any machine.
        cmd.args(&argv[1..]).env_clear().env("PATH", path).env("HOME", dir.join("no-home")).envs(&env);
        if let Some(wd) = &self.working_dir {
            cmd.current_dir(self.local(wd));
        }
        spawn_logged(&mut cmd, log)
    }
}

/// Kubernetes' expansion of `$(NAME)` in env values, command and args: a defined name is
/// replaced by its value, an undefined one left as written, `$$` is a literal `$`, and any
/// other `$` stays (k8s.io/kubernetes third_party/forked/golang/expansion).
fn kubelet_expand(input: &str, env: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = input;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(close) = after.strip_prefix('(').and_then(|r| r.find(')')) {
            let name = &after[1..=close];
            match env.get(name) {
                Some(value) => out.push_str(value),
                None => out.push_str(&format!("$({name})")),
            }
            rest = &after[close + 2..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}
