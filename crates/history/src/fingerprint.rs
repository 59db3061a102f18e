//! What makes runs comparable ([`Fingerprint`]) and what is only recorded beside them
//! ([`Environment`]).
//!
//! A fingerprint is a set of labels, as Horreum's fingerprint or Bencher's testbed: runs
//! with the same labels are points of one series. By default they are what the run was
//! (its kind and its place in a study), what it targeted, over what protocol, with what
//! load, a digest of its whole plan, and the machine it ran on. `--label k=v` adds or
//! overrides one, `--label k=` removes one, and `--label k` alone moves the environment
//! fact `k` (`kernel`, `cpu`, `governor`, `version`, `commit`) into it.
//!
//! A target on loopback is named without its port: a testbed's servers listen on free ports,
//! a new one each time it comes up, and its nightly runs must still be one series.

use barrage_metrics::secrets::Redaction;
use barrage_metrics::RunHeader;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// Study labels that tell runs of one series apart rather than series: a repeat of a case
/// is the next point of the case's series.
const NOT_IDENTITY: [&str; 4] = ["repeat", "probe", "stage", "rate"];

/// Longest label value kept (a URL list, a user's text), in bytes.
pub const MAX_LABEL_BYTES: usize = 200;

/// Most labels a fingerprint holds.
pub const MAX_LABELS: usize = 32;

/// The labels that make runs comparable, sorted by name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    /// Name to value.
    pub labels: BTreeMap<String, String>,
}

impl Fingerprint {
    /// The default fingerprint of a run of `kind` (`run`, `sweep`, `experiment`, ...) with
    /// `header` (the first shard's, `merged` with the others), at `study` labels within its
    /// study, then the user's `labels` applied.
    pub fn of(
        kind: &str,
        header: &RunHeader,
        merged: bool,
        study: &[(String, String)],
        labels: &[(String, Option<String>)],
        env: &Environment,
    ) -> Fingerprint {
        let settings: Value = serde_json::from_str(&header.settings_json).unwrap_or(Value::Null);
        // Redacted whatever `--no-redact` said: a history outlives the run, and is kept
        // beside every other run's.
        let redaction = Redaction::strictest([&Redaction::default(), &Redaction::of_settings(&settings)]);
        let mut plan = settings.get("plan").cloned().unwrap_or(Value::Null);
        redaction.json(&mut plan);
        let urls: Vec<String> = header.urls.iter().take(1).map(|u| redaction.url(u).into_owned()).collect();
        let mut f = Fingerprint::default();
        f.set("kind", kind);
        for (k, v) in study.iter().filter(|(k, _)| !NOT_IDENTITY.contains(&k.as_str())) {
            f.set(k, v);
        }
        f.set("target", &target(&plan, &urls));
        f.set("protocol", &protocol(&plan, &urls));
        f.set("load", &load(&plan));
        f.set("plan", &digest(&plan));
        f.set("machine", &env.host);
        if let Some((i, n)) = header.launch.shard.filter(|_| !merged) {
            f.set("shard", &format!("{i}/{n}"));
        }
        f.apply(labels, env);
        f
    }

    /// Applies the user's `--label`s: `k=v` sets, `k=` removes, `k` alone takes the
    /// environment's fact `k`.
    pub fn apply(&mut self, labels: &[(String, Option<String>)], env: &Environment) {
        for (k, v) in labels {
            match v.as_deref() {
                Some("") => {
                    self.labels.remove(k);
                }
                Some(v) => self.set(k, v),
                None => {
                    let fact = env.fact(k).unwrap_or_default();
                    self.set(k, &fact);
                }
            }
        }
    }

    /// Sets label `k`, its value redacted by the built-in rules (a URL's password, a token
    /// in its query): every label, a run's, an imported file's or the user's, goes through
    /// here into a file kept beside every other run's.
    fn set(&mut self, k: &str, v: &str) {
        if self.labels.len() >= MAX_LABELS && !self.labels.contains_key(k) {
            return;
        }
        let v = Redaction::default().text(v);
        self.labels.insert(cut(k, 64), cut(&v, MAX_LABEL_BYTES));
    }

    /// The series' key: `k=v` pairs, sorted, joined by `,` (a value's `,` and `=` escaped).
    pub fn key(&self) -> String {
        let esc = |s: &str| s.replace('\\', "\\\\").replace(',', "\\,").replace('=', "\\=");
        self.labels.iter().map(|(k, v)| format!("{}={}", esc(k), esc(v))).collect::<Vec<_>>().join(",")
    }

