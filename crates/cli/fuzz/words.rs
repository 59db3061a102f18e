//! The text the fuzzers build inputs from: tokens of every value grammar barrage parses
//! (numbers at and past their limits, units, separators, keywords), strung together, and
//! arbitrary text, so that most inputs get past the first check of a parser and some reach
//! its corners.

use proptest::prelude::*;

const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "10",
    "1.5",
    ".5",
    "5.",
    "-0",
    "00",
    "1e3",
    "1e10",
    "1e308",
    "1e-300",
    "9e18",
    "18446744073709551616",
    "4294967295",
    "4294967296",
    "65535",
    "99999",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "0x10",
    "1_000",
];
const UNITS: &[&str] =
    &["us", "ms", "s", "m", "h", "d", "/s", "/m", "k", "K", "m", "g", "G", "KiB", "MB", "%", "rps", "x"];
const SEPARATORS: &[&str] =
    &["..", ":", ",", "/", "+", "<", ">", "<=", ">=", "=", "==", "~", ";", " ", "@", "!", "&", "|", "*", "-", "_"];
const WORDS: &[&str] = &[
    "p50",
    "p99",
    "p999",
    "mean",
    "max",
    "throughput",
    "success",
    "errors",
    "hit_ratio",
    "latency",
    "exp",
    "lognormal",
    "file",
    "type",
    "filename",
    "name",
    "Host",
    "Authorization",
    "Content-Type",
    "X-Cache",
    "GET",
    "POST",
    "PUT",
    "http://127.0.0.1:1/",
    "https://[::1]:8443/a?b=c",
    "http://h/obj/{id}",
    "redis://127.0.0.1:1/2",
    "memcache://127.0.0.1:1",
    "{id}",
    "zipf",
    "random",
    "same",
    "round-robin",
    "varnish",
    "nginx",
    "haproxy",
    "squid",
    "direct",
    "5xx",
    "4xx",
    "error",
    "timeout",
    "reset",
    "refused",
    "fill",
    "measure",
    "text",
    "json",
    "MISS",
    "HIT",
    "127.0.0.1:0",
    "[::1]:0",
    "0.0.0.0:80",
];
const WEIRD: &[&str] =
    &["", "\0", "\r\n", "\n", "\t", "é", "💥", "\u{202e}", "\u{7f}", "\"", "'", "\\", "%zz", "{", "}"];

/// One token of any grammar.
pub fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(NUMBERS).prop_map(String::from),
        3 => prop::sample::select(UNITS).prop_map(String::from),
        3 => prop::sample::select(SEPARATORS).prop_map(String::from),
        3 => prop::sample::select(WORDS).prop_map(String::from),
        2 => prop::sample::select(WEIRD).prop_map(String::from),
        1 => "[a-z]{1,12}",
        1 => any::<u64>().prop_map(|n| n.to_string()),
        1 => any::<f64>().prop_map(|n| n.to_string()),
    ]
}

/// A value as a person (or an attacker) might type one: a few tokens, or arbitrary text,
/// now and then a long one.
pub fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => prop::collection::vec(token(), 1..5).prop_map(|t| t.concat()),
        2 => any::<String>(),
        1 => (token(), 200usize..5_000).prop_map(|(t, n)| t.repeat(n.div_ceil(t.len().max(1)))),
    ]
}

/// Values a person might give a flag whose value is named `value_name` in its help: most
/// valid, some at or past the limits. Files named do not exist, or are the corpus's own.
pub fn plausible(value_name: &str) -> &'static [&'static str] {
    match value_name {
        "N" => &["1", "2", "8", "100", "0", "65536", "4294967295"],
        "FILE" | "RUN" => &["nonexistent.brg", "tests/corpus/fuzz/targets/json-wrong-types.jsonl", "-"],
        "DIR" => &["nonexistent-dir", "tests/corpus/fuzz"],
        "DURATION" | "OFFSET" => &["1s", "250ms", "1.5m", "0s", "-1s", "8761h", "1e19s"],
        "RATE" => &["100", "100/s", "60/m", "10:100", "10,50,100", "0", "1e10", "inf"],
        "PERCENT" => &["5%", "0%", "200%", "-1%"],
        "NAME" => &["x", "varnish", "X-Served-By", "origin-1", "Bad Name"],
        "FRACTION" => &["0.5", "0", "1", "1.5", "-0.1", "nan"],
        "ADDR" => &["127.0.0.1:0", "[::1]:0", "0.0.0.0:0", "127.0.0.1:99999", "localhost:0", "127.0.0.2", "::1"],
        "SIZE" => &["1k", "0", "64k", "1m", "1.5k", "2g"],
        "EXPR" => &["p99<100ms", "success>=99.9%", "throughput>1000", "errors<1%", "p99<", "p101<1s"],
        "DIST" => {
            &["10ms", "10ms..50ms", "exp:20ms", "1k..64k", "lognormal:4k,1.0", "50ms..10ms", "5000000h..5200000h"]
        }
        "URL" => &["http://127.0.0.1:1/", "https://[::1]:1/a?token=x", "ftp://h/"],
        "TOPOLOGY" => &["direct", "varnish", "nginx", "all", "nope"],
        "STYLE" => &["varnish", "squid", "nginx", "nope"],
        "RULE" => &["X-Cache~HIT=hit", "X-Cache~(=hit", "X~a=nope"],
        "PID|NAME" => &["1", "nginx", "0", "-1"],
        "MIN..MAX" => &["10ms..1s", "1s..10ms", "0s..0s", "1e19s..1e20s"],
        "METHOD" => &["GET", "POST", "PURGE", "G ET"],
        "LIST" => &["error,5xx", "timeout", "429,503", "bogus"],
        "HOW" => &["round-robin", "random", "same", "zipf:1.1", "zipf:-1", "gauss:10:5", "gauss:0"],
        "HOST:PORT:ADDR" => &["h:80:127.0.0.1", "h:99999:127.0.0.1", "h:80:nope"],
        "FIELD" => &["f=x", "f=@nonexistent", "f=<nonexistent", "f=x;type=text/plain", "f=x;filename=a\r\nb"],
        "BOUND" => &["throughput<-5%", "p99>+10%", "throughput<-101%", "p99>10ms"],
        "'NAME: VALUE'" => &["X-A: b", "Authorization: Bearer t", "no-colon", "X-A: \r\nb"],
        "TEXT|@FILE" => &["hello", "@nonexistent", ""],
        "URL,URL" => &["redis://127.0.0.1:2,redis://127.0.0.1:3", "memcache://h:1", "rediss://u:p@h/99x", ""],
        "PROTOCOL" => &["resp2", "resp3", "memcache-text", "memcache-meta", "resp4"],
        "SET:GET" => &["1:10", "0:1", "1:0", "0:0", "set:get=2:3", "1001:1"],
        "TEXT" => &["memtier-", "a b", "", "k\r\n"],
        "R|S|G" => &["R", "S:S", "G", "R:S", "Z"],
        "SIZE:W,..." => &["32:1,1k:4", "32:0", "1g:1", "x"],
        "MIN-MAX" => &["32-1k", "1k-32", "0-0", "1-99g"],
        "'CMD ARGS'" => &["HSET h:{id} f {value}", "GET {id}{id}", "", "SET __key__ __data__"],
        _ => &[],
    }
}
