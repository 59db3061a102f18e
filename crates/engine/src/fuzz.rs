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
pub use crate::http::h1::{MAX_HEAD as HTTP1_MAX_HEAD, READ_BUF as HTTP1_READ_BUF};
pub use crate::http::h2::{MAX_FRAME, MAX_HEADER_LIST, READ_BUF as HTTP2_READ_BUF};
pub use crate::http::hpack::TABLE_SIZE;

/// HTTP/2's frame types and flags (RFC 9113 6), to build what a server sends.
pub mod frame {
    pub use crate::http::h2::{
        CONTINUATION, DATA, END_HEADERS, END_STREAM, GOAWAY, HEADERS, PADDED, PING, PRIORITY, PRIORITY_FLAG,
        PUSH_PROMISE, RST_STREAM, SETTINGS, WINDOW_UPDATE,
    };
}

/// How an HTTP/1.1 response read ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum End {
    /// Complete; whether it left the connection open.
    Complete {
        /// The connection may carry another request.
        keep_alive: bool,
    },
    /// Failed: the error's kind and message.
    Failed(String),
    /// Never: the input always ends with the server closing.
    NeedsMore,
}

/// What reading an HTTP/1.1 response gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Http1 {
    /// The final status (0 before a head).
    pub status: u16,
    /// Body bytes read.
    pub body: u64,
    /// How it ended.
    pub end: End,
    /// The most bytes the read buffer and what was kept held.
    pub peak: usize,
}

/// Reads `response` as a connection does, each read taking the next of `reads` bytes (or
/// what the buffer has room for); the server closes after its last byte.
pub fn http1(response: &[u8], reads: &[usize], head_request: bool) -> Http1 {
    crate::http::h1::fuzz_read(response, reads, head_request)
}

/// One stream of [`http2`]'s connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Http2Stream {
    /// Its response's status (0 before a final head).
    pub status: u16,
    /// Body bytes kept (two of the four streams keep theirs).
    pub body: usize,
    /// `None` in flight, `Ok` complete, `Err` failed with this message.
    pub ended: Option<Result<(), String>>,
}

/// What an HTTP/2 connection made of a server's frames.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Http2 {
    /// The connection error that ended it (its code and why), if one did.
    pub error: Option<String>,
    /// Streams 1, 3, 5 and 7.
    pub streams: Vec<Http2Stream>,
    /// The most bytes the read buffer, the header block, decoded heads, kept bodies and the
    /// HPACK table held.
    pub peak: usize,
    /// Bytes the connection queued to send in answer (acknowledgements, window updates,
    /// resets, GOAWAY).
    pub out: usize,
}

/// Reads `frames`, what a server sent after its preface, as a connection's driver does.
pub fn http2(frames: &[u8], reads: &[usize]) -> Http2 {
    crate::http::h2::fuzz_frames(frames, reads)
}

/// A decoded header list: each field's name and value.
pub type HeaderList = Vec<(Vec<u8>, Vec<u8>)>;

/// What one HPACK decoder made of a connection's header blocks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hpack {
    /// Each block's fields, or why it was refused.
    pub blocks: Vec<Result<HeaderList, String>>,
    /// The most bytes the table, its memo and the decoded list held.
    pub peak: usize,
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
