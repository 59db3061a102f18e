//! One value of a JSON answer, found without building the answer's tree ([`JsonAt`]).
//!
//! A capture or a check reads one value of an answer of up to
//! [`MAX_JUDGED_BODY`](crate::flow::MAX_JUDGED_BODY). A `serde_json::Value` tree costs some
//! 64 bytes a value and 600 an object: 16 MiB of small objects (`[{"a":{"b":0}}, …]`) made
//! a tree of a GiB for each answer judged. So no tree of a whole answer is built:
//!
//! - a JSON Pointer, and the names and indices a JSONPath starts with (`$.items[0].id`,
//!   `$['a b'][-1]`), are followed as the answer is read: the values they pass by are
//!   skipped as they are read, into no memory at all;
//! - what a JSONPath asks beyond them (wildcards, slices, filters, `..`) runs, by
//!   `serde_json_path`, on a tree of the one value they lead to, and so does the JSON text of
//!   an object or array found: a tree built only when its estimated size is within
//!   [`TREE_BUDGET`]; past it the value is not found.
//!
//! The whole answer is read either way, so an answer that is not JSON is still one in
//! which nothing is found, and the work is linear in its size.
//!
//! ```
//! use barrage_plan::json::JsonAt;
//!
//! let body = br#"{"items": [{"id": 1}, {"id": "x", "tags": ["a"]}]}"#;
//! assert_eq!(JsonAt::path("$.items[-1].id").unwrap().find(body).as_deref(), Some("x"));
//! assert_eq!(JsonAt::path("$.items[?@.id == 1].id").unwrap().find(body).as_deref(), Some("1"));
//! assert_eq!(JsonAt::pointer("/items/1/tags").unwrap().find(body).as_deref(), Some(r#"["a"]"#));
//! assert_eq!(JsonAt::path("$.items[*].id").unwrap().find(body), None, "two values, not one");
//! ```

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use serde_json_path::JsonPath;
use std::fmt;
use std::time::Instant;

/// The most memory a tree of a found value may take, estimated before it is built: as
/// much as the most of a body that is kept, so judging an answer never holds more than
/// twice what was kept of it.
pub const TREE_BUDGET: usize = crate::flow::MAX_JUDGED_BODY;

/// Where a JSON value is found in a response body: a JSONPath (RFC 9535) that must select
/// exactly one value, or a JSON Pointer (RFC 6901).
#[derive(Clone, Debug)]
pub struct JsonAt {
    /// As written.
    text: String,
    /// Followed as the answer is read.
    steps: Vec<Step>,
    /// A JSONPath's rest after its leading names and indices, run on a tree of the value
    /// they lead to.
    rest: Option<JsonPath>,
}

/// One step down from a value.
#[derive(Clone, Debug, PartialEq)]
enum Step {
    /// An object's member (a JSONPath name).
    Name(String),
    /// An array's element, counted from the end when negative (a JSONPath index).
    Index(i64),
    /// A JSON Pointer's reference token: an object's member, or an array's element when it
    /// is an index.
    Token(String, Option<usize>),
}

impl JsonAt {
    /// A JSONPath.
    pub fn path(p: &str) -> Result<JsonAt, serde_json_path::ParseError> {
        let whole = JsonPath::parse(p)?;
        let (steps, rest) = match leading_steps(p) {
            (steps, "") => (steps, None),
            // A rest that reads the root (`$` in a filter) must run on the whole answer.
            (steps, rest) if !rest.contains('$') => match JsonPath::parse(&format!("${rest}")) {
                Ok(rest) => (steps, Some(rest)),
                Err(_) => (Vec::new(), Some(whole)),
            },
            _ => (Vec::new(), Some(whole)),
        };
        Ok(JsonAt { text: p.to_string(), steps, rest })
    }

    /// A JSON Pointer; `None` unless it is empty or starts with `/`.
    pub fn pointer(p: &str) -> Option<JsonAt> {
        if !p.is_empty() && !p.starts_with('/') {
            return None;
        }
        let token = |t: &str| {
            let t = t.replace("~1", "/").replace("~0", "~");
            let index = array_index(&t);
            Step::Token(t, index)
        };
        Some(JsonAt { text: p.to_string(), steps: p.split('/').skip(1).map(token).collect(), rest: None })
    }

