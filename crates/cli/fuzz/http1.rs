//! HTTP/1.1 responses, as a connection reads them (`barrage_engine::fuzz::http1`): valid
//! responses of every framing, built from parts, then changed the ways a broken or hostile
//! server would (cut short, bytes flipped, lengths and chunk sizes swapped for huge,
//! negative or malformed ones, heads and chunk lines made endless, line ends changed),
//! and random bytes; in reads of any size. Each read ends complete or in a classified
//! failure, never a panic, within [`super::LIMIT`], in a bounded buffer, and the same
//! however the bytes are split.

use super::mutate::{mutated, reads};
use super::{config, within};
use barrage_engine::fuzz::{http1, End, Http1, HTTP1_MAX_HEAD, HTTP1_READ_BUF};
use proptest::prelude::*;

/// The most a read may hold: the read buffer (a head at its bound, and a read's room after
/// it) and the start of the body a flow's step keeps, at most the input.
fn bound(input: usize) -> usize {
    HTTP1_MAX_HEAD + 2 * HTTP1_READ_BUF + 2 * input
}

/// What a response head says of its body, and its status line.
fn head() -> impl Strategy<Value = String> {
    let status = prop::sample::select(
        &["200 OK", "404 Not Found", "204 No Content", "304 Not Modified", "999 X", "101 Switching"][..],
    );
    let version = prop::sample::select(&["HTTP/1.1", "HTTP/1.0"][..]);
    let framing = prop::sample::select(
        &[
            "Content-Length: 5\r\n",
            "Transfer-Encoding: chunked\r\n",
            "Transfer-Encoding: gzip, chunked\r\n",
            "Content-Length: 5, 5\r\n",
            "Connection: close\r\n",
            "",
        ][..],
    );
    let extra = prop::sample::select(
        &[
            "",
            "Server: nginx\r\nX-Cache: HIT from squid\r\n",
            "Connection: keep-alive\r\n",
            "Age: 3\r\nX-Served-By: b1\r\n",
        ][..],
    );
    (version, status, framing, extra).prop_map(|(v, s, f, e)| format!("{v} {s}\r\n{e}{f}\r\n"))
}

/// A body in the framing its head says (the chunked one with extensions and trailers).
fn response() -> impl Strategy<Value = Vec<u8>> {
    let interim = prop::sample::select(
        &["", "HTTP/1.1 100 Continue\r\n\r\n", "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"][..],
    );
    (interim, head(), prop::collection::vec(prop::collection::vec(any::<u8>(), 1..24), 0..4)).prop_map(
        |(interim, head, chunks)| {
            let mut r = format!("{interim}{head}").into_bytes();
            if head.contains("chunked") {
                for c in &chunks {
                    r.extend(format!("{:x};ext=v\r\n", c.len()).into_bytes());
                    r.extend(c);
                    r.extend(b"\r\n");
                }
                r.extend(b"0\r\nX-Trailer: t\r\n\r\n");
            } else {
                r.extend(b"hello");
            }
            r
        },
    )
}

/// A response to read: a valid one changed, or random bytes.
fn input() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        9 => response().prop_flat_map(mutated),
        1 => prop::collection::vec(any::<u8>(), 0..512),
    ]
}

/// Reads `response` in `reads` (and whole, and as the answer to a HEAD), holding each read
/// to the bounds.
pub(super) fn check_in(response: &[u8], reads: &[usize]) {
    let shown = String::from_utf8_lossy(&response[..response.len().min(200)]).into_owned();
    within(&shown, || {
        let whole = checked(response, &[], false);
        let split = checked(response, reads, false);
        assert_eq!(class(&split), class(&whole), "split {reads:?} of {shown:?}");
        checked(response, reads, true);
    });
}

/// What is the same however the bytes are split: the status, the body read, and how the
/// read ended (its error's kind; the message may name another bound first).
fn class(r: &Http1) -> (u16, u64, String) {
    let end = match &r.end {
        End::Complete { keep_alive } => format!("complete, keep-alive {keep_alive}"),
        End::Failed(why) => why.split(':').next().unwrap_or_default().to_string(),
        End::NeedsMore => "needs more".into(),
    };
    (r.status, r.body, end)
}

fn checked(response: &[u8], reads: &[usize], head_request: bool) -> Http1 {
    let r = http1(response, reads, head_request);
    assert_ne!(r.end, End::NeedsMore, "the server closed: the read ends");
    assert!(r.body <= response.len() as u64, "{} body bytes of {}", r.body, response.len());
    assert!(r.peak <= bound(response.len()), "held {} bytes for {}", r.peak, response.len());
    if let End::Failed(why) = &r.end {
        assert!(why.starts_with("protocol: ") || why.starts_with("reset: "), "{why}");
    }
    r
}

/// The corpus's inputs: read whole, byte by byte, and in 7-byte reads.
pub(super) fn check(response: &[u8]) {
    check_in(response, &vec![1; response.len()]);
    check_in(response, &[7; 4096]);
}

proptest! {
    #![proptest_config(config(3000))]

    #[test]
    fn responses_read_complete_or_fail_cleanly_in_bounds(response in input(), reads in reads()) {
        check_in(&response, &reads);
    }
}
