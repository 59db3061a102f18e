//! What servers send, through the engine's parsers as its connections feed them: the hooks
//! of the binary's fuzz harness (`crates/cli/fuzz/`), behind the `fuzz` feature (on only
//! in the binary's tests). Each function takes a server's bytes and the sizes of the reads
//! they arrive in, and tells what the parser made of them and the most memory its buffers
//! held meanwhile, for the harness to hold to the bounds.
//!
//! - [`http1`]: a response through the HTTP/1.1 reader, its connection's read buffer, and
//!   what a flow's step keeps (head, capped body).
//! - [`http2`]: frames through an HTTP/2 connection's frame handling, with four streams in
//!   flight (HPACK, flow control, CONTINUATION, settings, resets, GOAWAY).
//! - [`hpack`]: header blocks through one HPACK decoder, its dynamic table's accounting
//!   checked after each.
//! - [`kv`]: replies through a key-value connection's parsing loop (RESP2, RESP3,
//!   memcached text and meta).

use crate::kv::{Partial, ProtocolError, Reply};

/// The bounds the parsers are held to: HTTP/1.1's head and read buffer, HTTP/2's frame,
/// header list and read buffer, HPACK's table.
pub use crate::http::h1::READ_BUF as HTTP1_READ_BUF;
pub use crate::http::h1_read::MAX_HEAD as HTTP1_MAX_HEAD;
pub use crate::http::h2::{MAX_FRAME, MAX_HEADER_LIST, READ_BUF as HTTP2_READ_BUF};
pub use crate::http::hpack::TABLE_SIZE;

/// What the parsers report: each protocol's module fills its own, so none names this one.
pub use crate::http::h1::{End, Http1};
pub use crate::http::h2::{Http2, Http2Stream};
pub use crate::http::hpack::{HeaderList, Hpack};

/// HTTP/2's frame types and flags (RFC 9113 6), to build what a server sends.
pub mod frame {
    pub use crate::http::h2::{
        CONTINUATION, DATA, END_HEADERS, END_STREAM, GOAWAY, HEADERS, PADDED, PING, PRIORITY, PRIORITY_FLAG,
        PUSH_PROMISE, RST_STREAM, SETTINGS, WINDOW_UPDATE,
    };
}

/// Reads `response` as a connection does, each read taking the next of `reads` bytes (or
/// what the buffer has room for); the server closes after its last byte.
pub fn http1(response: &[u8], reads: &[usize], head_request: bool) -> Http1 {
    crate::http::h1::fuzz_read(response, reads, head_request)
}

/// Reads `frames`, what a server sent after its preface, as a connection's driver does.
pub fn http2(frames: &[u8], reads: &[usize]) -> Http2 {
    crate::http::h2::fuzz_frames(frames, reads)
}

/// Decodes `blocks` in turn on one table, each list at most `limit` bytes (RFC 7541's count);
/// panics if the table's accounting breaks.
pub fn hpack(blocks: &[&[u8]], limit: usize) -> Hpack {
    crate::http::hpack::fuzz_blocks(blocks, limit)
}

/// A reply parser of [`crate::kv`]: the first reply in a buffer and its length, going on
/// from where it stopped on the same reply.
pub type Parser = fn(&[u8], &mut Partial) -> Result<Option<(Reply, usize)>, ProtocolError>;

/// What a key-value connection made of a server's replies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kv {
    /// The replies, in order.
    pub replies: Vec<Reply>,
    /// The error that put the connection out of step, if one did.
    pub error: Option<String>,
    /// Bytes left unparsed (part of a reply) when the input ended.
    pub left: usize,
}

/// Parses `replies` as a key-value connection does: after each read (the next of `reads`
/// bytes), every complete reply at the start of its buffer, in turn. Panics if the parser
/// claims bytes it was not given, or none.
pub fn kv(parse: Parser, replies: &[u8], reads: &[usize]) -> Kv {
    let (mut buf, mut input, mut reads) = (Vec::new(), replies, reads.iter());
    let mut out = Kv { replies: Vec::new(), error: None, left: 0 };
    let mut partial = Partial::default();
    while !input.is_empty() {
        let n = reads.next().copied().unwrap_or(usize::MAX).clamp(1, input.len());
        buf.extend_from_slice(&input[..n]);
        input = &input[n..];
        loop {
            match parse(&buf, &mut partial) {
                Ok(Some((reply, used))) => {
                    assert!(used > 0 && used <= buf.len(), "a reply of {used} bytes in a buffer of {}", buf.len());
                    if let Reply::Error { message, .. } = &reply {
                        assert!(message.end <= used, "an error's message past its reply");
                    }
                    out.replies.push(reply);
                    buf.drain(..used);
                }
                Ok(None) => break,
                Err(e) => {
                    out.error = Some(e.to_string());
                    return out;
                }
            }
        }
    }
    out.left = buf.len();
    out
}
