//! An origin's shape as one line: `latency=100ms,size=lognormal:4k,1.0,errors=1%,capacity=8+64`.
//!
//! The grammar: `KEY=VALUE` parts separated by commas; a part without `=` continues the
//! value before it (so `size=lognormal:4k,1.0` keeps its comma). Keys:
//!
//! | key | value |
//! |---|---|
//! | `latency` | a [`LatencyDist`]: `20ms`, `10ms..50ms`, `exp:20ms`; `0` for none |
//! | `size` | a [`SizeDist`] of `/obj/{id}`: `1k`, `1k..64k`, `lognormal:4k,1.0`, `file:PATH` |
//! | `errors` | the share answered 500: `1%` or `0.01` |
//! | `capacity` | `N` requests served at once, `N+Q` with a queue of at most Q (more: 503 at once); `none` |
//!
//! A [`ShapeSpec`] sets some keys; [`ShapeSpec::apply`] lays it over a [`Shape`], so later
//! specs override earlier ones key by key.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::dist::{LatencyDist, SizeDist};

/// The most requests an origin serves at once, or queues: tokio's semaphore's bound is far
/// above; this keeps a typo from looking like "no limit".
pub const MAX_CAPACITY: usize = 1_000_000;

/// What the origin's capacity is: `concurrency` served at once, and at most `queue` waiting
/// (`None`: no bound on the queue).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capacity {
    /// Requests served at once (at least 1).
    pub concurrency: usize,
    /// Requests waiting for a turn at most; one more is answered 503 at once.
    pub queue: Option<usize>,
}

/// The shape of an origin, whole: what every request meets.
#[derive(Clone, Debug, PartialEq)]
pub struct Shape {
    /// A delay before each answer.
    pub latency: Option<LatencyDist>,
    /// The sizes of `/obj/{id}` (a function of the id).
    pub object_size: SizeDist,
    /// The fraction in [0, 1] answered 500.
    pub error_rate: f64,
    /// Requests served at once and queued.
    pub capacity: Option<Capacity>,
}

impl Default for Shape {
    fn default() -> Self {
        Shape { latency: None, object_size: SizeDist::Fixed(1024), error_rate: 0.0, capacity: None }
    }
}

/// Some keys of a shape, as written: laid over a [`Shape`] by [`ShapeSpec::apply`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ShapeSpec {
    /// `latency=`; `Some(None)` clears it (`latency=0`).
    pub latency: Option<Option<LatencyDist>>,
    /// `size=`.
    pub object_size: Option<SizeDist>,
    /// `errors=`.
    pub error_rate: Option<f64>,
    /// `capacity=`; `Some(None)` clears it (`capacity=none`).
    pub capacity: Option<Option<Capacity>>,
}

/// A shape that does not parse: names the part and what would be valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid shape part '{part}': {why}")]
pub struct ShapeError {
    /// The part (`errors=150%`).
    pub part: String,
    /// What is wrong, with the valid forms.
    pub why: String,
}

const KEYS: &str = "latency=DIST, size=DIST, errors=PERCENT, capacity=N[+QUEUE]";

impl ShapeSpec {
    /// Lays these keys over `shape`.
    pub fn apply(&self, shape: &mut Shape) {
        if let Some(latency) = self.latency {
            shape.latency = latency;
        }
        if let Some(size) = &self.object_size {
            shape.object_size = size.clone();
        }
        if let Some(rate) = self.error_rate {
            shape.error_rate = rate;
        }
        if let Some(capacity) = self.capacity {
            shape.capacity = capacity;
        }
    }

    /// Whether it sets no key.
    pub fn is_empty(&self) -> bool {
        *self == ShapeSpec::default()
    }

    /// `later` laid over `earlier`, as written (a `file:` path stays a path): each key's
    /// last part, in the order keys first appeared. Both are checked.
    pub fn merge(earlier: &str, later: &str) -> Result<String, ShapeError> {
        let mut keys: Vec<(String, String)> = Vec::new();
        for spec in [earlier, later] {
            spec.parse::<ShapeSpec>()?;
            if spec.trim().is_empty() {
                continue;
            }
            for part in parts(spec.trim())? {
                let key = part.split_once('=').map_or("", |(k, _)| k).trim().to_string();
                let part = part.trim().to_string();
                match keys.iter_mut().find(|(k, _)| *k == key) {
                    Some(slot) => slot.1 = part,
                    None => keys.push((key, part)),
                }
            }
        }
        Ok(keys.into_iter().map(|(_, p)| p).collect::<Vec<_>>().join(","))
    }
}

/// Splits `a=1,b=x,y,c=2` into `a=1`, `b=x,y`, `c=2`: a part without `=` continues the one before.
fn parts(s: &str) -> Result<Vec<String>, ShapeError> {
    let mut out: Vec<String> = Vec::new();
    for piece in s.split(',') {
        match out.last_mut() {
            Some(last) if !piece.contains('=') => {
                last.push(',');
                last.push_str(piece);
            }
            _ if !piece.contains('=') => {
                return Err(ShapeError { part: piece.to_string(), why: format!("expected KEY=VALUE ({KEYS})") })
            }
            _ => out.push(piece.to_string()),
        }
    }
    Ok(out)
}

