//! Byte-level changes to what a server sends, shared by the fuzzers of the response,
//! frame and reply parsers: cut short, bits flipped, bytes overwritten, inserted or
//! removed, a stretch repeated, a number swapped for one at or past a limit. Each fuzzer
//! builds valid input its own, structure-aware way, then applies a few of these, so most
//! inputs get far into a parser before something breaks; and the reads they arrive in.

use proptest::prelude::*;
use proptest::sample::Index;

/// Numbers at the edges of what the parsers take: signs, zero, the limits (1 GiB, 2^31,
/// 2^32, 2^64) and past them, in decimal and hexadecimal.
pub const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "-2",
    "00",
    "+5",
    " 5",
    "5 ",
    "1073741824",
    "1073741825",
    "2147483647",
    "2147483648",
    "4294967295",
    "4294967296",
    "99999999999",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999",
    "ffffffffffffffff",
    "fffffffffffffffff",
    "7fffffff",
    "0x10",
    "1e3",
    "",
];

/// One change to a server's bytes.
#[derive(Clone, Debug)]
pub enum Mutation {
    Cut(Index),
    Flip(Index, u8),
    Overwrite(Index, Vec<u8>),
    Insert(Index, Vec<u8>),
    Remove(Index, usize),
    /// The stretch from the first index, of the given length, repeated that many times.
    Repeat(Index, usize, usize),
    /// The n-th run of digits (or hex digits) replaced by one of [`NUMBERS`].
    Number(Index, &'static str),
    /// Every CRLF made a bare LF, or a bare CR.
    LineEnds(bool),
}

/// Bytes that matter to the parsers: line ends, separators, type bytes of RESP, NUL.
const SPECIAL: &[&[u8]] = &[b"\r\n", b"\r", b"\n", b":", b";", b" ", b"\0", b"*", b"$", b"-", b"\xff"];

fn special() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![prop::sample::select(SPECIAL).prop_map(<[u8]>::to_vec), prop::collection::vec(any::<u8>(), 1..8)]
}

pub fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        2 => any::<Index>().prop_map(Mutation::Cut),
        3 => (any::<Index>(), 0u8..8).prop_map(|(at, bit)| Mutation::Flip(at, bit)),
        2 => (any::<Index>(), special()).prop_map(|(at, b)| Mutation::Overwrite(at, b)),
        2 => (any::<Index>(), special()).prop_map(|(at, b)| Mutation::Insert(at, b)),
        1 => (any::<Index>(), 1usize..16).prop_map(|(at, n)| Mutation::Remove(at, n)),
        1 => (any::<Index>(), 1usize..32, 2usize..200).prop_map(|(at, len, times)| Mutation::Repeat(at, len, times)),
        4 => (any::<Index>(), prop::sample::select(NUMBERS)).prop_map(|(at, n)| Mutation::Number(at, n)),
        1 => any::<bool>().prop_map(Mutation::LineEnds),
    ]
}

/// Applies `m` to `bytes`.
pub fn apply(bytes: &mut Vec<u8>, m: &Mutation) {
    let len = bytes.len();
    let at = |i: &Index| if len == 0 { 0 } else { i.index(len) };
    match m {
        Mutation::Cut(i) => bytes.truncate(at(i)),
        Mutation::Flip(i, bit) if len > 0 => bytes[at(i)] ^= 1 << bit,
        Mutation::Flip(..) => {}
        Mutation::Overwrite(i, b) => {
            let at = at(i);
            let end = (at + b.len()).min(len);
            bytes[at..end].copy_from_slice(&b[..end - at]);
        }
        Mutation::Insert(i, b) => drop(bytes.splice(at(i)..at(i), b.iter().copied())),
        Mutation::Remove(i, n) => drop(bytes.drain(at(i)..(at(i) + n).min(len))),
        Mutation::Repeat(i, n, times) => {
            let stretch = bytes[at(i)..(at(i) + n).min(len)].to_vec();
            let copies: Vec<u8> = stretch.iter().copied().cycle().take(stretch.len() * times).collect();
            bytes.splice(at(i)..at(i), copies);
        }
        Mutation::Number(i, n) => {
            let runs = digit_runs(bytes);
            if !runs.is_empty() {
                let (start, end) = runs[i.index(runs.len())];
                bytes.splice(start..end, n.bytes());
            }
        }
        Mutation::LineEnds(cr) => {
            let end: &[u8] = if *cr { b"\r" } else { b"\n" };
            let mut out = Vec::with_capacity(len);
            let mut rest = &bytes[..];
            while let Some(p) = rest.windows(2).position(|w| w == b"\r\n") {
                out.extend_from_slice(&rest[..p]);
                out.extend_from_slice(end);
                rest = &rest[p + 2..];
            }
            out.extend_from_slice(rest);
            *bytes = out;
        }
    }
}

/// Where the runs of hexadecimal digits are (decimal ones among them).
fn digit_runs(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut runs = Vec::new();
    let mut start = None;
    for (i, b) in bytes.iter().enumerate() {
        match (b.is_ascii_hexdigit(), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                runs.push((s, i));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        runs.push((s, bytes.len()));
    }
    runs
}

/// `seed` changed by up to three mutations.
pub fn mutated(seed: Vec<u8>) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(mutation(), 0..4).prop_map(move |ms| {
        let mut bytes = seed.clone();
        for m in &ms {
            apply(&mut bytes, m);
        }
        bytes
    })
}

/// `seed` as it is, or (as often, by `weight` to 1) changed: enough valid input reaches
/// the deep end of a parser.
pub fn maybe_mutated(seed: Vec<u8>, weight: u32) -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![weight => Just(seed.clone()), 1 => mutated(seed)]
}

/// The sizes of the reads the bytes arrive in: whole (as much as the buffer takes), byte by
/// byte, or pieces of random sizes.
pub fn reads() -> impl Strategy<Value = Vec<usize>> {
    prop_oneof![
        2 => Just(Vec::new()),
        1 => Just(vec![1; 1 << 16]),
        3 => prop::collection::vec(1usize..64, 1..32),
    ]
}
