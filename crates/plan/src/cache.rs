//! The cache status of a response, read from its headers: [`CacheStatus`] and the
//! [`CacheRules`] that decide it.
//!
//! Built-in rules, first match wins: user rules (`--cache-rule`), then nginx
//! (`X-Cache-Status`), Cloudflare (`CF-Cache-Status`), the `X-Cache` family (Squid, most CDNs,
//! Fastly, CloudFront, Akamai's `TCP_HIT`…; with several comma-separated values, the last is
//! the cache nearest the client), Varnish (`X-Varnish` with two ids is a hit), then `Age` > 0
//! as a hit. Anything else is `Unknown`.

pub use barrage_metrics::sample::{CacheStatus, CACHE_STATUS_COUNT};
use http::{HeaderMap, HeaderName};
use std::str::FromStr;

/// `--cache-rule 'HEADER~REGEX=STATUS'`: when HEADER matches REGEX (case-insensitive), the
/// response has STATUS.
#[derive(Clone, Debug)]
pub struct CacheRule {
    header: http::HeaderName,
    pattern: regex::Regex,
    status: CacheStatus,
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

    /// The cache status of a response with these headers.
    pub fn classify(&self, headers: &HeaderMap) -> CacheStatus {
        for rule in &self.user {
            if headers.get_all(&rule.header).iter().any(|v| v.to_str().is_ok_and(|v| rule.pattern.is_match(v))) {
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

fn builtin(h: &HeaderMap) -> CacheStatus {
    let text = |name: &HeaderName| h.get(name).and_then(|v| v.to_str().ok());
    if let Some(s) = text(&X_CACHE_STATUS).and_then(keyword) {
        return s;
    }
    if let Some(s) = text(&CF_CACHE_STATUS).and_then(keyword) {
        return s;
    }
    // Fastly and CDN chains list one value per cache; the last is nearest the client.
    if let Some(s) = text(&X_CACHE).and_then(|v| v.rsplit(',').next()).and_then(keyword) {
        return s;
    }
    if let Some(v) = text(&X_VARNISH) {
        return if v.split_whitespace().count() >= 2 { CacheStatus::Hit } else { CacheStatus::Miss };
    }
    if text(&http::header::AGE).and_then(|a| a.trim().parse::<u64>().ok()).is_some_and(|age| age > 0) {
        return CacheStatus::Hit;
    }
    CacheStatus::Unknown
}

/// Reads the status words caches use: HIT, MISS, PASS, BYPASS, DYNAMIC, EXPIRED, REFRESH,
/// STALE, UPDATING, REVALIDATED, and Squid/Akamai forms like `TCP_REFRESH_MISS`.
fn keyword(value: &str) -> Option<CacheStatus> {
    let v = value.trim().to_ascii_uppercase();
    let has = |w: &str| v.contains(w);
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
        ];
        let rules = CacheRules::default();
        for (h, want) in table {
            assert_eq!(rules.classify(&headers(h)), *want, "{h:?}");
        }
    }

    #[test]
    fn user_rules_come_first() {
        let rule: CacheRule = "X-My-Cache~^yes$=hit".parse().unwrap();
        let rules = CacheRules::new(vec![rule, "X-Cache~miss=pass".parse().unwrap()]);
        assert_eq!(rules.classify(&headers(&[("X-My-Cache", "YES")])), Hit);
        assert_eq!(rules.classify(&headers(&[("X-Cache", "MISS from a")])), Pass);
        assert_eq!(rules.classify(&headers(&[("X-Cache", "HIT from a")])), Hit);
        for bad in ["nothing", "X~(=hit", "X~a=often", "bad header~a=hit"] {
            assert!(bad.parse::<CacheRule>().unwrap_err().contains("expected HEADER~REGEX=STATUS"), "{bad}");
        }
    }
}
