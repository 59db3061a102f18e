//! Cache status of every response: hit ratio, byte hit ratio and the hit/miss split, against
//! an origin that labels its answers like Varnish, Squid or nginx would.

use crate::util::{barrage, closed, origin, plan, run};
use barrage_server::{CacheStyle, ServeConfig};

#[test]
fn each_cache_style_gives_the_known_hit_ratio() {
    for style in [CacheStyle::Varnish, CacheStyle::Squid, CacheStyle::Nginx] {
        let o = origin(ServeConfig { cache_headers: Some(style), ..Default::default() });
        // Four objects of different sizes, ten requests each: 4 misses, then 36 hits.
        let sizes = [1000, 2000, 3000, 4000];
        let mut p = plan(&format!("{}/bytes/{}", o.url(), sizes[0]), closed(1));
        for n in &sizes[1..] {
            p.targets.push(plan(&format!("{}/bytes/{n}", o.url()), closed(1)).targets.remove(0));
        }
        p.requests = Some(40);
        let s = run(p);
        let c = s.cache.as_ref().unwrap_or_else(|| panic!("{style:?}: nothing classified"));
        assert_eq!(c.classified, 40, "{style:?}");
        assert_eq!((c.statuses["hit"], c.statuses["miss"]), (36, 4), "{style:?}");
        assert!((c.hit_ratio - 0.9).abs() < 1e-9, "{style:?}: {}", c.hit_ratio);
        // Bytes include headers, which differ a little between hits and misses.
        assert!((c.byte_hit_ratio - 0.9).abs() < 0.01, "{style:?}: {}", c.byte_hit_ratio);
        assert_eq!(c.hit.as_ref().unwrap().latency.count, 36);
        assert_eq!(c.miss.as_ref().unwrap().latency.count, 4);
        assert_eq!(c.hit.as_ref().unwrap().phases["wait"].count, 36);
        // The origin saw every request: nothing was really cached.
        assert_eq!(o.requests(), 40);
        assert!(s.intervals.iter().any(|i| i.hit_ratio.is_some()));
    }
}

#[test]
fn without_cache_headers_the_report_says_so_once() {
    let o = origin(ServeConfig::default());
    let out = barrage().args(["run", "-n", "5", "-c", "1", &o.url()]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.matches("no response carried a recognised cache header").count(), 1, "{text}");
    let mut p = plan(&o.url(), closed(1));
    p.requests = Some(5);
    assert!(run(p).cache.is_none());
}

#[test]
fn a_user_rule_classifies_a_custom_header() {
    let o = origin(ServeConfig { name: Some("edge-7".into()), ..Default::default() });
    let out = barrage()
        .args(["run", "-n", "10", "-c", "1", "--format", "json", "--cache-rule", "X-Served-By~^edge-=stale", &o.url()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["cache"]["statuses"]["stale"], 10, "{v}");
    assert_eq!(v["cache"]["hit_ratio"], 1.0);
    let bad = barrage().args(["run", "-n", "1", "--cache-rule", "X-Cache=hit", &o.url()]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("HEADER~REGEX=STATUS"));
}