    /// Whether every `k=v` of `filter` holds (`k` alone: the label is there).
    pub fn matches(&self, filter: &[(String, Option<String>)]) -> bool {
        filter.iter().all(|(k, v)| match v {
            Some(v) => self.labels.get(k) == Some(v),
            None => self.labels.contains_key(k),
        })
    }
}

/// At most `max` bytes of `s`, cut at a character boundary.
fn cut(s: &str, max: usize) -> String {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

/// The first target, a loopback port masked, and how many more there are.
fn target(plan: &Value, urls: &[String]) -> String {
    let first = urls.first().map(|u| mask_loopback_port(u)).unwrap_or_default();
    let count = plan.get("target_count").and_then(Value::as_u64).unwrap_or(urls.len() as u64);
    match count {
        0 | 1 => first,
        n => format!("{first} +{} more", n - 1),
    }
}

/// `http://127.0.0.1:41234/x` → `http://127.0.0.1:*/x`; other URLs as they are.
pub fn mask_loopback_port(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_string() };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    let (userinfo, hostport) = match authority.rsplit_once('@') {
        Some((u, h)) => (format!("{u}@"), h),
        None => (String::new(), authority),
    };
    let Some((host, port)) = hostport.rsplit_once(':') else { return url.to_string() };
    let loopback =
        host == "localhost" || host == "[::1]" || host.parse::<std::net::Ipv4Addr>().is_ok_and(|a| a.is_loopback());
    if !loopback || port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()) {
        return url.to_string();
    }
    format!("{scheme}://{userinfo}{host}:*{path}")
}

/// `http`, `https`, `https+h2`, `https+h3`, `redis`, ...
fn protocol(plan: &Value, urls: &[String]) -> String {
    let scheme = urls.first().and_then(|u| u.split_once("://")).map_or("?", |(s, _)| s);
    let on = |k: &str| plan.get(k).and_then(Value::as_bool).unwrap_or(false);
    let streams = plan.get("streams").and_then(Value::as_u64).unwrap_or(1);
    match (on("http3"), on("http2") || (streams > 1 && plan.get("kv").is_none_or(Value::is_null))) {
        (true, _) => format!("{scheme}+h3"),
        (false, true) => format!("{scheme}+h2"),
        _ => scheme.to_string(),
    }
}

/// `open 1000/s, d=30s`, `closed c=50, n=10000`, `open 100→2000/s over 60s`.
fn load(plan: &Value) -> String {
    let l = &plan["load"];
    let shape = if let Some(open) = l.get("open") {
        let p = &open["pacer"];
        if let Some(r) = p.get("constant_per_sec") {
            format!("open {r}/s")
        } else if let Some(r) = p.get("ramp_per_sec") {
            format!("open {}→{}/s over {}s", r[0], r[1], p["over_s"])
        } else if let Some(r) = p.get("steps_per_sec") {
            format!("open steps {r}/s of {}s", p["step_s"])
        } else {
            "open".to_string()
        }
    } else if let Some(c) = l.get("closed") {
        format!("closed c={}", c["workers"])
    } else {
        "?".to_string()
    };
    match (plan.get("duration_s").and_then(Value::as_f64), plan.get("requests").and_then(Value::as_u64)) {
        (Some(d), _) => format!("{shape}, d={d}s"),
        (None, Some(n)) => format!("{shape}, n={n}"),
        _ => shape,
    }
}

/// MD5 of the plan as the results file shows it, loopback ports masked and the load
/// machine's own values (threads, source address, in-flight bound) left out, 12 hex digits.
fn digest(plan: &Value) -> String {
    use md5::Digest;
    let mut plan = plan.clone();
    if let Some(map) = plan.as_object_mut() {
        map.remove("threads");
        map.remove("bind");
    }
    if let Some(open) = plan.pointer_mut("/load/open").and_then(Value::as_object_mut) {
        open.remove("max_in_flight");
    }
    mask_urls(&mut plan);
    let hex: String = md5::Md5::digest(plan.to_string().as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
    hex[..12].to_string()
}

fn mask_urls(v: &mut Value) {
    match v {
        Value::String(s) if s.contains("://") => *s = mask_loopback_port(s),
        Value::Array(a) => a.iter_mut().for_each(mask_urls),
        Value::Object(m) => m.values_mut().for_each(mask_urls),
        _ => {}
    }
}

/// Facts of the machine and of barrage recorded with every run, outside its fingerprint.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Environment {
    /// Host name.
    pub host: String,
    /// CPU model, from `/proc/cpuinfo`.
    pub cpu: String,
    /// CPUs online.
    pub cpus: u32,
    /// Kernel release.
    pub kernel: String,
    /// CPU frequency governor of CPU 0, when there is one.
    pub governor: String,
    /// barrage's version.
    pub version: String,
    /// The git commit of the directory barrage ran in, when it is in a repository.
    pub commit: String,
}

