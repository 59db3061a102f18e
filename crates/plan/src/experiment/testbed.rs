//! A case's testbed settings (`testbed = "TOPOLOGY"` and the `testbed-…` keys beside it),
//! taken out of its settings before the rest become `run` flags: they say what the case
//! runs against, not how it loads it.

use super::Settings;

/// A case's testbed: `testbed = "haproxy-lb"`, `testbed-tls = true`, `testbed-backends = 3`,
/// `testbed-memory = "64m"`, `testbed-eviction = "allkeys-lru"`, `testbed-purge = true`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TestbedSetting {
    /// The topology's name.
    pub topology: String,
    /// HTTPS at the fronts and origins.
    pub tls: bool,
    /// Origins (1..=32); `None`: the topology's default.
    pub backends: Option<u32>,
    /// `testbed-balance = "uri-hash"`: how balancers spread requests; `None`: round robin.
    pub balance: Option<String>,
    /// `testbed-weights = [3, 1]`: the origins' weights at the balancers.
    pub weights: Vec<u32>,
    /// `testbed-shape = "latency=100ms,capacity=8"` (or a list): the origins' shapes, as
    /// `testbed up --shape` takes them.
    pub shapes: Vec<String>,
    /// The caches' size in bytes (`testbed-memory`, a size such as "64m" or a number of
    /// bytes).
    pub memory: Option<u64>,
    /// redis-server's eviction policy, as Redis names it (`testbed-eviction`).
    pub eviction: Option<String>,
    /// Empty the testbed's caches before each repeat of the case (`testbed-purge`).
    pub purge: bool,
}

/// Takes the `testbed…` settings out of a case's settings. Each is taken, and refused, in
/// the order written here, so a case with several bad ones names the same one first.
pub(super) fn take_testbed(settings: &mut Settings) -> Result<Option<TestbedSetting>, String> {
    let purge = take_bool(settings, "testbed-purge")?;
    let memory = take_memory(settings)?;
    let eviction = take_text(settings, "testbed-eviction", "a Redis policy name such as \"allkeys-lru\"")?;
    let sized = memory.is_some() || eviction.is_some() || purge;
    let tls = take_bool(settings, "testbed-tls")?;
    let backends = match settings.remove("testbed-backends") {
        None => None,
        Some(toml::Value::Integer(n)) if (1..=32).contains(&n) => Some(n as u32),
        Some(v) => return Err(format!("testbed-backends = {v}: expected a number of origins from 1 to 32")),
    };
    let balance = take_text(settings, "testbed-balance", "\"roundrobin\", \"leastconn\", \"iphash\" or \"uri-hash\"")?;
    let weights = take_weights(settings)?;
    let shapes = take_shapes(settings)?;
    let extras = balance.is_some() || !weights.is_empty() || !shapes.is_empty() || sized;
    match settings.remove("testbed") {
        None if backends.is_some() || tls || extras => Err(
            "testbed-backends, testbed-tls, testbed-balance, testbed-weights, testbed-shape, testbed-memory, testbed-eviction and testbed-purge go with testbed = \"TOPOLOGY\""
                .into(),
        ),
        None => Ok(None),
        Some(toml::Value::String(topology)) => {
            Ok(Some(TestbedSetting { topology, tls, backends, balance, weights, shapes, memory, eviction, purge }))
        }
        Some(v) => Err(format!("testbed = {v}: expected a topology name such as \"varnish\"")),
    }
}

/// A switch (`testbed-tls`, `testbed-purge`): false when not given.
fn take_bool(settings: &mut Settings, key: &str) -> Result<bool, String> {
    match settings.remove(key) {
        None | Some(toml::Value::Boolean(false)) => Ok(false),
        Some(toml::Value::Boolean(true)) => Ok(true),
        Some(v) => Err(format!("{key} = {v}: expected true or false")),
    }
}

/// A name passed on as written (`testbed-eviction`, `testbed-balance`); the testbed judges
/// it, since it knows what its servers accept.
fn take_text(settings: &mut Settings, key: &str, expected: &str) -> Result<Option<String>, String> {
    match settings.remove(key) {
        None => Ok(None),
        Some(toml::Value::String(s)) => Ok(Some(s)),
        Some(v) => Err(format!("{key} = {v}: expected {expected}")),
    }
}

/// `testbed-memory`: a size such as "64m", or a number of bytes.
fn take_memory(settings: &mut Settings) -> Result<Option<u64>, String> {
    match settings.remove("testbed-memory") {
        None => Ok(None),
        Some(toml::Value::Integer(n)) if n > 0 => Ok(Some(n as u64)),
        Some(toml::Value::String(s)) => match barrage_metrics::units::parse_size(&s) {
            Ok(n) if n > 0 => Ok(Some(n)),
            _ => Err(format!("testbed-memory = {s:?}: expected a size such as \"64m\" or \"1g\"")),
        },
        Some(v) => Err(format!("testbed-memory = {v}: expected a size such as \"64m\" or \"1g\"")),
    }
}

