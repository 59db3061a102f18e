//! A request's header block: encoded once per target (HPACK literals, no dynamic table),
//! with the path and a flow's headers filled per request. The encoder's side of HTTP/2,
//! shared by every connection.

use crate::http::hpack;
use http::{HeaderMap, Method, Uri};
use std::sync::Arc;

/// A target's request header block, encoded once: the pseudo-headers before `:path`, the
/// `:path` field when the path is fixed, and the headers after it (the parts before and
/// after the path shared by the targets that have them alike). Fields are literals
/// without indexing (or static-table indexes): no dynamic table, so a block never depends
/// on the ones before it, and no Huffman (the server would decode faster, but a request's
/// bytes are few).
#[derive(Clone, Debug)]
pub(crate) struct Template {
    before: Arc<[u8]>,
    path: Option<Box<[u8]>>,
    after: Arc<[u8]>,
}

/// Headers HTTP/2 forbids (RFC 9113 8.2.2), and Host (the authority is `:authority`).
const NOT_SENT: [&str; 6] = ["connection", "host", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"];

impl Template {
    /// The block of `before` ([`Template::pseudo_headers`]), `path` (the fixed path, or
    /// `None` when each request fills its own) and `after` ([`Template::fields`]).
    pub(crate) fn new(before: Arc<[u8]>, path: Option<&str>, after: Arc<[u8]>) -> Template {
        let path = path.map(|p| {
            let mut field = Vec::new();
            put_path(&mut field, &[p.as_bytes()]);
            field.into_boxed_slice()
        });
        Template { before, path, after }
    }

    /// The pseudo-headers of `method` to `uri` (scheme and authority) before `:path`.
    pub(crate) fn pseudo_headers(method: &Method, uri: &Uri) -> Vec<u8> {
        let mut before = Vec::with_capacity(64);
        match hpack::static_index(":method", method.as_str()) {
            0 => hpack::put_literal(&mut before, 2, b"", method.as_str().as_bytes()),
            i => hpack::put_integer(&mut before, 0x80, 7, i),
        }
        let scheme = uri.scheme_str().unwrap_or("http");
        match hpack::static_index(":scheme", scheme) {
            0 => hpack::put_literal(&mut before, 6, b"", scheme.as_bytes()),
            i => hpack::put_integer(&mut before, 0x80, 7, i),
        }
        let authority = uri.authority().map_or("", |a| a.as_str());
        hpack::put_literal(&mut before, 1, b"", authority.as_bytes());
        before
    }

    /// `headers` as the block sends them, after `:path`.
    pub(crate) fn fields(headers: &HeaderMap) -> Vec<u8> {
        let mut after = Vec::with_capacity(64);
        put_headers(&mut after, headers.iter());
        after
    }

    /// The headers after the path, encoded: shared by the targets that have them alike.
    #[cfg(test)]
    pub(crate) fn after_path(&self) -> Arc<[u8]> {
        self.after.clone()
    }

    /// Appends the block to `out`, with `path` (its pieces) when the target's is not fixed,
    /// and `extra` headers.
    pub(crate) fn write<'a>(
        &self,
        path: Option<&[&[u8]]>,
        extra: impl Iterator<Item = (&'a http::HeaderName, &'a http::HeaderValue)>,
        out: &mut Vec<u8>,
    ) {
        out.extend_from_slice(&self.before);
        match (path, &self.path) {
            (Some(pieces), _) => put_path(out, pieces),
            (None, Some(field)) => out.extend_from_slice(field),
            (None, None) => put_path(out, &[b"/"]),
        }
        out.extend_from_slice(&self.after);
        put_headers(out, extra);
    }
}

/// Appends `:path` made of `pieces`.
fn put_path(out: &mut Vec<u8>, pieces: &[&[u8]]) {
    match pieces {
        [b"/"] => out.push(0x84),
        [b"/index.html"] => out.push(0x85),
        _ => {
            hpack::put_integer(out, 0, 4, 4);
            hpack::put_integer(out, 0, 7, pieces.iter().map(|p| p.len()).sum());
            for p in pieces {
                out.extend_from_slice(p);
            }
        }
    }
}

fn put_headers<'a>(out: &mut Vec<u8>, headers: impl Iterator<Item = (&'a http::HeaderName, &'a http::HeaderValue)>) {
    for (name, value) in headers {
        let name = name.as_str();
        if NOT_SENT.contains(&name) || (name == "te" && value.as_bytes() != b"trailers") {
            continue;
        }
        hpack::put_literal(out, hpack::static_name(name), name.as_bytes(), value.as_bytes());
    }
}
