//! The HTTP/1.1 request encoder: a target's head encoded once ([`Template`]), a flow's step's
//! encoded per request ([`encode_head`]), and whether a body is copied behind its head. Apart
//! from the connection that writes them (`h1`), so that preparing a run's targets uses it
//! without naming the HTTP client above; it names no other engine module.

use http::header::{CONTENT_LENGTH, TRANSFER_ENCODING};
use http::{HeaderMap, HeaderName, HeaderValue, Method};
use std::sync::Arc;

/// Request bodies up to this size are copied behind the head, for one write; larger ones go
/// out from their shared buffer by `writev`, however many requests are in flight.
const COPY_BODY: usize = 16 * 1024;

/// A target's request head, encoded once: the request line up to a URL template's id (the
/// whole path when there is no id), the rest of the path after the id, and the rest of the
/// head, which the targets with the same headers and body length share.
#[derive(Clone, Debug)]
pub(crate) struct Template {
    line: Box<[u8]>,
    suffix: Option<Box<[u8]>>,
    rest: Arc<[u8]>,
}

impl Template {
    /// The head of `method` to `path` (origin-form; a template's id goes between `path.0`
    /// and `path.1`), then `rest` ([`Template::rest`]).
    pub(crate) fn new(method: &Method, path: (&str, Option<&str>), rest: Arc<[u8]>) -> Template {
        let mut line = Vec::with_capacity(method.as_str().len() + 1 + path.0.len());
        line.extend_from_slice(method.as_str().as_bytes());
        line.push(b' ');
        line.extend_from_slice(path.0.as_bytes());
        Template { line: line.into(), suffix: path.1.map(|s| s.as_bytes().into()), rest }
    }

    /// What follows a request's path: the version, `headers` and a body of `body_len` bytes.
    pub(crate) fn rest(headers: &HeaderMap, body_len: usize) -> Vec<u8> {
        let mut rest = Vec::with_capacity(256);
        encode_rest(&mut rest, "", headers, &[], body_len);
        rest
    }

    /// Appends the head, with `id` when the target is a template, to `out`.
    pub(crate) fn write(&self, id: u64, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.line);
        if let Some(suffix) = &self.suffix {
            push_decimal(out, id);
            out.extend_from_slice(suffix);
        }
        out.extend_from_slice(&self.rest);
    }
}

/// Appends a head to `out`: the request line of `method` and `path`, `headers`, then
/// `extra` headers (a flow's), and the body's length.
pub(crate) fn encode_head(
    out: &mut Vec<u8>,
    method: &Method,
    path: &str,
    headers: &HeaderMap,
    extra: &[(HeaderName, HeaderValue)],
    body_len: usize,
) {
    out.extend_from_slice(method.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(path.as_bytes());
    encode_rest(out, "", headers, extra, body_len);
}

/// The rest of a head after the path (or the part of it before an id): `suffix`, the
/// version, the headers and the body's length. A body's length is its own: a
/// `Content-Length` or `Transfer-Encoding` among the headers goes only with an empty body,
/// where it is the user's to send (as hyper's client did).
fn encode_rest(
    out: &mut Vec<u8>,
    suffix: &str,
    headers: &HeaderMap,
    extra: &[(HeaderName, HeaderValue)],
    body_len: usize,
) {
    out.extend_from_slice(suffix.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    let lines = headers.iter().chain(extra.iter().map(|(n, v)| (n, v)));
    for (name, value) in lines {
        if body_len > 0 && (name == CONTENT_LENGTH || name == TRANSFER_ENCODING) {
            continue;
        }
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    if body_len > 0 {
        out.extend_from_slice(b"content-length: ");
        push_decimal(out, body_len as u64);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

/// Appends `n` in decimal (itoa: no formatter, no allocation).
pub(crate) fn push_decimal(out: &mut Vec<u8>, n: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

/// Whether a body of `len` bytes goes out behind the head, copied into one write.
pub(crate) fn copies_body(len: usize) -> bool {
    len <= COPY_BODY
}