impl Environment {
    /// This machine's facts, barrage's `version`, the commit of the working directory.
    pub fn here(version: &str) -> Environment {
        let read = |p: &str| read_small(std::path::Path::new(p)).map(|s| s.trim().to_string()).unwrap_or_default();
        let cpuinfo = read("/proc/cpuinfo");
        let cpu = cpuinfo
            .lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
            .unwrap_or_default();
        Environment {
            host: read("/proc/sys/kernel/hostname"),
            cpu,
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
            kernel: read("/proc/sys/kernel/osrelease"),
            governor: read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
            version: version.to_string(),
            commit: std::env::current_dir().ok().and_then(|d| git_commit(&d)).unwrap_or_default(),
        }
    }

    /// The fact named `name`, for `--label name`.
    pub fn fact(&self, name: &str) -> Option<String> {
        Some(match name {
            "host" | "machine" => self.host.clone(),
            "cpu" => self.cpu.clone(),
            "cpus" => self.cpus.to_string(),
            "kernel" => self.kernel.clone(),
            "governor" => self.governor.clone(),
            "version" => self.version.clone(),
            "commit" => self.commit.clone(),
            _ => return None,
        })
    }
}

/// A small file's text (at most 1 MiB: `/proc/cpuinfo` of a big machine), `None` when it
/// cannot be read.
fn read_small(path: &std::path::Path) -> Option<String> {
    use std::io::Read;
    let mut s = String::new();
    std::fs::File::open(path).ok()?.take(1 << 20).read_to_string(&mut s).ok()?;
    Some(s)
}

