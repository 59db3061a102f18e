//! Target files (Vegeta's text format and JSON lines) and URL lists, read as `--targets`
//! and `--urls` read them: files built line by line from plausible and hostile parts.

use super::{config, within, words};
use proptest::prelude::*;

/// A URL: mostly well formed, now and then with hostile parts.
fn url() -> impl Strategy<Value = String> {
    let good = prop::sample::select(&["http://127.0.0.1:1/", "https://[::1]:8443/a?b=c", "http://h/obj/{id}"][..]);
    let scheme =
        prop::sample::select(&["http://", "https://", "ftp://", "", "http:/", "HTTP://", "http://user:pw@"][..]);
    let host =
        prop::sample::select(&["127.0.0.1", "[::1]", "example.com", "", "a b", "é.example", "[::1", "h{id}"][..]);
    let port = prop::sample::select(&["", ":80", ":0", ":99999", ":", ":-1", ":8080"][..]);
    let path = prop_oneof![
        prop::sample::select(&["/", "/a?b=c", "/%zz", "/obj/{id}", "", "/a b", "/?token=x#f"][..])
            .prop_map(String::from),
        words::value(),
    ];
    let built = (scheme, host, port, path).prop_map(|(s, h, p, path)| format!("{s}{h}{p}{path}"));
    prop_oneof![9 => good.prop_map(String::from), 1 => built]
}

/// A header line: mostly a valid one.
fn header() -> impl Strategy<Value = String> {
    let name = prop::sample::select(&["Accept", "X-Api-Key", "Content-Type", "Host", "Cookie", "X-A"][..]);
    prop_oneof![
        6 => (name, "[ -~]{0,20}").prop_map(|(k, v)| format!("{k}: {v}")),
        1 => (words::value(), words::value()).prop_map(|(k, v)| format!("{k}: {v}")),
        1 => words::value(),
    ]
}

/// One target of the text format: a request line, headers, now and then a name, a body
/// file or a stray line.
fn text_target() -> impl Strategy<Value = String> {
    let method = prop_oneof![
        9 => prop::sample::select(&["GET", "POST", "PUT", "HEAD", "DELETE", "PATCH"][..]),
        1 => prop::sample::select(&["get", "G ET", "", "GET\u{0}"][..]),
    ];
    let extra = prop_oneof![
        4 => Just(String::new()),
        1 => words::value().prop_map(|n| format!("# name: {n}\n")),
        // Body files by relative name only (none exist): a device such as /dev/zero is read
        // up to the 1 GiB cap, a second per case, so the hostile corpus holds that one.
        1 => "[a-z.]{0,8}".prop_map(|f| format!("@{f}\n")),
        1 => words::value().prop_map(|l| format!("{l}\n")),
    ];
    (method, url(), prop::collection::vec(header(), 0..3), extra).prop_map(|(m, u, headers, extra)| {
        let headers: String = headers.iter().map(|h| format!("{h}\n")).collect();
        format!("{m} {u}\n{headers}{extra}")
    })
}

/// One line of the JSON-lines format: an object with fields of the right and wrong types.
fn json_line() -> impl Strategy<Value = String> {
    use serde_json::{json, Value};
    let headers = prop::collection::vec((header(), prop::collection::vec("[ -~]{0,10}", 0..3)), 0..3)
        .prop_map(|h| Value::Object(h.into_iter().map(|(k, v)| (k, Value::from(v))).collect()));
    let body = prop_oneof![
        prop::collection::vec(any::<u8>(), 0..32).prop_map(|b| {
            use base64::Engine;
            Value::from(base64::engine::general_purpose::STANDARD.encode(b))
        }),
        words::value().prop_map(Value::from),
    ];
    let method = prop_oneof![9 => Just("GET"), 9 => Just("POST"), 1 => Just("G ET"), 1 => Just("")];
    let good = (url(), method, headers, body, words::value())
        .prop_map(|(u, m, h, b, n)| json!({ "url": u, "method": m, "header": h, "body": b, "name": n }).to_string());
    let odd_field = prop_oneof![
        words::value().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        Just(Value::Null),
        prop::collection::vec(words::value(), 0..3).prop_map(Value::from),
    ];
    let key = prop::sample::select(&["url", "method", "header", "body", "name", "x"][..]);
    let odd = prop::collection::vec((key, odd_field), 0..6)
        .prop_map(|fields| Value::Object(fields.into_iter().map(|(k, v)| (k.to_string(), v)).collect()).to_string());
    prop_oneof![4 => good, 2 => odd, 1 => words::value()]
}

/// `text` as `--targets` reads it from a file (either format).
pub(super) fn check(text: &str) {
    read(text, barrage_plan::targets::read_targets);
}

/// `text` as `--urls` reads it from a file.
pub(super) fn check_urls(text: &str) {
    read(text, |path| barrage_plan::targets::read_urls(path, &http::Method::GET));
}

fn read(
    text: &str,
    reader: impl FnOnce(&str) -> Result<Vec<barrage_plan::Target>, barrage_plan::targets::TargetError>,
) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("targets.txt");
    std::fs::write(&path, text).unwrap();
    let path = path.to_str().unwrap();
    let result = within(text, || reader(path));
    if let Err(e) = result {
        assert!(e.to_string().starts_with(path), "the error names the file: {e}");
    }
}

proptest! {
    #![proptest_config(config(400))]

    /// Vegeta's text format.
    #[test]
    fn text_target_files_read_or_fail_cleanly(targets in prop::collection::vec(text_target(), 0..5)) {
        check(&targets.join("\n"));
    }

    /// URL lists.
    #[test]
    fn url_lists_read_or_fail_cleanly(lines in prop::collection::vec(prop_oneof![9 => url(), 1 => words::value()], 0..6)) {
        check_urls(&lines.join("\n"));
    }

    /// JSON lines.
    #[test]
    fn json_target_files_read_or_fail_cleanly(lines in prop::collection::vec(json_line(), 1..6)) {
        check(&lines.join("\n"));
    }
}
