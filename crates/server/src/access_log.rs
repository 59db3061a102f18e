//! The origin's own access log (`serve --access-log PATH`): one line per request,
//!
//! ```text
//! 1795467600.123456 GET /obj/7 200 1024 100213
//! ```
//!
//! time (Unix seconds, µs), method, path (and query, its secret parameters `<redacted>` as
//! in every file barrage writes; cut at [`MAX_TARGET`] bytes, anything but visible ASCII as
//! `?`), status, body bytes, and the time from arrival to the answer
//! made (µs; queueing, latency and routing; not the body's sending); then, for a request
//! that carried one, its W3C `traceparent` (cut at [`MAX_TRACEPARENT`] bytes), so that a
//! client's trace context (`barrage run --trace-context`) can be checked as it arrived.
//!
//! Lines are buffered per thread (a shard each thread keeps to itself: its lock is never
//! contended, and nothing is written per request), written whole when a buffer passes
//! [`BUFFER`], by a flusher thread every [`FLUSH_EVERY`], and at shutdown. Each write is
//! of whole lines to a file opened for appending, so origins sharing a file do not cut each
//! other's lines.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use http::{Method, StatusCode, Uri};

/// The built-in rules of what is secret, made once.
fn redaction() -> &'static barrage_metrics::secrets::Redaction {
    static RULES: std::sync::OnceLock<barrage_metrics::secrets::Redaction> = std::sync::OnceLock::new();
    RULES.get_or_init(Default::default)
}

/// The longest path (with query) logged: longer ones are cut, so a line stays short.
pub(crate) const MAX_TARGET: usize = 1024;
/// The longest `traceparent` logged (version 00's is 55 bytes; later versions may add).
const MAX_TRACEPARENT: usize = 128;
/// The longest method logged.
const MAX_METHOD: usize = 32;
/// A thread's buffer is written out once it holds this much.
const BUFFER: usize = 64 << 10;
/// What is buffered is written at least this often.
const FLUSH_EVERY: Duration = Duration::from_secs(1);
/// Buffers: threads beyond this many share one (then their lock may be contended).
const SHARDS: usize = 16;

thread_local! {
    /// This thread's buffer.
    static SHARD: usize = NEXT_SHARD.fetch_add(1, Ordering::Relaxed) % SHARDS;
}
static NEXT_SHARD: AtomicUsize = AtomicUsize::new(0);

#[derive(Debug)]
struct Inner {
    file: File,
    shards: Vec<Mutex<Vec<u8>>>,
}

/// An open access log and its flusher thread.
#[derive(Debug)]
pub(crate) struct AccessLog {
    inner: Arc<Inner>,
    /// Dropped to stop the flusher.
    _stop: Sender<()>,
}

impl AccessLog {
    /// Opens (creates, appends to) `path` and starts the flusher.
    pub(crate) fn open(path: &Path) -> std::io::Result<AccessLog> {
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new().create(true).append(true).mode(0o600).open(path)?;
        let inner = Arc::new(Inner { file, shards: (0..SHARDS).map(|_| Mutex::new(Vec::new())).collect() });
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let flusher = inner.clone();
        // Until the log is dropped (the sender with it): its owner flushes the rest.
        let flush = move || {
            while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(FLUSH_EVERY) {
                flusher.flush();
            }
        };
        std::thread::Builder::new().name("barrage-serve-log".into()).spawn(flush)?;
        Ok(AccessLog { inner, _stop: stop })
    }

    /// Buffers one request's line: its answer's status and body bytes, the time it took,
    /// and the `traceparent` it carried.
    pub(crate) fn record(
        &self,
        method: &Method,
        uri: &Uri,
        (status, bytes): (StatusCode, u64),
        took: Duration,
        traceparent: Option<&[u8]>,
    ) {
        let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
        let target = uri.path_and_query().map_or(uri.path(), |p| p.as_str());
        // A query may carry a credential (`?token=…`): logged as every file barrage writes
        // shows it, redacted by the built-in rules.
        let target = match target.contains('?') {
            true => redaction().url(target),
            false => std::borrow::Cow::Borrowed(target),
        };
        let shard = &self.inner.shards[SHARD.with(|s| *s)];
        let mut buf = shard.lock().unwrap_or_else(|e| e.into_inner());
        let _ = write!(buf, "{}.{:06} ", now.as_secs(), now.subsec_micros());
        let visible = |b: &u8| if b.is_ascii_graphic() { *b } else { b'?' };
        // An extension method may be long: a method is cut like the path.
        buf.extend(method.as_str().as_bytes().iter().take(MAX_METHOD).map(visible));
        buf.push(b' ');
        buf.extend(target.as_bytes().iter().take(MAX_TARGET).map(visible));
        let _ = write!(buf, " {} {bytes} {}", status.as_u16(), took.as_micros());
        if let Some(trace) = traceparent {
            buf.push(b' ');
            buf.extend(trace.iter().take(MAX_TRACEPARENT).map(visible));
        }
        buf.push(b'\n');
        if buf.len() >= BUFFER {
            self.inner.write(&mut buf);
        }
    }

    /// Writes out every buffer.
    pub(crate) fn flush(&self) {
        self.inner.flush();
    }
}

impl Drop for AccessLog {
    fn drop(&mut self) {
        self.inner.flush();
    }
}

impl Inner {
    fn flush(&self) {
        for shard in &self.shards {
            let mut buf = shard.lock().unwrap_or_else(|e| e.into_inner());
            self.write(&mut buf);
        }
    }

    /// Writes whole lines and empties `buf`. A failed write (disk full) drops them: the
    /// log must never stop the origin.
    fn write(&self, buf: &mut Vec<u8>) {
        if !buf.is_empty() {
            let _ = (&self.file).write_all(buf);
            buf.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_whole_bounded_and_written_on_flush() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("access.log");
        let log = AccessLog::open(&path).unwrap();
        let long: Uri = format!("/kv/{}?x=1", "a".repeat(5000)).parse().unwrap();
        let ok = (StatusCode::OK, 1024);
        log.record(&Method::GET, &"/obj/7".parse().unwrap(), ok, Duration::from_micros(100_213), None);
        log.record(&Method::PUT, &long, (StatusCode::CREATED, 0), Duration::from_micros(5), None);
        let tp = b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        log.record(&Method::GET, &"/a".parse().unwrap(), (StatusCode::OK, 1), Duration::from_micros(9), Some(tp));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "", "buffered");
        log.flush();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        let first: Vec<&str> = lines[0].split(' ').collect();
        assert_eq!(&first[1..], ["GET", "/obj/7", "200", "1024", "100213"]);
        assert!(first[0].split_once('.').is_some_and(|(s, us)| s.len() >= 10 && us.len() == 6), "{}", first[0]);
        let second: Vec<&str> = lines[1].split(' ').collect();
        assert_eq!(second[2].len(), MAX_TARGET, "cut");
        assert_eq!(&second[3..], ["201", "0", "5"]);
        let third: Vec<&str> = lines[2].split(' ').collect();
        assert_eq!(&third[1..], ["GET", "/a", "200", "1", "9", std::str::from_utf8(tp).unwrap()]);
        drop(log);
    }

    #[test]
    fn a_secret_query_parameter_is_redacted() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("access.log");
        let log = AccessLog::open(&path).unwrap();
        let uri: Uri = "/kv/1?token=s3cret&page=2".parse().unwrap();
        log.record(&Method::GET, &uri, (StatusCode::OK, 2), Duration::from_micros(7), None);
        log.flush();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(" /kv/1?token=<redacted>&page=2 200 "), "{text}");
        assert!(!text.contains("s3cret"), "{text}");
    }
}