    /// The one value it selects in `body`, as a capture holds it: a string without its
    /// quotes, anything else as JSON. `None` when there is none (or, for a JSONPath, more
    /// than one), when the body is not JSON, or when a tree it needs is over
    /// [`TREE_BUDGET`].
    pub fn find(&self, body: &[u8]) -> Option<String> {
        self.find_by(body, None)
    }

    /// [`JsonAt::find`], given up (`None`) once `until` has passed: reading 16 MiB of small
    /// values takes some 100 ms, and a step is judged within its request's time.
    pub fn find_by(&self, body: &[u8], until: Option<Instant>) -> Option<String> {
        let raw = follow(body, &self.steps, Deadline(until))?;
        match &self.rest {
            None => text(raw),
            Some(rest) => rest.query(&tree(raw)?).exactly_one().ok().map(value_text),
        }
    }
}

impl fmt::Display for JsonAt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// A pointer's token as an array index, as `serde_json` reads it: digits without a
/// leading zero or sign.
fn array_index(t: &str) -> Option<usize> {
    match t.starts_with('+') || (t.starts_with('0') && t.len() != 1) {
        true => None,
        false => t.parse().ok(),
    }
}

/// Blank space, which RFC 9535 allows around segments and selectors.
const BLANK: [char; 4] = [' ', '\t', '\n', '\r'];

/// The names and indices a valid JSONPath starts with, and the rest of it.
fn leading_steps(p: &str) -> (Vec<Step>, &str) {
    let mut steps = Vec::new();
    let mut rest = p.strip_prefix('$').unwrap_or(p);
    while let Some((step, after)) = step_at(rest) {
        steps.push(step);
        rest = after;
    }
    (steps, rest)
}

/// The segment `s` starts with, when it is one name or index (`.name`, `['name']`,
/// `["name"]`, `[3]`, `[-1]`), and what follows it.
fn step_at(s: &str) -> Option<(Step, &str)> {
    let s = s.trim_start_matches(BLANK);
    if let Some(after) = s.strip_prefix('.') {
        // A shorthand name: letters, `_`, digits after the first, anything beyond ASCII.
        let end =
            after.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || !c.is_ascii())).unwrap_or(after.len());
        return (end > 0).then(|| (Step::Name(after[..end].to_string()), &after[end..]));
    }
    let inner = s.strip_prefix('[')?.trim_start_matches(BLANK);
    let (step, after) = match inner.chars().next()? {
        q @ ('\'' | '"') => {
            let (name, after) = string_literal(&inner[1..], q)?;
            (Step::Name(name), after)
        }
        _ => {
            let end = inner.find(|c: char| !(c == '-' || c.is_ascii_digit())).unwrap_or(inner.len());
            (Step::Index(inner[..end].parse().ok()?), &inner[end..])
        }
    };
    Some((step, after.trim_start_matches(BLANK).strip_prefix(']')?))
}

/// The string literal that `s` starts with, after its opening quote `q`, unescaped; and
/// what follows its closing quote. Its escapes are JSON's (and `\'`), so it is read as a
/// JSON string.
fn string_literal(s: &str, q: char) -> Option<(String, &str)> {
    let mut json = String::from('"');
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => match chars.next()?.1 {
                '\'' => json.push('\''),
                e => json.extend(['\\', e]),
            },
            c if c == q => {
                json.push('"');
                return Some((serde_json::from_str(&json).ok()?, &s[i + 1..]));
            }
            '"' => json.push_str("\\\""),
            c => json.push(c),
        }
    }
    None
}

/// The value `steps` lead to in `json`, read to its end without building a tree; `None`
/// when there is none or `json` is not JSON.
fn follow<'j>(json: &'j [u8], steps: &[Step], deadline: Deadline) -> Option<&'j RawValue> {
    let mut de = serde_json::Deserializer::from_slice(json);
    let mut found = None;
    Follow { steps, found: &mut found, deadline }.deserialize(&mut de).ok()?;
    de.end().ok()?;
    found
}

