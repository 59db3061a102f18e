//! What each frame the server sends does to a connection's state: one handler per frame
//! type, each with RFC 9113's checks. An error ends the connection (our GOAWAY); a stream's
//! own error resets it (RST_STREAM) and fails its request.

use super::frames::*;
use super::state::{Ended, Inner, Stage};
use super::window::MAX_WINDOW;
use super::{MAX_CONTINUATIONS, MAX_FRAME, MAX_HEADER_LIST, MAX_UNSENT_ACKS};
use crate::http::hpack;
use std::time::Instant;

impl Inner {
    /// Reads the frames in `buf` at `now`: how many bytes they took (a frame cut short
    /// waits for the rest). An error is the server breaking the protocol: the connection
    /// ends.
    pub(super) fn on_bytes(&mut self, buf: &[u8], now: Instant) -> Result<usize, Broken> {
        let mut used = 0;
        while buf.len() - used >= HEADER_LEN {
            let h = Header::read(&buf[used..]);
            if h.len > MAX_FRAME {
                return Err((FRAME_SIZE_ERROR, "a frame over SETTINGS_MAX_FRAME_SIZE"));
            }
            let start = used + HEADER_LEN;
            if buf.len() - start < h.len {
                break;
            }
            self.on_frame(h, &buf[start..start + h.len], now)?;
            used = start + h.len;
        }
        Ok(used)
    }

    /// One whole frame: the checks every frame type shares, then its type's handler.
    fn on_frame(&mut self, h: Header, payload: &[u8], now: Instant) -> Result<(), Broken> {
        let Header { kind, flags, id, .. } = h;
        if self.block.stream != 0 && kind != CONTINUATION {
            return Err((PROTOCOL_ERROR, "a frame inside a header block"));
        }
        if matches!(kind, PING | SETTINGS) && flags & ACK == 0 {
            self.unsent_acks += 1;
            if self.unsent_acks > MAX_UNSENT_ACKS {
                return Err((ENHANCE_YOUR_CALM, "a flood of PING or SETTINGS frames (10,000 answers unsent)"));
            }
        }
        if matches!(kind, DATA | HEADERS | RST_STREAM | WINDOW_UPDATE) && self.idle(id) {
            // RFC 9113 5.1: on an idle stream only HEADERS (and PRIORITY) may come, and a
            // server opens none here (push is off).
            return Err((PROTOCOL_ERROR, "a frame on a stream never opened"));
        }
        match kind {
            DATA => self.on_data(flags, id, payload, now),
            HEADERS => self.on_headers(flags, id, payload, now),
            CONTINUATION => self.on_continuation(flags, id, payload, now),
            SETTINGS => self.on_settings(flags, id, payload),
            PING => self.on_ping(flags, id, payload),
            WINDOW_UPDATE => self.on_window_update(id, payload),
            RST_STREAM => self.on_rst_stream(id, payload),
            GOAWAY => self.on_goaway(id, payload),
            PUSH_PROMISE => Err((PROTOCOL_ERROR, "a PUSH_PROMISE, with push disabled")),
            PRIORITY => self.on_priority(id, payload),
            // Frame types of extensions are ignored (RFC 9113 4.1, 5.5).
            _ => Ok(()),
        }
    }

    /// HEADERS: a whole head, or the first part of one that CONTINUATION frames finish.
    fn on_headers(&mut self, flags: u8, id: u32, payload: &[u8], now: Instant) -> Result<(), Broken> {
        if id == 0 {
            return Err((PROTOCOL_ERROR, "HEADERS on stream 0"));
        }
        let mut fragment = unpad(flags, payload)?;
        if flags & PRIORITY_FLAG != 0 {
            fragment = fragment.get(5..).ok_or((PROTOCOL_ERROR, "a HEADERS frame too short"))?;
        }
        if flags & END_HEADERS != 0 {
            return self.on_head(id, flags, fragment, now);
        }
        let block = &mut self.block;
        block.bytes.clear();
        block.bytes.extend_from_slice(fragment);
        (block.stream, block.flags, block.frames) = (id, flags, 0);
        Ok(())
    }