impl FromStr for ShapeSpec {
    type Err = ShapeError;

    fn from_str(s: &str) -> Result<Self, ShapeError> {
        let mut spec = ShapeSpec::default();
        if s.trim().is_empty() {
            return Ok(spec);
        }
        for part in parts(s.trim())? {
            let bad = |why: String| ShapeError { part: part.clone(), why };
            let (key, value) = part.split_once('=').expect("parts have an =");
            let value = value.trim();
            match key.trim() {
                "latency" => {
                    spec.latency = Some(match value {
                        "0" | "none" => None,
                        v => {
                            let d: LatencyDist = v.parse().map_err(|e: crate::ParseError| bad(e.to_string()))?;
                            (d != LatencyDist::Fixed(Duration::ZERO)).then_some(d)
                        }
                    })
                }
                "size" => spec.object_size = Some(value.parse().map_err(|e: crate::ParseError| bad(e.to_string()))?),
                "errors" => spec.error_rate = Some(parse_share(value).map_err(bad)?),
                "capacity" => spec.capacity = Some(parse_capacity(value).map_err(bad)?),
                other => return Err(bad(format!("unknown key '{other}': expected {KEYS}"))),
            }
        }
        Ok(spec)
    }
}

/// `1%`, `0.5%` or a fraction `0.01`, in [0, 1].
fn parse_share(v: &str) -> Result<f64, String> {
    let f = match v.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|p| p / 100.0),
        None => v.parse::<f64>(),
    };
    match f {
        Ok(f) if (0.0..=1.0).contains(&f) => Ok(f),
        _ => Err("expected a percentage from 0% to 100% (1%) or a fraction from 0 to 1 (0.01)".into()),
    }
}

/// `8`, `8+64` or `none`.
fn parse_capacity(v: &str) -> Result<Option<Capacity>, String> {
    if v == "none" {
        return Ok(None);
    }
    let why = || {
        format!("expected N requests served at once and an optional queue bound, N+QUEUE (8, 8+64; N from 1, both at most {MAX_CAPACITY}), or none")
    };
    let (n, q) = match v.split_once('+') {
        Some((n, q)) => (n, Some(q)),
        None => (v, None),
    };
    let n: usize = n.trim().parse().ok().filter(|n| (1..=MAX_CAPACITY).contains(n)).ok_or_else(why)?;
    let q = match q {
        Some(q) => Some(q.trim().parse::<usize>().ok().filter(|q| *q <= MAX_CAPACITY).ok_or_else(why)?),
        None => None,
    };
    Ok(Some(Capacity { concurrency: n, queue: q }))
}

impl fmt::Display for Capacity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.queue {
            Some(q) => write!(f, "{}+{q}", self.concurrency),
            None => write!(f, "{}", self.concurrency),
        }
    }
}

/// A share as the grammar writes it: `1%`, `0.5%`.
fn fmt_share(f: f64) -> String {
    let p = f * 100.0;
    // Rounded to what a human wrote: 0.1 * 100 is 10.000000000000002.
    let p = (p * 1e6).round() / 1e6;
    format!("{p}%")
}

impl fmt::Display for ShapeSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if let Some(l) = self.latency {
            parts.push(format!("latency={}", l.map_or("0".to_string(), |l| l.to_string())));
        }
        if let Some(s) = &self.object_size {
            parts.push(format!("size={s}"));
        }
        if let Some(e) = self.error_rate {
            parts.push(format!("errors={}", fmt_share(e)));
        }
        if let Some(c) = self.capacity {
            parts.push(format!("capacity={}", c.map_or("none".to_string(), |c| c.to_string())));
        }
        f.write_str(&parts.join(","))
    }
}

impl From<&Shape> for ShapeSpec {
    fn from(s: &Shape) -> Self {
        ShapeSpec {
            latency: Some(s.latency),
            object_size: Some(s.object_size.clone()),
            error_rate: Some(s.error_rate),
            capacity: Some(s.capacity),
        }
    }
}