/// A visitor's visits of the scalars other than strings, which it lets pass.
macro_rules! scalars_pass {
    () => {
        fn visit_bool<E>(self, _: bool) -> Result<(), E> {
            Ok(())
        }
        fn visit_i64<E>(self, _: i64) -> Result<(), E> {
            Ok(())
        }
        fn visit_u64<E>(self, _: u64) -> Result<(), E> {
            Ok(())
        }
        fn visit_f64<E>(self, _: f64) -> Result<(), E> {
            Ok(())
        }
        fn visit_unit<E>(self) -> Result<(), E> {
            Ok(())
        }
    };
}

/// When reading gives up: the clock is read every [`Deadline::EVERY`] elements of an array
/// or object skipped, so that it costs nothing beside the parse.
#[derive(Clone, Copy)]
struct Deadline(Option<Instant>);

impl Deadline {
    const EVERY: usize = 1024;

    /// An error once `until` has passed, looked at on every [`Deadline::EVERY`]th element.
    fn check<E: de::Error>(self, n: usize) -> Result<(), E> {
        match self.0 {
            Some(until) if n.is_multiple_of(Self::EVERY) && Instant::now() >= until => Err(E::custom("out of time")),
            _ => Ok(()),
        }
    }
}

/// Follows `steps` down the value it reads; the value at their end goes to `found`.
struct Follow<'s, 'j> {
    steps: &'s [Step],
    found: &'s mut Option<&'j RawValue>,
    deadline: Deadline,
}

impl<'j> DeserializeSeed<'j> for Follow<'_, 'j> {
    type Value = ();

    fn deserialize<D: Deserializer<'j>>(self, d: D) -> Result<(), D::Error> {
        match self.steps {
            [] => *self.found = Some(<&RawValue>::deserialize(d)?),
            [Step::Index(i), rest @ ..] if *i < 0 => {
                // From the end: the array is read once to count it, then again to the element.
                let raw = <&RawValue>::deserialize(d)?;
                let at = elements(raw, self.deadline)
                    .and_then(|n| i64::try_from(n).ok())
                    .map(|n| n + i)
                    .filter(|at| *at >= 0);
                let steps = |at| [Step::Index(at)].into_iter().chain(rest.iter().cloned()).collect::<Vec<_>>();
                *self.found = at.and_then(|at| follow(raw.get().as_bytes(), &steps(at), self.deadline));
            }
            [step, rest @ ..] => d.deserialize_any(Down { step, rest, found: self.found, deadline: self.deadline })?,
        }
        Ok(())
    }
}

/// Goes one step down a value, skipping what the step does not lead to.
struct Down<'s, 'j> {
    step: &'s Step,
    rest: &'s [Step],
    found: &'s mut Option<&'j RawValue>,
    deadline: Deadline,
}

impl<'j> Visitor<'j> for Down<'_, 'j> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'j>>(self, mut map: A) -> Result<(), A::Error> {
        let name = match self.step {
            Step::Name(n) | Step::Token(n, _) => Some(n.as_str()),
            Step::Index(_) => None,
        };
        for n in 0.. {
            self.deadline.check(n)?;
            let Some(hit) = map.next_key_seed(KeyIs(name))? else { break };
            if hit {
                // Of duplicate names the last counts, as in a tree.
                *self.found = None;
                map.next_value_seed(Follow { steps: self.rest, found: &mut *self.found, deadline: self.deadline })?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'j>>(self, mut seq: A) -> Result<(), A::Error> {
        let at = match self.step {
            Step::Index(i) => usize::try_from(*i).ok(),
            Step::Token(_, i) => *i,
            Step::Name(_) => None,
        };
        for n in 0.. {
            self.deadline.check(n)?;
            let more = match at == Some(n) {
                true => {
                    let follow = Follow { steps: self.rest, found: &mut *self.found, deadline: self.deadline };
                    seq.next_element_seed(follow)?.is_some()
                }
                false => seq.next_element::<IgnoredAny>()?.is_some(),
            };
            if !more {
                break;
            }
        }
        Ok(())
    }

    // A step leads nowhere from a scalar.
    scalars_pass!();
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
}