    /// CONTINUATION: more of the open header block, bounded in frames and bytes.
    fn on_continuation(&mut self, flags: u8, id: u32, payload: &[u8], now: Instant) -> Result<(), Broken> {
        let block = &mut self.block;
        if block.stream == 0 || id != block.stream {
            return Err((PROTOCOL_ERROR, "a CONTINUATION frame outside a header block"));
        }
        block.frames += 1;
        if block.frames > MAX_CONTINUATIONS || block.bytes.len() + payload.len() > MAX_HEADER_LIST {
            return Err((PROTOCOL_ERROR, "a header block over 1 MiB or 128 CONTINUATION frames"));
        }
        block.bytes.extend_from_slice(payload);
        if flags & END_HEADERS == 0 {
            return Ok(());
        }
        block.stream = 0;
        let bytes = std::mem::take(&mut block.bytes);
        let done = self.on_head(id, self.block.flags, &bytes, now);
        self.block.bytes = bytes;
        done
    }

    /// PING: answered (ACK) unless it is an answer.
    fn on_ping(&mut self, flags: u8, id: u32, payload: &[u8]) -> Result<(), Broken> {
        if id != 0 {
            return Err((PROTOCOL_ERROR, "PING on a stream"));
        }
        if payload.len() != 8 {
            return Err((FRAME_SIZE_ERROR, "a PING frame not of 8 bytes"));
        }
        if flags & ACK == 0 {
            frame(&mut self.out, 8, PING, ACK, 0);
            self.out.extend_from_slice(payload);
        }
        Ok(())
    }

    /// WINDOW_UPDATE: more window to send on the connection or a stream.
    fn on_window_update(&mut self, id: u32, payload: &[u8]) -> Result<(), Broken> {
        let [a, b, c, d] = payload.try_into().map_err(|_| (FRAME_SIZE_ERROR, "a bad WINDOW_UPDATE frame"))?;
        let inc = i64::from(u32::from_be_bytes([a, b, c, d]) & 0x7fff_ffff);
        if id == 0 {
            if inc == 0 {
                return Err((PROTOCOL_ERROR, "a WINDOW_UPDATE of 0"));
            }
            if self.send_window.grant(inc).is_err() {
                return Err((FLOW_CONTROL_ERROR, "a connection window over 2^31-1"));
            }
            self.wake_senders();
        } else if let Some(index) = self.find(id) {
            let e = &mut self.entries[index];
            let granted = e.send_window.grant(inc);
            if inc == 0 {
                self.stream_error(index, id, PROTOCOL_ERROR, "a WINDOW_UPDATE of 0 on a stream");
            } else if granted.is_err() {
                self.stream_error(index, id, FLOW_CONTROL_ERROR, "a stream's window over 2^31-1");
            } else if let Some(w) = e.waker.take() {
                w.wake();
            }
        }
        Ok(())
    }

    /// RST_STREAM: the server gave up on a stream; its request fails with the code.
    fn on_rst_stream(&mut self, id: u32, payload: &[u8]) -> Result<(), Broken> {
        let [a, b, c, d] = payload.try_into().map_err(|_| (FRAME_SIZE_ERROR, "a bad RST_STREAM frame"))?;
        if id == 0 {
            return Err((PROTOCOL_ERROR, "RST_STREAM on stream 0"));
        }
        if let Some(index) = self.find(id) {
            self.finish(index, id, Stage::Failed(Ended::Reset(u32::from_be_bytes([a, b, c, d]))));
        }
        Ok(())
    }

