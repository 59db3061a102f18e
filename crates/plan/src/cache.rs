//! The cache status of a response, read from its headers: [`CacheStatus`] and the
//! [`CacheRules`] that decide it.
//!
//! Built-in rules, first match wins: user rules (`--cache-rule`), then nginx
//! (`X-Cache-Status`), Cloudflare (`CF-Cache-Status`), the `X-Cache` family (Squid, most CDNs,
//! Fastly, CloudFront, Akamai's `TCP_HIT`…; with several comma-separated values, the last is
//! the cache nearest the client), Varnish (`X-Varnish` with two ids is a hit), then `Age` > 0
//! as a hit. Anything else is `Unknown`.
//!
//! The rules read headers through a [`HeaderView`]: a response's `HeaderMap`, or the header
//! lines `httparse` found in a response head, read where they lie, so that the HTTP/1.1 hot
//! path classifies a response without building a map of its headers.

pub use barrage_metrics::sample::{CacheStatus, CACHE_STATUS_COUNT};

/// How a run reads each response's headers: its cache status, and the backend that
/// answered it.
#[derive(Clone, Debug)]
pub struct ResponseRules {
    /// How the cache status is read (`--cache-rule`, then the built-in rules).
    pub cache: CacheRules,
    /// Headers naming the backend that answered, tried in order (`--backend-header`).
    pub backend_headers: Vec<HeaderName>,
}

impl Default for ResponseRules {
    /// The built-in rules and [`crate::DEFAULT_BACKEND_HEADERS`].
    fn default() -> ResponseRules {
        ResponseRules { cache: CacheRules::default(), backend_headers: crate::default_backend_headers() }
    }
}
use http::{HeaderMap, HeaderName};
use std::str::FromStr;

/// A response's headers, as the cache rules and the backend header read them: every value of
/// a header, by name (names compare without regard to case), in the order received.
pub trait HeaderView {
    /// Calls `each` with every value of header `name`, in order, until it returns true;
    /// returns whether one did.
    fn any_value(&self, name: &HeaderName, each: &mut dyn FnMut(&[u8]) -> bool) -> bool;

    /// The first value of header `name`.
    fn value(&self, name: &HeaderName) -> Option<&[u8]>;
}

impl HeaderView for HeaderMap {
    fn any_value(&self, name: &HeaderName, each: &mut dyn FnMut(&[u8]) -> bool) -> bool {
        self.get_all(name).iter().any(|v| each(v.as_bytes()))
    }

    fn value(&self, name: &HeaderName) -> Option<&[u8]> {
        self.get(name).map(|v| v.as_bytes())
    }
}

/// The header lines of a response head as `httparse` parsed them (names as received, in
/// any case), with the lengths of their names noted in one pass: a lookup scans the lines
/// only when one has a name of the length sought, so the ten lookups of the cache rules and
/// the backend headers cost a few instructions each on a response that carries none of
/// those headers (a map of the headers would cost more to build than the lookups).
pub struct HeaderLines<'h, 'b> {
    lines: &'h [httparse::Header<'b>],
    /// Bit n: a name of n bytes (63: of 63 or more).
    lengths: u64,
}

impl<'h, 'b> HeaderLines<'h, 'b> {
    /// The view of `lines`.
    pub fn new(lines: &'h [httparse::Header<'b>]) -> Self {
        let lengths = lines.iter().fold(0, |bits, h| bits | Self::bit(h.name.len()));
        HeaderLines { lines, lengths }
    }

    fn bit(len: usize) -> u64 {
        1 << len.min(63)
    }

    fn named<'a>(&'a self, name: &'a HeaderName) -> impl Iterator<Item = &'a httparse::Header<'b>> + 'a {
        let name = name.as_str().as_bytes();
        let lines = if self.lengths & Self::bit(name.len()) == 0 { &[][..] } else { self.lines };
        lines.iter().filter(move |h| h.name.as_bytes().eq_ignore_ascii_case(name))
    }
}

impl HeaderView for HeaderLines<'_, '_> {
    fn any_value(&self, name: &HeaderName, each: &mut dyn FnMut(&[u8]) -> bool) -> bool {
        self.named(name).any(|h| each(h.value))
    }

    fn value(&self, name: &HeaderName) -> Option<&[u8]> {
        self.named(name).next().map(|h| h.value)
    }
}

/// A header value as text, when it is visible ASCII (and tabs and spaces), as
/// `HeaderValue::to_str` has it: the rules never read other bytes as text.
fn text(value: &[u8]) -> Option<&str> {
    if value.iter().all(|&b| b == b'\t' || (b' '..=b'~').contains(&b)) {
        std::str::from_utf8(value).ok()
    } else {
        None
    }
}

