//! `--cache-headers`: the origin labels its answers the way a cache in front of it would,
//! so cache reports can be tested against a known answer without a real cache. The first
//! GET of a path is a miss, every later one a hit; nothing is actually cached.

use http::header::{HeaderName, HeaderValue, AGE};
use http::HeaderMap;
use std::collections::HashSet;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Whose headers to imitate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheStyle {
    /// `X-Varnish: <xid>` on a miss, `X-Varnish: <xid> <earlier xid>` and `Age` on a hit.
    Varnish,
    /// `X-Cache: MISS from barrage` / `X-Cache: HIT from barrage`.
    Squid,
    /// `X-Cache-Status: MISS` / `HIT`.
    Nginx,
}

impl FromStr for CacheStyle {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "varnish" => Ok(CacheStyle::Varnish),
            "squid" => Ok(CacheStyle::Squid),
            "nginx" => Ok(CacheStyle::Nginx),
            _ => Err(format!("invalid cache style '{s}': expected varnish, squid or nginx")),
        }
    }
}

/// The paths seen so far, and Varnish's transaction ids.
#[derive(Debug)]
pub(crate) struct CacheSim {
    style: CacheStyle,
    seen: Mutex<HashSet<String>>,
    xid: AtomicU64,
}

const X_VARNISH: HeaderName = HeaderName::from_static("x-varnish");
const X_CACHE: HeaderName = HeaderName::from_static("x-cache");
const X_CACHE_STATUS: HeaderName = HeaderName::from_static("x-cache-status");

impl CacheSim {
    pub(crate) fn new(style: CacheStyle) -> Self {
        CacheSim { style, seen: Mutex::new(HashSet::new()), xid: AtomicU64::new(32768) }
    }

    /// Adds the headers of a hit or a miss for `path`.
    pub(crate) fn label(&self, path: &str, headers: &mut HeaderMap) {
        let hit = !self.seen.lock().expect("no panics while held").insert(path.to_string());
        match self.style {
            CacheStyle::Varnish => {
                let xid = self.xid.fetch_add(2, Ordering::Relaxed);
                let value = if hit { format!("{xid} {}", xid - 1) } else { xid.to_string() };
                headers.insert(X_VARNISH, HeaderValue::from_str(&value).expect("digits"));
                headers.insert(AGE, HeaderValue::from_static(if hit { "1" } else { "0" }));
            }
            CacheStyle::Squid => {
                let value = if hit { "HIT from barrage" } else { "MISS from barrage" };
                headers.insert(X_CACHE, HeaderValue::from_static(value));
            }
            CacheStyle::Nginx => {
                headers.insert(X_CACHE_STATUS, HeaderValue::from_static(if hit { "HIT" } else { "MISS" }));
            }
        }
    }
}