    /// GOAWAY: no new stream; those above its last stream id were not processed.
    fn on_goaway(&mut self, id: u32, payload: &[u8]) -> Result<(), Broken> {
        if id != 0 || payload.len() < 8 {
            return Err((PROTOCOL_ERROR, "a bad GOAWAY frame"));
        }
        let last = u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]]) & 0x7fff_ffff;
        let code = u32::from_be_bytes([payload[4], payload[5], payload[6], payload[7]]);
        self.goaway = Some(code);
        // The streams above its last id were not processed: they may go again.
        let above: Vec<(u32, usize)> = self.active.iter().copied().filter(|&(i, _)| i > last).collect();
        for (id, index) in above {
            self.finish(index, id, Stage::Failed(Ended::GoAway(code)));
        }
        for w in self.waiting.drain(..) {
            w.wake();
        }
        Ok(())
    }

    /// PRIORITY: its advice is ignored, but not its form (RFC 9113 6.3).
    fn on_priority(&mut self, id: u32, payload: &[u8]) -> Result<(), Broken> {
        if id == 0 {
            return Err((PROTOCOL_ERROR, "PRIORITY on stream 0"));
        }
        if let Some(index) = self.find(id).filter(|_| payload.len() != 5) {
            self.stream_error(index, id, FRAME_SIZE_ERROR, "a PRIORITY frame not of 5 bytes");
        }
        Ok(())
    }

    /// Whether stream `id` is idle (RFC 9113 5.1.1): one of ours not opened yet, or one a
    /// server would open (even), which it may not with push off.
    fn idle(&self, id: u32) -> bool {
        id != 0 && (id.is_multiple_of(2) || id >= self.next_id)
    }

    /// Wakes the streams that may wait for window to send.
    fn wake_senders(&mut self) {
        for &(_, index) in &self.active {
            if !self.entries[index].sent_end {
                if let Some(w) = self.entries[index].waker.take() {
                    w.wake();
                }
            }
        }
    }

    /// Stream `id` broke the protocol: reset, failed as such.
    fn stream_error(&mut self, index: usize, id: u32, code: u32, what: &'static str) {
        rst_stream(&mut self.out, id, code);
        self.finish(index, id, Stage::Failed(Ended::Broke(code, what)));
    }

    /// SETTINGS: the server's, applied and acknowledged; an acknowledgement of ours.
    fn on_settings(&mut self, flags: u8, id: u32, payload: &[u8]) -> Result<(), Broken> {
        if id != 0 {
            return Err((PROTOCOL_ERROR, "SETTINGS on a stream"));
        }
        if !payload.len().is_multiple_of(6) || (flags & ACK != 0 && !payload.is_empty()) {
            return Err((FRAME_SIZE_ERROR, "a bad SETTINGS frame"));
        }
        if flags & ACK != 0 {
            return Ok(());
        }
        if !self.peer.came {
            self.peer.came = true;
            // Absent, the limit is none.
            self.peer.max_streams = u32::MAX;
        }
        for s in payload.chunks_exact(6) {
            let value = u32::from_be_bytes([s[2], s[3], s[4], s[5]]);
            self.on_setting(u16::from_be_bytes([s[0], s[1]]), value)?;
        }
        frame(&mut self.out, 0, SETTINGS, ACK, 0);
        for w in self.waiting.drain(..) {
            w.wake();
        }
        Ok(())
    }

    /// One of the server's settings.
    fn on_setting(&mut self, id: u16, value: u32) -> Result<(), Broken> {
        match id {
            // RFC 9113 6.5.2: a client treats any value but 0 from a server as an error.
            0x2 if value != 0 => return Err((PROTOCOL_ERROR, "SETTINGS_ENABLE_PUSH from a server")),
            0x3 => self.peer.max_streams = value,
            0x4 => {
                if i64::from(value) > MAX_WINDOW {
                    return Err((FLOW_CONTROL_ERROR, "SETTINGS_INITIAL_WINDOW_SIZE over 2^31-1"));
                }
                let delta = i64::from(value) - self.peer.initial_window;
                self.peer.initial_window = i64::from(value);
                for &(_, index) in &self.active {
                    if self.entries[index].send_window.resize(delta).is_err() {
                        // RFC 9113 6.9.2: a connection error.
                        return Err((FLOW_CONTROL_ERROR, "SETTINGS_INITIAL_WINDOW_SIZE taking a window over 2^31-1"));
                    }
                }
                self.wake_senders();
            }
            0x5 => {
                if !(16_384..=16_777_215).contains(&value) {
                    return Err((PROTOCOL_ERROR, "a bad SETTINGS_MAX_FRAME_SIZE"));
                }
                self.peer.max_frame = value as usize;
            }
            _ => {}
        }
        Ok(())
    }

    /// A complete header block on stream `id`: a response head, an interim one, or trailers.
    fn on_head(&mut self, id: u32, flags: u8, block: &[u8], now: Instant) -> Result<(), Broken> {
        let index = self.find(id);
        let Inner { hpack, entries, trash, .. } = self;
        // Decoded whoever waits: the dynamic table must follow every block.
        let into = match index {
            Some(index) if matches!(entries[index].stage, Stage::Head) => &mut entries[index].fields,
            _ => trash,
        };
        hpack.decode(block, into, MAX_HEADER_LIST).map_err(|e| match e {
            hpack::Error::Compression(what) => (COMPRESSION_ERROR, what),
            hpack::Error::TooLarge => (PROTOCOL_ERROR, "a response head over 1 MiB"),
        })?;
        let Some(index) = index else { return Ok(()) };
        let end = flags & END_STREAM != 0;
        match self.entries[index].stage {
            Stage::Head => self.on_response_head(index, id, end, now),
            // Trailers: they end the stream.
            Stage::Body if end => {
                self.entries[index].end_at = Some(now);
                self.finish(index, id, Stage::Done);
            }
            Stage::Body => self.stream_error(index, id, PROTOCOL_ERROR, "trailers not ending the stream"),
            Stage::Done | Stage::Failed(_) => {}
        }
        Ok(())
    }

    /// A head decoded into stream `index`'s fields, where its response head is awaited: an
    /// interim one (skipped), the final one, or a broken one.
    fn on_response_head(&mut self, index: usize, id: u32, end: bool, now: Instant) {
        let status = self.entries[index].fields.get(b":status").and_then(parse_status);
        match status {
            None => self.stream_error(index, id, PROTOCOL_ERROR, "a response head without a valid :status"),
            // Interim (1xx but 101): the final head follows.
            Some(s) if (100..200).contains(&s) && s != 101 => {
                if end {
                    self.stream_error(index, id, PROTOCOL_ERROR, "an interim response ending the stream");
                }
            }
            Some(s) => {
                let e = &mut self.entries[index];
                e.status = s;
                e.head_at = Some(now);
                e.stage = Stage::Body;
                if end {
                    e.end_at = Some(now);
                    self.finish(index, id, Stage::Done);
                }
            }
        }
    }

    /// DATA: counted against both receive windows (given back each half), kept when the
    /// stream's step reads its body.
    fn on_data(&mut self, flags: u8, id: u32, payload: &[u8], now: Instant) -> Result<(), Broken> {
        if id == 0 {
            return Err((PROTOCOL_ERROR, "DATA on stream 0"));
        }
        // The whole frame counts against the windows, padding included.
        let len = payload.len() as u32;
        if self.recv_window.receive(len).is_err() {
            return Err((FLOW_CONTROL_ERROR, "DATA beyond the connection's window"));
        }
        if let Some(n) = self.recv_window.take_update() {
            window_update(&mut self.out, 0, n);
        }
        let data = unpad(flags, payload)?;
        let Some(index) = self.find(id) else { return Ok(()) };
        let end = flags & END_STREAM != 0;
        let e = &mut self.entries[index];
        if !matches!(e.stage, Stage::Body) {
            self.stream_error(index, id, PROTOCOL_ERROR, "DATA before the response head");
            return Ok(());
        }
        if e.recv_window.receive(len).is_err() {
            self.stream_error(index, id, FLOW_CONTROL_ERROR, "DATA beyond the stream's window");
            return Ok(());
        }
        if e.keep {
            let room = barrage_plan::flow::MAX_JUDGED_BODY.saturating_sub(e.body.len());
            e.body.extend_from_slice(&data[..data.len().min(room)]);
        }
        if end {
            e.end_at = Some(now);
            self.finish(index, id, Stage::Done);
            return Ok(());
        }
        if e.recv_window.full() {
            // The server sent all the window allowed: it waits for a WINDOW_UPDATE.
            self.count(|f| f.recv_stalls += 1);
        }
        if let Some(n) = self.entries[index].recv_window.take_update() {
            window_update(&mut self.out, id, n);
        }
        Ok(())
    }
}