/// `--cache-rule 'HEADER~REGEX=STATUS'`: when HEADER matches REGEX (case-insensitive), the
/// response has STATUS.
#[derive(Clone, Debug)]
pub struct CacheRule {
    header: http::HeaderName,
    pattern: regex::Regex,
    status: CacheStatus,
}

impl CacheRule {
    /// As given: `X-Cache~^HIT=hit`.
    pub fn text(&self) -> String {
        format!("{}~{}={}", self.header, self.pattern.as_str(), self.status.name())
    }
}

impl FromStr for CacheRule {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = |why: String| {
            format!("invalid --cache-rule '{s}': {why}; expected HEADER~REGEX=STATUS, e.g. 'X-Cache~^HIT=hit'")
        };
        let (header, rest) = s.split_once('~').ok_or_else(|| bad("no '~'".into()))?;
        let (pattern, status) = rest.rsplit_once('=').ok_or_else(|| bad("no '='".into()))?;
        let header =
            http::HeaderName::from_bytes(header.trim().as_bytes()).map_err(|_| bad("bad header name".into()))?;
        let pattern =
            regex::RegexBuilder::new(pattern).case_insensitive(true).build().map_err(|e| bad(e.to_string()))?;
        Ok(CacheRule { header, pattern, status: status.trim().parse().map_err(bad)? })
    }
}

/// Classifies responses: the user's rules first, then the built-in ones.
#[derive(Clone, Debug, Default)]
pub struct CacheRules {
    user: Vec<CacheRule>,
}

impl CacheRules {
    /// Built-in rules after `user` rules.
    pub fn new(user: Vec<CacheRule>) -> Self {
        CacheRules { user }
    }

    /// The user's rules (`--cache-rule`), in the order they are tried.
    pub fn user(&self) -> &[CacheRule] {
        &self.user
    }

    /// The cache status of a response with these headers.
    pub fn classify<H: HeaderView + ?Sized>(&self, headers: &H) -> CacheStatus {
        for rule in &self.user {
            if headers.any_value(&rule.header, &mut |v| text(v).is_some_and(|v| rule.pattern.is_match(v))) {
                return rule.status;
            }
        }
        builtin(headers)
    }
}

// Names built once: looking a header up by `&str` would parse the name per response.
const X_CACHE_STATUS: HeaderName = HeaderName::from_static("x-cache-status");
const CF_CACHE_STATUS: HeaderName = HeaderName::from_static("cf-cache-status");
const X_CACHE: HeaderName = HeaderName::from_static("x-cache");
const X_VARNISH: HeaderName = HeaderName::from_static("x-varnish");

fn builtin<H: HeaderView + ?Sized>(h: &H) -> CacheStatus {
    let value = |name: &HeaderName| h.value(name).and_then(text);
    if let Some(s) = value(&X_CACHE_STATUS).and_then(keyword) {
        return s;
    }
    if let Some(s) = value(&CF_CACHE_STATUS).and_then(keyword) {
        return s;
    }
    // Fastly and CDN chains list one value per cache; the last is nearest the client.
    if let Some(s) = value(&X_CACHE).and_then(|v| v.rsplit(',').next()).and_then(keyword) {
        return s;
    }
    if let Some(v) = value(&X_VARNISH) {
        return if v.split_whitespace().count() >= 2 { CacheStatus::Hit } else { CacheStatus::Miss };
    }
    if value(&http::header::AGE).and_then(|a| a.trim().parse::<u64>().ok()).is_some_and(|age| age > 0) {
        return CacheStatus::Hit;
    }
    CacheStatus::Unknown
}

