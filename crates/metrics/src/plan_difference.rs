//! What differs between the plans of two shards that should be one run's, for people:
//! `barrage report` refusing to merge them and the collector refusing a shard both name it
//! (the plan digest says only that they differ).

use serde_json::Value;

/// The plan view's values of the load machine rather than of the run (barrage_plan's
/// `Local` values: its source address, threads and in-flight bound): the digest leaves them
/// out, and so does the difference.
const LOCAL: [&str; 3] = ["bind", "threads", "load.open.max_in_flight"];

/// The most differences named; the rest are counted.
const NAMED: usize = 3;

/// The longest value shown.
const VALUE_CHARS: usize = 48;

/// What differs between the plans of two results headers' settings (`settings_json`): the
/// first settings that do, as `load.open.pacer.constant_per_sec 60.0, not 50.0`; when the
/// view shows none (a target past the first, which only the digest covers), that.
pub fn plan_difference(first: &str, other: &str) -> String {
    let plan = |s: &str| serde_json::from_str::<Value>(s).map(|v| v["plan"].clone()).unwrap_or_default();
    let (first, other) = (plan(first), plan(other));
    if first.is_null() || other.is_null() {
        return "URLs, load, duration or other flags differ".into();
    }
    let mut found = Vec::new();
    walk("", &other, &first, &mut found);
    match found.len() {
        0 => "the targets past the first differ".into(),
        n if n > NAMED => format!("{} and {} more", found[..NAMED].join("; "), n - NAMED),
        _ => found.join("; "),
    }
}

/// Every leaf where `a` and `b` differ, under `path`, as `path A, not B`.
fn walk(path: &str, a: &Value, b: &Value, found: &mut Vec<String>) {
    if LOCAL.contains(&path) || a == b {
        return;
    }
    let at = |key: &str| if path.is_empty() { key.to_string() } else { format!("{path}.{key}") };
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys().filter(|k| !x.contains_key(*k))).collect();
            keys.sort();
            for k in keys {
                walk(&at(k), x.get(k).unwrap_or(&Value::Null), y.get(k).unwrap_or(&Value::Null), found);
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                walk(&format!("{path}[{i}]"), p, q, found);
            }
        }
        _ => found.push(format!("{path} {}, not {}", shown(a), shown(b))),
    }
}

/// A value in a line: compact JSON, cut short.
fn shown(v: &Value) -> String {
    let text = match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    match text.char_indices().nth(VALUE_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(rate: f64, threads: u32, url: &str) -> String {
        serde_json::json!({ "mode": "run", "plan": {
            "threads": threads,
            "load": { "open": { "max_in_flight": threads * 10, "pacer": { "constant_per_sec": rate } } },
            "targets": [{ "url": url }],
        }})
        .to_string()
    }

    #[test]
    fn names_what_differs_and_not_what_the_machine_may_differ_in() {
        let (a, b) = (settings(50.0, 2, "http://a/"), settings(60.0, 8, "http://a/"));
        assert_eq!(plan_difference(&a, &b), "load.open.pacer.constant_per_sec 60.0, not 50.0");
        let c = settings(50.0, 4, "http://b/");
        assert_eq!(plan_difference(&a, &c), "targets[0].url http://b/, not http://a/");
        assert_eq!(plan_difference(&a, &settings(50.0, 9, "http://a/")), "the targets past the first differ");
        assert_eq!(plan_difference("{}", &a), "URLs, load, duration or other flags differ");
    }
}