/// The commit `HEAD` names in the repository holding `dir`, read from `.git` without running
/// git: a loose ref or a line of `packed-refs`, at most 8 directories up.
fn git_commit(dir: &std::path::Path) -> Option<String> {
    let git = dir.ancestors().take(8).map(|d| d.join(".git")).find(|g| g.is_dir())?;
    let head = read_small(&git.join("HEAD"))?;
    let head = head.trim();
    let hex = |s: &str| (s.len() == 40 && s.bytes().all(|b| b.is_ascii_hexdigit())).then(|| s[..12].to_string());
    let Some(name) = head.strip_prefix("ref: ") else { return hex(head) };
    // A ref name is a path below .git: never one that climbs out of it.
    if name.split('/').any(|c| c == ".." || c.is_empty()) {
        return None;
    }
    if let Some(loose) = read_small(&git.join(name)) {
        return hex(loose.trim());
    }
    let packed = read_small(&git.join("packed-refs"))?;
    packed.lines().find_map(|l| l.strip_suffix(name).and_then(|c| hex(c.trim())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loopback_port_is_masked_and_others_are_kept() {
        for (url, want) in [
            ("http://127.0.0.1:41234/bytes/1k", "http://127.0.0.1:*/bytes/1k"),
            ("http://127.3.4.5:80", "http://127.3.4.5:*"),
            ("https://localhost:8443/?q=1", "https://localhost:*/?q=1"),
            ("http://[::1]:9000/x", "http://[::1]:*/x"),
            ("redis://u:p@127.0.0.1:6379", "redis://u:p@127.0.0.1:*"),
            ("http://example.com:8080/x", "http://example.com:8080/x"),
            ("http://10.0.0.1:8080/", "http://10.0.0.1:8080/"),
            ("http://127.0.0.1/", "http://127.0.0.1/"),
            ("not a url", "not a url"),
        ] {
            assert_eq!(mask_loopback_port(url), want, "{url}");
        }
    }

    fn header(settings: &str, url: &str) -> RunHeader {
        RunHeader {
            settings_json: settings.to_string(),
            urls: vec![url.to_string()],
            ..barrage_metrics::testing::header(0)
        }
    }

    const SETTINGS: &str = r#"{"plan":{"load":{"open":{"max_in_flight":1000,"pacer":{"constant_per_sec":500.0}}},"duration_s":10.0,"threads":2,"targets":[{"url":"http://127.0.0.1:4000/"}],"target_count":1,"http2":false,"http3":false,"streams":1,"kv":null}}"#;

    #[test]
    fn the_same_run_on_another_port_or_thread_count_is_the_same_series() {
        let env = Environment { host: "m1".into(), kernel: "6.1".into(), ..Default::default() };
        let a = Fingerprint::of("run", &header(SETTINGS, "http://127.0.0.1:4000/"), false, &[], &[], &env);
        let other = SETTINGS.replace("4000", "5123").replace("\"threads\":2", "\"threads\":8");
        let b = Fingerprint::of("run", &header(&other, "http://127.0.0.1:5123/"), false, &[], &[], &env);
        assert_eq!(a, b);
        assert_eq!(a.labels["load"], "open 500.0/s, d=10s");
        assert_eq!(a.labels["target"], "http://127.0.0.1:*/");
        assert_eq!(a.labels["protocol"], "http");
        // Another rate is another series.
        let faster = SETTINGS.replace("500.0", "600.0");
        let c = Fingerprint::of("run", &header(&faster, "http://127.0.0.1:4000/"), false, &[], &[], &env);
        assert_ne!(a.key(), c.key());
        // A repeat is a point of its case's series; the case is part of it.
        let study = [("case".to_string(), "TC1".to_string()), ("repeat".to_string(), "2".to_string())];
        let d = Fingerprint::of("experiment", &header(SETTINGS, "http://127.0.0.1:4000/"), false, &study, &[], &env);
        assert_eq!(d.labels.get("case").map(String::as_str), Some("TC1"));
        assert!(!d.labels.contains_key("repeat"));
    }

    #[test]
    fn labels_set_remove_and_take_environment_facts() {
        let env = Environment { host: "m1".into(), kernel: "6.1".into(), ..Default::default() };
        let labels = [
            ("branch".to_string(), Some("main".to_string())),
            ("machine".to_string(), Some(String::new())),
            ("kernel".to_string(), None),
        ];
        let f = Fingerprint::of("run", &header(SETTINGS, "http://127.0.0.1:4000/"), false, &[], &labels, &env);
        assert_eq!(f.labels["branch"], "main");
        assert!(!f.labels.contains_key("machine"));
        assert_eq!(f.labels["kernel"], "6.1");
        assert!(f.matches(&[("branch".into(), Some("main".into())), ("kernel".into(), None)]));
        assert!(!f.matches(&[("branch".into(), Some("dev".into()))]));
    }

    #[test]
    fn a_label_never_holds_a_credential() {
        let mut f = Fingerprint::default();
        f.apply(
            &[("target".into(), Some("http://u:S3CRET-A@127.0.0.1:1/?token=S3CRET-B".into()))],
            &Environment::default(),
        );
        assert!(!f.labels["target"].contains("S3CRET"), "{:?}", f.labels);
    }

    #[test]
    fn a_key_escapes_its_separators_and_values_are_bounded() {
        let mut f = Fingerprint::default();
        f.set("a", "x,y=z");
        f.set("b", &"é".repeat(300));
        assert!(f.key().starts_with("a=x\\,y\\=z,b="));
        assert!(f.labels["b"].len() <= MAX_LABEL_BYTES);
        for i in 0..100 {
            f.set(&format!("k{i}"), "v");
        }
        assert_eq!(f.labels.len(), MAX_LABELS);
    }

    #[test]
    fn a_ref_that_climbs_out_of_git_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let git = dir.path().join(".git");
        std::fs::create_dir_all(git.join("refs/heads")).unwrap();
        let commit = "0123456789abcdef0123456789abcdef01234567";
        std::fs::write(git.join("refs/heads/main"), format!("{commit}\n")).unwrap();
        std::fs::write(git.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        assert_eq!(git_commit(dir.path()).as_deref(), Some("0123456789ab"));
        std::fs::write(git.join("HEAD"), "ref: ../../etc/passwd\n").unwrap();
        assert_eq!(git_commit(dir.path()), None);
        std::fs::write(git.join("HEAD"), format!("{commit}\n")).unwrap();
        // A detached HEAD, found from a directory below the repository's top.
        assert_eq!(git_commit(&dir.path().join("sub")).as_deref(), Some("0123456789ab"));
    }
}
