//! HTTP/2's frames (RFC 9113 4, 6, 7): types, flags and error codes, a frame header read
//! and written, and the frames the client writes itself. Bytes in, bytes out, with no
//! connection state, so the codec is read and tested on its own.

use barrage_metrics::ErrorKind;

pub(super) const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// The length of a frame header.
pub(super) const HEADER_LEN: usize = 9;

// Frame types and flags (RFC 9113 6).
pub const DATA: u8 = 0x0;
pub const HEADERS: u8 = 0x1;
pub const RST_STREAM: u8 = 0x3;
pub const SETTINGS: u8 = 0x4;
pub const PUSH_PROMISE: u8 = 0x5;
pub const PING: u8 = 0x6;
pub const GOAWAY: u8 = 0x7;
pub const WINDOW_UPDATE: u8 = 0x8;
pub const CONTINUATION: u8 = 0x9;
pub const END_STREAM: u8 = 0x1;
pub(super) const ACK: u8 = 0x1;
pub const END_HEADERS: u8 = 0x4;
pub const PADDED: u8 = 0x8;
pub const PRIORITY: u8 = 0x2;
pub const PRIORITY_FLAG: u8 = 0x20;

// Error codes (RFC 9113 7).
pub(super) const PROTOCOL_ERROR: u32 = 0x1;
pub(super) const FLOW_CONTROL_ERROR: u32 = 0x3;
pub(super) const FRAME_SIZE_ERROR: u32 = 0x6;
pub(super) const REFUSED_STREAM: u32 = 0x7;
pub(super) const CANCEL: u32 = 0x8;
pub(super) const COMPRESSION_ERROR: u32 = 0x9;
pub(super) const ENHANCE_YOUR_CALM: u32 = 0xb;

/// The largest stream id (RFC 9113 5.1.1).
pub(super) const MAX_STREAM_ID: u32 = (1 << 31) - 1;

/// The server broke the protocol: the error code we answer with, and what it did.
pub(super) type Broken = (u32, &'static str);

/// A frame header (RFC 9113 4.1): its payload's length, type, flags and stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Header {
    pub(super) len: usize,
    pub(super) kind: u8,
    pub(super) flags: u8,
    pub(super) id: u32,
}

impl Header {
    /// Reads the header at the start of `h` (at least [`HEADER_LEN`] bytes); the reserved
    /// bit of the stream id is ignored.
    #[inline]
    pub(super) fn read(h: &[u8]) -> Header {
        let len = (usize::from(h[0]) << 16) | (usize::from(h[1]) << 8) | usize::from(h[2]);
        let id = u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff;
        Header { len, kind: h[3], flags: h[4], id }
    }
}

/// Appends a frame header.
pub(super) fn frame(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, id: u32) {
    let [_, a, b, c] = (len as u32).to_be_bytes();
    out.extend_from_slice(&[a, b, c, kind, flags]);
    out.extend_from_slice(&id.to_be_bytes());
}

pub(super) fn window_update(out: &mut Vec<u8>, id: u32, inc: u32) {
    frame(out, 4, WINDOW_UPDATE, 0, id);
    out.extend_from_slice(&inc.to_be_bytes());
}

pub(super) fn rst_stream(out: &mut Vec<u8>, id: u32, code: u32) {
    frame(out, 4, RST_STREAM, 0, id);
    out.extend_from_slice(&code.to_be_bytes());
}

pub(super) fn goaway(out: &mut Vec<u8>, last: u32, code: u32) {
    frame(out, 8, GOAWAY, 0, 0);
    out.extend_from_slice(&last.to_be_bytes());
    out.extend_from_slice(&code.to_be_bytes());
}

pub(super) fn settings(out: &mut Vec<u8>, settings: &[(u16, u32)]) {
    frame(out, settings.len() * 6, SETTINGS, 0, 0);
    for (id, value) in settings {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&value.to_be_bytes());
    }
}