/// Whether an object's key is this name, read without copying it.
struct KeyIs<'s>(Option<&'s str>);

impl<'j> DeserializeSeed<'j> for KeyIs<'_> {
    type Value = bool;

    fn deserialize<D: Deserializer<'j>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for KeyIs<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a name")
    }

    fn visit_str<E>(self, key: &str) -> Result<bool, E> {
        Ok(self.0 == Some(key))
    }
}

/// How many elements an array has; `None` when `raw` is not one.
fn elements(raw: &RawValue, deadline: Deadline) -> Option<usize> {
    struct Count(Deadline);
    impl<'j> Visitor<'j> for Count {
        type Value = usize;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an array")
        }
        fn visit_seq<A: SeqAccess<'j>>(self, mut seq: A) -> Result<usize, A::Error> {
            let mut n = 0;
            while seq.next_element::<IgnoredAny>()?.is_some() {
                n += 1;
                self.0.check(n)?;
            }
            Ok(n)
        }
    }
    serde_json::Deserializer::from_str(raw.get()).deserialize_any(Count(deadline)).ok()
}

/// A found value as a capture holds it: a string unquoted (read without a tree); anything
/// else as JSON, from its tree.
fn text(raw: &RawValue) -> Option<String> {
    match raw.get().starts_with('"') {
        true => serde_json::from_str(raw.get()).ok(),
        false => tree(raw).as_ref().map(value_text),
    }
}

/// A value of a tree as a capture holds it: a string without its quotes, anything else as
/// JSON.
fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The tree of `raw`, when its estimated size is within [`TREE_BUDGET`]: estimated first,
/// in a read that stops as soon as it is over, so a value too large costs no memory and
/// little time.
fn tree(raw: &RawValue) -> Option<Value> {
    let mut left = TREE_BUDGET;
    let mut de = serde_json::Deserializer::from_str(raw.get());
    Cost(&mut left).deserialize(&mut de).ok()?;
    serde_json::from_str(raw.get()).ok()
}

/// What a tree's parts take, as `serde_json` builds them on a 64-bit machine, over: a
/// value in an array is 32 bytes, in a vector grown by doubling; an object's members are
/// kept in B-tree nodes of 11 keys and values (24 + 32 bytes each), at least half full, the
/// first node whole.
const ELEMENT: usize = 64;
const OBJECT: usize = 640;
const MEMBER: usize = 128;

/// Takes what a value's tree would cost out of the budget it holds; fails once it is spent.
struct Cost<'b>(&'b mut usize);

impl Cost<'_> {
    fn spend<E: de::Error>(&mut self, bytes: usize) -> Result<(), E> {
        *self.0 = self.0.checked_sub(bytes).ok_or_else(|| E::custom("over the tree budget"))?;
        Ok(())
    }
}

