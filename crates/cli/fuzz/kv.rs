//! Redis and memcached replies, as a key-value connection parses them
//! (`barrage_engine::fuzz::kv`): valid pipelines of replies in RESP2, RESP3, memcached
//! text and meta, then bent: aggregates nested hundreds of thousands deep, declared
//! lengths and counts huge, negative or malformed, bulk strings and `VALUE` blocks whose
//! data is longer or shorter than they say, lines without an end; and byte-level changes
//! after. Each ends in replies, an incomplete one waiting for more, or an error that puts
//! the connection out of step: never a panic, within [`super::LIMIT`] (a reply arriving
//! a byte at a time is walked once, not once per read), never a reply claiming bytes it
//! was not given or values over the 1 GiB (and 1 MiB of lines) a reply may take.

use super::mutate::{mutated, reads};
use super::{config, within};
use barrage_engine::fuzz::{kv, Parser};
use barrage_engine::kv::memcache::{parse_meta, resume_text, TextKind};
use barrage_engine::kv::resp::{resume_resp2, resume_resp3};
use barrage_engine::kv::{Reply, MAX_REPLY};
use proptest::prelude::*;

/// Replies of each protocol, as the servers send them, and their edges.
const RESP: &[&[u8]] = &[
    b"+OK\r\n",
    b"$5\r\nhello\r\n",
    b"$0\r\n\r\n",
    b"$-1\r\n",
    b"*-1\r\n",
    b":42\r\n",
    b"-ERR unknown command 'FOO'\r\n",
    b"-WRONGPASS invalid username-password pair or user is disabled.\r\n",
    b"*2\r\n$1\r\na\r\n*1\r\n:1\r\n",
    b"*3\r\n$3\r\nabc\r\n$-1\r\n+x\r\n",
    b"$7\r\nhe\r\nllo\r\n",
];
const RESP3: &[&[u8]] = &[
    b"_\r\n",
    b"#t\r\n",
    b",1.5\r\n",
    b"(3492890328409238509324850943850943825024385\r\n",
    b"!21\r\nSYNTAX invalid syntax\r\n",
    b"=15\r\ntxt:Some string\r\n",
    b"%1\r\n+server\r\n+redis\r\n",
    b"~2\r\n:1\r\n:2\r\n",
    b">2\r\n+message\r\n$2\r\nhi\r\n",
    b"|1\r\n+ttl\r\n:3600\r\n$2\r\nhi\r\n",
];
const TEXT: &[&[u8]] = &[
    b"VALUE k1 0 5\r\nhello\r\nEND\r\n",
    b"VALUE k1 0 5 1\r\nhello\r\nVALUE k2 7 2\r\nhi\r\nEND\r\n",
    b"END\r\n",
    b"STORED\r\n",
    b"NOT_STORED\r\n",
    b"NOT_FOUND\r\n",
    b"DELETED\r\n",
    b"6\r\n",
    b"ERROR\r\n",
    b"CLIENT_ERROR bad data chunk\r\n",
    b"SERVER_ERROR out of memory storing object\r\n",
];
const META: &[&[u8]] = &[
    b"HD\r\n",
    b"VA 5\r\nhello\r\n",
    b"VA 5 kmk1 s5 f0 t-1 c2 Oabc\r\nhello\r\n",
    b"VA 0\r\n\r\n",
    b"EN\r\n",
    b"NF\r\n",
    b"NS\r\n",
    b"EX\r\n",
    b"MN\r\n",
    b"CLIENT_ERROR bad command line format\r\n",
];

/// The parsers, with the replies each is fed.
fn protocols() -> [(&'static str, Parser, Vec<&'static [u8]>); 6] {
    let resp3: Vec<&[u8]> = RESP.iter().chain(RESP3).copied().collect();
    [
        ("resp2", resume_resp2, RESP.to_vec()),
        ("resp3", resume_resp3, resp3),
        ("memcache get", |b, p| resume_text(b, TextKind::Get, p), TEXT.to_vec()),
        ("memcache set", |b, p| resume_text(b, TextKind::Storage, p), TEXT.to_vec()),
        ("memcache delete", |b, p| resume_text(b, TextKind::Delete, p), TEXT.to_vec()),
        ("memcache meta", |b, _| parse_meta(b), META.to_vec()),
    ]
}

/// Hostile shapes no mutation of a small reply reaches: nesting a hundred thousand deep,
/// counts and lengths at and past 1 GiB, and data longer or shorter than declared.
fn hostile() -> impl Strategy<Value = Vec<u8>> {
    let deep = (prop::sample::select(&["*1\r\n", "%1\r\n:1\r\n", "~1\r\n", "|1\r\n+a\r\n:1\r\n"][..]), 1usize..100_000)
        .prop_map(|(level, n)| [level.repeat(n).as_bytes(), b":1\r\n"].concat());
    let declared = (
        prop::sample::select(&["$", "*", "%", "VALUE k 0 ", "VA ", "=", "!"][..]),
        prop::sample::select(super::mutate::NUMBERS),
        0usize..16,
    )
        .prop_map(|(kind, n, data)| format!("{kind}{n}\r\n{}\r\nEND\r\n", "x".repeat(data)).into_bytes());
    prop_oneof![deep, declared]
}

/// A pipeline of replies of one protocol (by its index in [`protocols`]), bent.
fn pipeline(protocol: usize) -> impl Strategy<Value = Vec<u8>> {
    let replies = protocols()[protocol].2.clone();
    let valid = prop::collection::vec(prop::sample::select(replies), 1..6).prop_map(|r| r.concat());
    prop_oneof![6 => valid.prop_flat_map(mutated), 2 => hostile(), 1 => prop::collection::vec(any::<u8>(), 0..128)]
}

/// Parses `bytes` with parser `protocol` whole and in `reads`: the same replies, each
/// within the buffer and the 1 GiB limit, and an error in both or neither.
pub(super) fn check_in(protocol: usize, bytes: &[u8], reads: &[usize]) {
    let (name, parse, _) = &protocols()[protocol];
    let shown = String::from_utf8_lossy(&bytes[..bytes.len().min(120)]).into_owned();
    within(&format!("{name}: {shown:?}"), || {
        let whole = kv(*parse, bytes, &[]);
        let split = kv(*parse, bytes, reads);
        for r in &whole.replies {
            if let Reply::Value { len } = r {
                assert!(*len <= MAX_REPLY, "{name}: a value of {len} bytes");
            }
        }
        assert_eq!(split.replies, whole.replies, "{name}: split {reads:?}");
        assert_eq!(split.error.is_some(), whole.error.is_some(), "{name}: {:?} / {:?}", whole.error, split.error);
    });
}

/// The corpus's inputs: through every parser, whole, byte by byte and in 7-byte reads.
pub(super) fn check(bytes: &[u8]) {
    for protocol in 0..protocols().len() {
        check_in(protocol, bytes, &vec![1; bytes.len().min(1 << 16)]);
        check_in(protocol, bytes, &[7; 4096]);
    }
}

proptest! {
    #![proptest_config(config(2000))]

    #[test]
    fn replies_parse_wait_or_fail_cleanly((protocol, bytes) in (0..6usize).prop_flat_map(|p| (Just(p), pipeline(p))), reads in reads()) {
        check_in(protocol, &bytes, &reads);
    }
}