/// `testbed-weights = [3, 1]`: one weight from 1 to 256 per origin.
fn take_weights(settings: &mut Settings) -> Result<Vec<u32>, String> {
    match settings.remove("testbed-weights") {
        None => Ok(Vec::new()),
        Some(toml::Value::Array(a)) if !a.is_empty() => a
            .iter()
            .map(|w| match w {
                toml::Value::Integer(n) if (1..=256).contains(n) => Ok(*n as u32),
                _ => Err(format!(
                    "testbed-weights = {}: expected a list of weights from 1 to 256, one per origin ([3, 1])",
                    toml::Value::Array(a.clone())
                )),
            })
            .collect(),
        Some(v) => {
            Err(format!("testbed-weights = {v}: expected a list of weights from 1 to 256, one per origin ([3, 1])"))
        }
    }
}

/// `testbed-shape`: one shape for every origin, or a list of them.
fn take_shapes(settings: &mut Settings) -> Result<Vec<String>, String> {
    match settings.remove("testbed-shape") {
        None => Ok(Vec::new()),
        Some(toml::Value::String(s)) => Ok(vec![s]),
        Some(toml::Value::Array(a)) if a.iter().all(|v| v.is_str()) => {
            Ok(a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
        }
        Some(v) => Err(format!(
            "testbed-shape = {v}: expected a shape such as \"latency=100ms,capacity=8\", or a list of them"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::super::Experiment;

    #[test]
    fn testbed_shapes_balance_and_weights_are_case_settings() {
        let text = r#"
[base]
url = "{haproxy-lb}/kv/{id}"
testbed = "haproxy-lb"
testbed-backends = 2
testbed-balance = "uri-hash"
testbed-weights = [3, 1]
[factors.origin]
fast = { testbed-shape = "latency=1ms" }
slow = { testbed-shape = ["latency=100ms,capacity=8+64", "origin-2:latency=200ms"] }
"#;
        let e = Experiment::parse(text, "t").unwrap();
        let cases = e.cases();
        let t = e.case_flags(&cases[1]).unwrap().testbed.unwrap();
        assert_eq!((t.balance.as_deref(), t.weights.as_slice()), (Some("uri-hash"), &[3, 1][..]));
        assert_eq!(t.shapes, ["latency=100ms,capacity=8+64", "origin-2:latency=200ms"]);
        assert_eq!(e.case_flags(&cases[0]).unwrap().testbed.unwrap().shapes, ["latency=1ms"]);
        for (setting, want) in [
            ("testbed-shape = 3", "testbed-shape = 3: expected a shape"),
            ("testbed-weights = [0]", "testbed-weights = [0]: expected a list of weights"),
            ("testbed-balance = 1", "testbed-balance = 1: expected"),
        ] {
            let text = format!("[base]\nurl = \"http://a/\"\ntestbed = \"direct\"\n{setting}\n");
            let e = Experiment::parse(&text, "t").unwrap();
            let err = e.case_flags(&e.cases()[0]).unwrap_err();
            assert!(err.starts_with(want), "{err}");
        }
    }

    #[test]
    fn testbed_memory_eviction_and_purge_are_testbed_settings() {
        let case = |settings: &str| {
            let text = format!("[base]\nurl = \"http://a/\"\n{settings}\n[factors.f]\nx = {{}}\n");
            let e = Experiment::parse(&text, "t").unwrap();
            e.case_flags(&e.cases()[0])
        };
        let c = case(
            "testbed = \"redis\"\ntestbed-memory = \"64mb\"\ntestbed-eviction = \"allkeys-lru\"\ntestbed-purge = true",
        )
        .unwrap();
        let t = c.testbed.unwrap();
        assert_eq!((t.memory, t.eviction.as_deref(), t.purge), (Some(64 << 20), Some("allkeys-lru"), true));
        assert!(!c.flags.iter().any(|f| f.starts_with("--testbed")), "{:?}", c.flags);
        assert_eq!(
            case("testbed = \"squid\"\ntestbed-memory = 1048576").unwrap().testbed.unwrap().memory,
            Some(1 << 20)
        );
        for (settings, error) in [
            ("testbed-purge = true", "go with testbed = \"TOPOLOGY\""),
            ("testbed = \"varnish\"\ntestbed-memory = \"lots\"", "testbed-memory = \"lots\": expected a size"),
            ("testbed = \"varnish\"\ntestbed-purge = 1", "testbed-purge = 1: expected true or false"),
        ] {
            let e = case(settings).unwrap_err();
            assert!(e.contains(error), "{settings}: {e}");
        }
    }
}