impl<'j> DeserializeSeed<'j> for Cost<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'j>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'j> Visitor<'j> for Cost<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'j>>(mut self, mut map: A) -> Result<(), A::Error> {
        self.spend(OBJECT)?;
        while map.next_key_seed(Cost(&mut *self.0))?.is_some() {
            self.spend(MEMBER)?;
            map.next_value_seed(Cost(&mut *self.0))?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'j>>(mut self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Cost(&mut *self.0))?.is_some() {
            self.spend(ELEMENT)?;
        }
        Ok(())
    }

    fn visit_str<E: de::Error>(mut self, s: &str) -> Result<(), E> {
        self.spend(s.len())
    }

    // A scalar lives inside its parent's slot.
    scalars_pass!();
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What a tree of the whole answer found, as `serde_json_path` and `serde_json` read it.
    fn by_tree(at: &str, doc: &Value) -> Option<String> {
        match at.starts_with('$') {
            true => JsonPath::parse(at).unwrap().query(doc).exactly_one().ok().map(value_text),
            false => doc.pointer(at).map(value_text),
        }
    }

    fn find(at: &str, body: &str) -> Option<String> {
        let at = match at.starts_with('$') {
            true => JsonAt::path(at).unwrap(),
            false => JsonAt::pointer(at).unwrap(),
        };
        at.find(body.as_bytes())
    }

    /// JSONPaths and pointers of every form: names and indices (followed as the answer is
    /// read), and the rest (run on a tree of what they lead to, or of the whole answer when
    /// they read the root).
    const QUERIES: &[&str] = &[
        "$",
        "$.a",
        "$.a.b",
        "$['a']",
        "$[\"a\"]['b']",
        "$[0]",
        "$[-1]",
        "$[-9]",
        "$.a[1].b",
        "$.a[-2].id",
        "$['x y']",
        "$[\"it's\"]",
        "$['it\\'s']",
        "$['\\u0061']",
        "$ .a [ 0 ]",
        "$.a[*]",
        "$.a.*.id",
        "$..id",
        "$.a..b",
        "$.a[?@.b == 1]",
        "$[?@.id].id",
        "$.a[0:2]",
        "$.a[::-1][0]",
        "$.a['b','id']",
        "$.a[0,1]",
        "$.a[?@.b == $.id]",
        "$.é",
        "",
        "/a",
        "/a/0",
        "/a/-1",
        "/0",
        "/01",
        "/a~1b",
        "/x y",
        "/a/b/id",
    ];

    const DOCS: &[&str] = &[
        r#"{"a": {"b": 1, "id": "x"}, "id": 1, "x y": [true], "it's": null, "a/b": 2, "é": "e"}"#,
        r#"{"a": [{"b": 1}, {"b": 2, "id": [3]}, {"b": {"id": 4}}], "id": 1}"#,
        r#"[{"id": 7}, {"a": [1, 2]}, "s", 1.5, -0, 1e2]"#,
        r#"{"a": [0, 1, 2], "id": 2}"#,
        r#""top""#,
        " 12 ",
        "[]",
        "{}",
    ];

    #[test]
    fn finds_what_a_tree_of_the_whole_answer_finds() {
        for doc in DOCS {
            let tree: Value = serde_json::from_str(doc).unwrap();
            for q in QUERIES {
                assert_eq!(find(q, doc), by_tree(q, &tree), "{q} in {doc}");
            }
        }
    }

    #[test]
    fn leading_names_and_indices_are_followed_and_the_rest_run_on_a_tree() {
        for (p, steps, rest) in [
            ("$.a['b c'][-1][2]", vec!["a", "b c", "-1", "2"], ""),
            ("$ .a [ 'x' ] [ 0 ]", vec!["a", "x", "0"], ""),
            ("$.a[*].b", vec!["a"], "[*].b"),
            ("$.a..b", vec!["a"], "..b"),
            ("$.a[0,1]", vec!["a"], "[0,1]"),
            ("$.a[1:]", vec!["a"], "[1:]"),
            ("$['it\\'s'].*", vec!["it's"], ".*"),
            ("$[?@.a]", vec![], "[?@.a]"),
        ] {
            let (got, got_rest) = leading_steps(p);
            let got: Vec<String> = got
                .iter()
                .map(|s| match s {
                    Step::Name(n) => n.clone(),
                    Step::Index(i) => i.to_string(),
                    Step::Token(..) => unreachable!(),
                })
                .collect();
            assert_eq!((got, got_rest), (steps.iter().map(|s| s.to_string()).collect(), rest), "{p}");
        }
        // A rest that reads the root runs on the whole answer.
        let at = JsonAt::path("$.a[?@ == $.b]").unwrap();
        assert!(at.steps.is_empty() && at.rest.is_some());
    }

    #[test]
    fn the_last_of_duplicate_names_counts_as_in_a_tree() {
        assert_eq!(find("$.a.b", r#"{"a": {"b": 1}, "a": {"b": 2}}"#).as_deref(), Some("2"));
        assert_eq!(find("$.a.b", r#"{"a": {"b": 1}, "a": 3}"#), None);
    }

    #[test]
    fn nothing_is_found_in_what_is_not_json() {
        for body in [r#"{"a": 1"#, r#"{"a": 1} x"#, "", r#"{"a": 1, "b": [}"#, "\u{feff}{}"] {
            assert_eq!(find("$.a", body), None, "{body}");
        }
        assert_eq!(JsonAt::path("$.a").unwrap().find(b"{\"a\": \"\xff\"}"), None);
        assert!(JsonAt::pointer("a").is_none());
    }

    /// An answer of small objects whose tree would take a GiB: its names and indices are
    /// followed; a query that needs a tree of it finds nothing, and quickly.
    #[test]
    fn a_large_answer_is_read_without_its_tree() {
        let n = 200_000;
        let mut body = String::from("[");
        for i in 0..n {
            body.push_str(&format!("{{\"a\":{{\"b\":{i}}}}},"));
        }
        body.push_str("{\"a\":{\"b\":\"last\"}}]");
        assert_eq!(find("$[0].a.b", &body).as_deref(), Some("0"));
        assert_eq!(find("$[-1].a.b", &body).as_deref(), Some("last"));
        assert_eq!(find("/1234/a/b", &body).as_deref(), Some("1234"));
        assert_eq!(find("$[7].a", &body).as_deref(), Some(r#"{"b":7}"#));
        let started = std::time::Instant::now();
        for q in ["$[?@.a.b == 5].a.b", "$..b", "$"] {
            assert_eq!(find(q, &body), None, "{q}: its tree is over the budget");
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
    }

    #[test]
    fn reading_gives_up_once_its_time_has_passed() {
        let body = format!("[{}1]", "{\"a\":{\"b\":0}},".repeat(100_000));
        let at = JsonAt::path("$[-1]").unwrap();
        let later = Instant::now() + std::time::Duration::from_secs(3600);
        assert_eq!(at.find_by(body.as_bytes(), Some(later)).as_deref(), Some("1"));
        // Past its time, it stops within the first elements rather than reading them all.
        assert_eq!(at.find_by(body.as_bytes(), Some(Instant::now())), None);
        let pointer = JsonAt::pointer("/99999/a/b").unwrap();
        assert_eq!(pointer.find_by(body.as_bytes(), Some(later)).as_deref(), Some("0"));
        assert_eq!(pointer.find_by(body.as_bytes(), Some(Instant::now())), None);
    }

    #[test]
    fn a_tree_is_built_within_its_budget() {
        // 16 bytes of text an object, some 900 of tree: 16 MiB of tree is some 18,000.
        let doc = |n: usize| format!("[{}{{}}]", "{\"a\":{\"b\":0}},".repeat(n));
        assert!(find("$[*].a.b", &doc(1)).is_some());
        assert!(find("$[?@.a.b == 0]", &doc(1000)).is_none(), "found twice");
        assert!(find("$[1000].a.b", &doc(1000)).is_none());
        let count = |n: usize| Some(JsonPath::parse("$[?@.a]").unwrap().query(&tree(&raw(&doc(n)))?).len());
        assert_eq!(count(10_000), Some(10_000));
        assert_eq!(count(20_000), None);
    }

    fn raw(json: &str) -> Box<RawValue> {
        RawValue::from_string(json.to_string()).unwrap()
    }

    fn json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (-3i64..3).prop_map(Value::from),
            prop::sample::select(vec!["", "a", "id", "x y"]).prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map(prop::sample::select(vec!["a", "b", "id", "x y"]), inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_string(), v)).collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn any_answer_gives_what_its_tree_gives(doc in json(), pretty in any::<bool>()) {
            let body = match pretty {
                true => serde_json::to_string_pretty(&doc).unwrap(),
                false => doc.to_string(),
            };
            for q in QUERIES {
                prop_assert_eq!(find(q, &body), by_tree(q, &doc), "{} in {}", q, body);
            }
        }
    }
}