/// A frame's payload without its padding.
pub(super) fn unpad(flags: u8, payload: &[u8]) -> Result<&[u8], Broken> {
    if flags & PADDED == 0 {
        return Ok(payload);
    }
    let (&pad, rest) = payload.split_first().ok_or((PROTOCOL_ERROR, "a padded frame without its pad length"))?;
    rest.len()
        .checked_sub(usize::from(pad))
        .map(|n| &rest[..n])
        .ok_or((PROTOCOL_ERROR, "padding longer than its frame"))
}

/// Reason codes that say an endpoint broke the protocol, rather than gave up on a stream.
pub(super) fn reason_kind(code: u32) -> ErrorKind {
    match code {
        // PROTOCOL_ERROR, FLOW_CONTROL_ERROR, SETTINGS_TIMEOUT, STREAM_CLOSED,
        // FRAME_SIZE_ERROR, COMPRESSION_ERROR, INADEQUATE_SECURITY, HTTP_1_1_REQUIRED.
        0x1 | 0x3 | 0x4 | 0x5 | 0x6 | 0x9 | 0xc | 0xd => ErrorKind::Protocol,
        _ => ErrorKind::Reset,
    }
}

/// A reason code, named as RFC 9113 names it.
pub(super) struct Reason(pub(super) u32);

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const NAMES: [&str; 14] = [
            "NO_ERROR",
            "PROTOCOL_ERROR",
            "INTERNAL_ERROR",
            "FLOW_CONTROL_ERROR",
            "SETTINGS_TIMEOUT",
            "STREAM_CLOSED",
            "FRAME_SIZE_ERROR",
            "REFUSED_STREAM",
            "CANCEL",
            "COMPRESSION_ERROR",
            "CONNECT_ERROR",
            "ENHANCE_YOUR_CALM",
            "INADEQUATE_SECURITY",
            "HTTP_1_1_REQUIRED",
        ];
        match NAMES.get(self.0 as usize) {
            Some(name) => f.write_str(name),
            None => write!(f, "code {:#x}", self.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A header written is read back whole, the stream id's reserved bit dropped.
    #[test]
    fn a_frame_header_reads_back_what_was_written() {
        let table = [
            (0, SETTINGS, ACK, 0),
            (16_384, DATA, END_STREAM | PADDED, 1),
            ((1 << 24) - 1, HEADERS, END_HEADERS, MAX_STREAM_ID),
        ];
        for (len, kind, flags, id) in table {
            let mut out = Vec::new();
            frame(&mut out, len, kind, flags, id);
            assert_eq!(out.len(), HEADER_LEN);
            assert_eq!(Header::read(&out), Header { len, kind, flags, id });
        }
        let reserved = [0, 0, 0, DATA, 0, 0x80, 0, 0, 3];
        assert_eq!(Header::read(&reserved).id, 3);
    }

    #[test]
    fn padding_is_taken_off_or_an_error() {
        type Unpadded = Result<&'static [u8], &'static str>;
        let table: [(u8, &[u8], Unpadded); 5] = [
            (0, b"abc", Ok(b"abc")),
            (PADDED, &[1, b'a', b'b', 0], Ok(b"ab")),
            (PADDED, &[0], Ok(b"")),
            (PADDED, &[], Err("a padded frame without its pad length")),
            (PADDED, &[3, b'a', 0], Err("padding longer than its frame")),
        ];
        for (flags, payload, want) in table {
            assert_eq!(unpad(flags, payload).map_err(|(_, what)| what), want, "{payload:?}");
        }
    }

    #[test]
    fn reason_codes_are_named_as_the_rfc_names_them() {
        assert_eq!(Reason(REFUSED_STREAM).to_string(), "REFUSED_STREAM");
        assert_eq!(Reason(0xd).to_string(), "HTTP_1_1_REQUIRED");
        assert_eq!(Reason(0xff).to_string(), "code 0xff");
    }
}