/// Reads the status words caches use: HIT, MISS, PASS, BYPASS, DYNAMIC, EXPIRED, REFRESH,
/// STALE, UPDATING, REVALIDATED, and Squid/Akamai forms like `TCP_REFRESH_MISS`.
fn keyword(value: &str) -> Option<CacheStatus> {
    // Compared without regard to case, in place: no upper-cased copy per response.
    let v = value.trim().as_bytes();
    let has = |w: &str| v.windows(w.len()).any(|part| part.eq_ignore_ascii_case(w.as_bytes()));
    Some(if has("STALE") || has("UPDATING") {
        CacheStatus::Stale
    } else if has("EXPIRED") || has("REFRESH_MISS") {
        CacheStatus::Expired
    } else if has("HIT") || has("REVALIDATED") {
        CacheStatus::Hit
    } else if has("MISS") {
        CacheStatus::Miss
    } else if has("PASS") || has("BYPASS") || has("DYNAMIC") {
        CacheStatus::Pass
    } else {
        return None;
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use CacheStatus::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(http::HeaderName::from_bytes(k.as_bytes()).unwrap(), v.parse().unwrap());
        }
        h
    }

    /// The status `rules` give a response with these headers, read both ways: from a
    /// `HeaderMap`, and from the lines `httparse` parses out of the response head (which
    /// must agree).
    fn classify(rules: &CacheRules, pairs: &[(&str, &str)]) -> CacheStatus {
        let mut head = String::from("HTTP/1.1 200 OK\r\n");
        for (k, v) in pairs {
            head += &format!("{k}: {v}\r\n");
        }
        head += "\r\n";
        let mut lines = [httparse::EMPTY_HEADER; 16];
        let mut response = httparse::Response::new(&mut lines);
        assert!(response.parse(head.as_bytes()).unwrap().is_complete());
        let from_lines = rules.classify(&HeaderLines::new(response.headers));
        let from_map = rules.classify(&headers(pairs));
        assert_eq!(from_map, from_lines, "{pairs:?}");
        from_map
    }

    #[test]
    fn every_builtin_rule() {
        let table: &[(&[(&str, &str)], CacheStatus)] = &[
            (&[("X-Cache-Status", "HIT")], Hit),
            (&[("X-Cache-Status", "MISS")], Miss),
            (&[("X-Cache-Status", "BYPASS")], Pass),
            (&[("X-Cache-Status", "EXPIRED")], Expired),
            (&[("X-Cache-Status", "STALE")], Stale),
            (&[("X-Cache-Status", "UPDATING")], Stale),
            (&[("X-Cache-Status", "REVALIDATED")], Hit),
            (&[("CF-Cache-Status", "HIT")], Hit),
            (&[("CF-Cache-Status", "DYNAMIC")], Pass),
            (&[("CF-Cache-Status", "MISS")], Miss),
            (&[("X-Cache", "HIT from squid.local")], Hit),
            (&[("X-Cache", "MISS from squid.local")], Miss),
            (&[("X-Cache", "Hit from cloudfront")], Hit),
            (&[("X-Cache", "MISS, HIT")], Hit),
            (&[("X-Cache", "HIT, MISS")], Miss),
            (&[("X-Cache", "TCP_HIT")], Hit),
            (&[("X-Cache", "TCP_REFRESH_MISS")], Expired),
            (&[("X-Cache", "PASS")], Pass),
            (&[("X-Varnish", "32770 3")], Hit),
            (&[("X-Varnish", "32770")], Miss),
            (&[("Age", "12")], Hit),
            (&[("Age", "0")], Unknown),
            (&[("Server", "nginx")], Unknown),
            (&[], Unknown),
            // A specific header wins over Age.
            (&[("X-Cache", "MISS"), ("Age", "5")], Miss),
            // Names in any case; the first of a repeated header counts.
            (&[("x-cache-status", "hit")], Hit),
            (&[("X-CACHE-STATUS", "Miss")], Miss),
            (&[("X-Cache-Status", "STALE"), ("X-Cache-Status", "HIT")], Stale),
            (&[("age", " 7 ")], Hit),
            // A name of 63 bytes or more, beside one the rules look for.
            (&[(&"x".repeat(70), "HIT"), ("X-Cache", "HIT")], Hit),
            // A value that is not visible ASCII is not read as text.
            (&[("X-Cache-Status", "HIT\u{e9}")], Unknown),
        ];
        let rules = CacheRules::default();
        for (h, want) in table {
            assert_eq!(classify(&rules, h), *want, "{h:?}");
        }
    }

    #[test]
    fn user_rules_come_first() {
        let rule: CacheRule = "X-My-Cache~^yes$=hit".parse().unwrap();
        let rules = CacheRules::new(vec![rule, "X-Cache~miss=pass".parse().unwrap()]);
        assert_eq!(classify(&rules, &[("X-My-Cache", "YES")]), Hit);
        assert_eq!(classify(&rules, &[("x-my-cache", "no"), ("X-MY-CACHE", "yes")]), Hit);
        assert_eq!(classify(&rules, &[("X-Cache", "MISS from a")]), Pass);
        assert_eq!(classify(&rules, &[("X-Cache", "HIT from a")]), Hit);
        for bad in ["nothing", "X~(=hit", "X~a=often", "bad header~a=hit"] {
            assert!(bad.parse::<CacheRule>().unwrap_err().contains("expected HEADER~REGEX=STATUS"), "{bad}");
        }
    }
}