/// A `:status` of three digits, the first not 0.
fn parse_status(v: &[u8]) -> Option<u16> {
    match v {
        [a @ b'1'..=b'9', b @ b'0'..=b'9', c @ b'0'..=b'9'] => {
            Some(u16::from(a - b'0') * 100 + u16::from(b - b'0') * 10 + u16::from(c - b'0'))
        }
        _ => None,
    }
}

/// One stream of [`fuzz_frames`]'s connection.
#[cfg(any(test, feature = "fuzz"))]
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
#[cfg(any(test, feature = "fuzz"))]
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

/// Reads `bytes`, what a server sent after its preface, as a connection's driver does:
/// four requests in flight (streams 1, 3, 5 and 7, two of them keeping their bodies, as a
/// flow's steps do), each read taking the next of `reads` bytes or what the buffer has
/// room for, the frames handled as they complete. Stops at the first connection error.
#[cfg(any(test, feature = "fuzz"))]
pub(crate) fn fuzz_frames(bytes: &[u8], reads: &[usize]) -> Http2 {
    use super::driver::read_room;
    use crate::http::Outgoing;
    let target = barrage_plan::Target::new(http::Method::GET, "http://127.0.0.1:1/x").expect("a valid target");
    let load = barrage_plan::Load::Closed { concurrency: 1, think_time: std::time::Duration::ZERO };
    let mut plan = barrage_plan::Plan::new(vec![target], load);
    plan.protocol = barrage_plan::Protocol::http2(1);
    let (prepared, _) = crate::prepared::prepare(&plan, None);
    let mut inner = Inner::new(4, false);
    let streams: Vec<usize> = (0..4)
        .map(|n| {
            let out = Outgoing { target: &prepared[0], id: 0, number: n, filled: None, trace: None };
            inner.open_stream(&out, true, n % 2 == 0)
        })
        .collect();
    let queued = inner.out.len();
    let (mut buf, mut input, mut reads) = (Vec::new(), bytes, reads.iter());
    let mut out = Http2 { error: None, streams: Vec::new(), peak: 0, out: 0 };
    while !input.is_empty() {
        read_room(&mut buf);
        let n = reads.next().copied().unwrap_or(usize::MAX).clamp(1, input.len()).min(buf.capacity() - buf.len());
        buf.extend_from_slice(&input[..n]);
        input = &input[n..];
        let handled = inner.on_bytes(&buf, Instant::now());
        let held: usize = inner.entries.iter().map(|e| e.fields.capacity() + e.body.capacity()).sum();
        let peak = buf.capacity() + inner.block.bytes.capacity() + inner.trash.capacity() + inner.hpack.held() + held;
        out.peak = out.peak.max(peak);
        out.out = inner.out.len() - queued;
        match handled {
            Ok(used) => drop(buf.drain(..used)),
            Err((code, what)) => {
                out.error = Some(format!("{}: {what}", Reason(code)));
                break;
            }
        }
    }
    for index in streams {
        let e = &inner.entries[index];
        let ended = match &e.stage {
            Stage::Head | Stage::Body => None,
            Stage::Done => Some(Ok(())),
            Stage::Failed(why) => Some(Err(why.failure(e.head_at.is_some(), false).message())),
        };
        out.streams.push(Http2Stream { status: e.status, body: e.body.len(), ended });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// h2spec's checks of a peer (RFC 9113), as they apply to a client reading a server:
    /// each frame, after the server's SETTINGS, with streams 1, 3, 5 and 7 in flight, ends
    /// the connection with its error code, or fails its stream with one, as the RFC says.
    #[test]
    fn frames_h2spec_checks_are_errors_of_the_rfc_s_codes() {
        let f = |kind, flags, id: u32, payload: &[u8]| {
            let mut out = Vec::new();
            frame(&mut out, payload.len(), kind, flags, id);
            out.extend_from_slice(payload);
            out
        };
        let setting = |id: u16, value: u32| f(SETTINGS, 0, 0, &[&id.to_be_bytes()[..], &value.to_be_bytes()].concat());
        let head = |id| f(HEADERS, END_HEADERS, id, &[0x88]);
        let window = |id, inc: u32| f(WINDOW_UPDATE, 0, id, &inc.to_be_bytes());
        // (h2spec's section, the frames, the connection error, or stream 1's failure)
        let table: Vec<(&str, Vec<u8>, &str)> = vec![
            ("4.2 DATA over the frame size", f(DATA, 0, 1, &[0; MAX_FRAME + 1]), "FRAME_SIZE_ERROR"),
            ("4.3 a bad header block", f(HEADERS, END_HEADERS, 1, &[0xff, 0x80]), "COMPRESSION_ERROR"),
            ("5.1 DATA on an idle stream", f(DATA, 0, 9, b"x"), "PROTOCOL_ERROR"),
            ("5.1 HEADERS on an idle stream", head(9), "PROTOCOL_ERROR"),
            ("5.1 HEADERS on a server's stream, push off", head(2), "PROTOCOL_ERROR"),
            ("5.1 RST_STREAM on an idle stream", f(RST_STREAM, 0, 9, &[0, 0, 0, 8]), "PROTOCOL_ERROR"),
            ("5.1 WINDOW_UPDATE on an idle stream", window(9, 1), "PROTOCOL_ERROR"),
            ("6.1 DATA on stream 0", f(DATA, 0, 0, b"x"), "PROTOCOL_ERROR"),
            ("6.1 DATA padded past its length", f(DATA, PADDED, 1, &[5, b'x']), "PROTOCOL_ERROR"),
            ("6.2 HEADERS on stream 0", head(0), "PROTOCOL_ERROR"),
            ("6.2 HEADERS padded past its length", f(HEADERS, END_HEADERS | PADDED, 1, &[3, 0x88]), "PROTOCOL_ERROR"),
            ("6.3 PRIORITY on stream 0", f(PRIORITY, 0, 0, &[0, 0, 0, 3, 16]), "PROTOCOL_ERROR"),
            ("6.3 PRIORITY of 4 bytes", f(PRIORITY, 0, 1, &[0, 0, 0, 3]), "stream FRAME_SIZE_ERROR"),
            ("6.4 RST_STREAM on stream 0", f(RST_STREAM, 0, 0, &[0, 0, 0, 8]), "PROTOCOL_ERROR"),
            ("6.4 RST_STREAM of 3 bytes", f(RST_STREAM, 0, 1, &[0, 0, 8]), "FRAME_SIZE_ERROR"),
            ("6.5 SETTINGS on stream 1", f(SETTINGS, 0, 1, &[]), "PROTOCOL_ERROR"),
            ("6.5 SETTINGS of 5 bytes", f(SETTINGS, 0, 0, &[0, 3, 0, 0, 1]), "FRAME_SIZE_ERROR"),
            ("6.5 SETTINGS ACK with a payload", f(SETTINGS, ACK, 0, &[0, 3, 0, 0, 0, 1]), "FRAME_SIZE_ERROR"),
            ("6.5.2 ENABLE_PUSH 2", setting(0x2, 2), "PROTOCOL_ERROR"),
            ("6.5.2 ENABLE_PUSH 1 from a server", setting(0x2, 1), "PROTOCOL_ERROR"),
            ("6.5.2 INITIAL_WINDOW_SIZE 2^31", setting(0x4, 1 << 31), "FLOW_CONTROL_ERROR"),
            ("6.5.2 MAX_FRAME_SIZE under 16384", setting(0x5, 16_383), "PROTOCOL_ERROR"),
            ("6.5.2 MAX_FRAME_SIZE over 2^24-1", setting(0x5, 1 << 24), "PROTOCOL_ERROR"),
            ("6.7 PING of 7 bytes", f(PING, 0, 0, &[0; 7]), "FRAME_SIZE_ERROR"),
            ("6.7 PING on stream 1", f(PING, 0, 1, &[0; 8]), "PROTOCOL_ERROR"),
            ("6.8 GOAWAY on stream 1", f(GOAWAY, 0, 1, &[0; 8]), "PROTOCOL_ERROR"),
            ("6.9 WINDOW_UPDATE of 0", window(0, 0), "PROTOCOL_ERROR"),
            ("6.9 WINDOW_UPDATE of 0 on a stream", window(1, 0), "stream PROTOCOL_ERROR"),
            ("6.9 WINDOW_UPDATE of 3 bytes", f(WINDOW_UPDATE, 0, 0, &[0, 0, 1]), "FRAME_SIZE_ERROR"),
            ("6.9.1 the connection's window over 2^31-1", window(0, MAX_WINDOW as u32), "FLOW_CONTROL_ERROR"),
            ("6.9.1 a stream's window over 2^31-1", window(1, MAX_WINDOW as u32), "stream FLOW_CONTROL_ERROR"),
            (
                "6.9.2 INITIAL_WINDOW_SIZE pushing a window over 2^31-1",
                [window(1, MAX_WINDOW as u32 - 65_535), setting(0x4, 65_536)].concat(),
                "FLOW_CONTROL_ERROR",
            ),
            (
                "6.10 a frame between HEADERS and CONTINUATION",
                [f(HEADERS, 0, 1, &[0x88]), f(DATA, 0, 1, b"x")].concat(),
                "PROTOCOL_ERROR",
            ),
            (
                "6.10 CONTINUATION on another stream",
                [f(HEADERS, 0, 1, &[0x88]), f(CONTINUATION, END_HEADERS, 3, &[])].concat(),
                "PROTOCOL_ERROR",
            ),
            (
                "6.10 CONTINUATION after END_HEADERS",
                [head(1), f(CONTINUATION, END_HEADERS, 1, &[])].concat(),
                "PROTOCOL_ERROR",
            ),
            ("8.1 trailers not ending the stream", [head(1), head(1)].concat(), "stream PROTOCOL_ERROR"),
            ("8.1 a head without :status", f(HEADERS, END_HEADERS, 1, &[0x82]), "stream PROTOCOL_ERROR"),
            ("8.4 PUSH_PROMISE, push off", f(PUSH_PROMISE, END_HEADERS, 1, &[0, 0, 0, 2, 0x88]), "PROTOCOL_ERROR"),
        ];
        let mut wrong = Vec::new();
        for (what, frames, want) in table {
            let bytes = [f(SETTINGS, 0, 0, &[]), frames].concat();
            let r = crate::fuzz::http2(&bytes, &[]);
            let got = match (&r.error, &r.streams[0].ended) {
                (Some(e), _) => e.split(':').next().unwrap_or_default().to_string(),
                (None, Some(Err(e))) => {
                    let code = e.split(['(', ')']).nth(1).unwrap_or(e);
                    format!("stream {code}")
                }
                (None, other) => format!("no error ({other:?})"),
            };
            if got != want {
                wrong.push(format!("{what}: {got}, not {want}"));
            }
        }
        assert!(wrong.is_empty(), "{wrong:#?}");
    }
}