impl fmt::Display for Shape {
    /// Every key: `latency=100ms,size=1k,errors=0%,capacity=none`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        ShapeSpec::from(self).fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_print_back() {
        let table = [
            ("latency=100ms", "latency=100.00ms"),
            (
                "latency=100ms,size=lognormal:4k,1.0,errors=1%,capacity=8+64",
                "latency=100.00ms,size=lognormal:4096,1,errors=1%,capacity=8+64",
            ),
            ("errors=0.05", "errors=5%"),
            ("capacity=4", "capacity=4"),
            ("capacity=none,latency=0", "latency=0,capacity=none"),
            (" latency = exp:20ms ", "latency=exp:20.00ms"),
            ("", ""),
        ];
        for (input, shown) in table {
            let spec: ShapeSpec = input.parse().unwrap_or_else(|e| panic!("{input}: {e}"));
            let printed = spec.to_string();
            assert!(printed == shown || shown.is_empty() && printed.is_empty(), "{input}: {printed}");
            assert_eq!(printed.parse::<ShapeSpec>().unwrap(), spec, "{input} round-trips");
        }
    }

    #[test]
    fn a_bad_part_is_named() {
        let table = [
            ("latency=fast", "invalid shape part 'latency=fast': invalid latency 'fast'"),
            ("errors=150%", "invalid shape part 'errors=150%': expected a percentage"),
            ("capacity=0", "invalid shape part 'capacity=0': expected N requests"),
            ("capacity=4+x", "invalid shape part 'capacity=4+x'"),
            ("speed=1", "invalid shape part 'speed=1': unknown key 'speed'"),
            ("100ms", "invalid shape part '100ms': expected KEY=VALUE"),
            ("size=lognormal:4k", "invalid shape part 'size=lognormal:4k': invalid object size"),
        ];
        for (input, want) in table {
            let e = input.parse::<ShapeSpec>().unwrap_err().to_string();
            assert!(e.starts_with(want), "{input}: {e}");
        }
    }

    use proptest::prelude::*;

    /// One valid part, of any key.
    fn part() -> impl Strategy<Value = String> {
        prop_oneof![
            (1u64..500).prop_map(|ms| format!("latency={ms}ms")),
            (1u64..500, 1u64..500).prop_map(|(a, b)| format!("latency={}ms..{}ms", a.min(b), a.max(b))),
            (1u64..500).prop_map(|ms| format!("latency=exp:{ms}ms")),
            Just("latency=0".to_string()),
            (1u64..100).prop_map(|k| format!("size={k}k")),
            (1u64..100, 0u32..30).prop_map(|(k, s)| format!("size=lognormal:{k}k,{}", f64::from(s) / 10.0)),
            (0u32..=100).prop_map(|p| format!("errors={p}%")),
            (1usize..64, proptest::option::of(0usize..64)).prop_map(|(n, q)| match q {
                Some(q) => format!("capacity={n}+{q}"),
                None => format!("capacity={n}"),
            }),
            Just("capacity=none".to_string()),
        ]
    }

    proptest::proptest! {
        /// Valid parts in any order and number (a key again overrides): a spec that prints
        /// back as itself, and merges as the parse reads it.
        #[test]
        fn valid_specs_print_back_and_merge_as_they_parse(
            parts in proptest::collection::vec(part(), 0..6),
            split in 0usize..6,
        ) {
            let text = parts.join(",");
            let spec: ShapeSpec = text.parse().map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
            prop_assert_eq!(spec.to_string().parse::<ShapeSpec>(), Ok(spec.clone()));
            let split = split.min(parts.len());
            let merged = ShapeSpec::merge(&parts[..split].join(","), &parts[split..].join(",")).unwrap();
            prop_assert_eq!(merged.parse::<ShapeSpec>(), Ok(spec), "{}", merged);
        }

        /// Whatever a user writes: an error or a spec, never a panic; and a spec printed
        /// reads back as itself, also merged over nothing.
        #[test]
        fn any_text_parses_or_is_refused_and_specs_print_back(
            text in "((latency|size|errors|capacity|x)=[0-9a-z.:+%,]{0,12}){0,4}(,[a-z=0-9.]{0,6}){0,2}"
        ) {
            if let Ok(spec) = text.parse::<ShapeSpec>() {
                let printed = spec.to_string();
                proptest::prop_assert_eq!(printed.parse::<ShapeSpec>(), Ok(spec.clone()), "{}", printed);
                let merged = ShapeSpec::merge("", &text).unwrap();
                proptest::prop_assert_eq!(merged.parse::<ShapeSpec>(), Ok(spec), "{}", merged);
            }
        }
    }

    #[test]
    fn merging_keeps_each_keys_last_part_as_written() {
        let m = ShapeSpec::merge("latency=100ms,size=lognormal:4k,1.0,capacity=8", "capacity=4+2,latency=5ms").unwrap();
        assert_eq!(m, "latency=5ms,size=lognormal:4k,1.0,capacity=4+2");
        assert_eq!(ShapeSpec::merge("", "errors=1%").unwrap(), "errors=1%");
        assert!(ShapeSpec::merge("latency=1ms", "errors=2").is_err());
    }

    #[test]
    fn later_specs_override_key_by_key() {
        let mut shape = Shape::default();
        "latency=100ms,capacity=8+64".parse::<ShapeSpec>().unwrap().apply(&mut shape);
        "latency=200ms,errors=1%".parse::<ShapeSpec>().unwrap().apply(&mut shape);
        assert_eq!(shape.latency, Some(LatencyDist::Fixed(Duration::from_millis(200))));
        assert_eq!(shape.capacity, Some(Capacity { concurrency: 8, queue: Some(64) }));
        assert_eq!(shape.error_rate, 0.01);
        assert_eq!(shape.to_string(), "latency=200.00ms,size=1024,errors=1%,capacity=8+64");
        assert_eq!(shape.to_string().parse::<ShapeSpec>().map(|s| s.to_string()), Ok(shape.to_string()));
    }
}
