//! `--log FILE`: one row per request (CSV, or JSON lines for a `.jsonl` file), streamed with
//! bounded memory. The results file, not this log, is what reports are made from.
//!
//! Each engine thread formats rows into its own reused buffer and hands full chunks to one
//! writer thread over a bounded channel. When the disk cannot keep up, chunks are dropped and
//! counted rather than slowing the load down: the generator must not measure its own log.

use barrage_metrics::{ErrorKind, Outcome, Phase, Sample};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::Arc;

/// Chunk handed to the writer.
const CHUNK: usize = 64 << 10;
/// Chunks in flight to the writer: bounds the log's memory to a few MiB.
const QUEUE: usize = 64;

/// Format of the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    /// Comma-separated, with a header row.
    Csv,
    /// One JSON object per line.
    JsonLines,
}

/// What a run's log is: where, in which format, and which fraction of requests it keeps.
#[derive(Clone, Debug)]
pub struct LogSpec {
    /// The file.
    pub path: PathBuf,
    /// Fraction of requests logged, 0 < f ≤ 1.
    pub sample: f64,
}

impl LogSpec {
    fn format(&self) -> LogFormat {
        match self.path.extension().and_then(|e| e.to_str()) {
            Some("jsonl" | "ndjson" | "json") => LogFormat::JsonLines,
            _ => LogFormat::Csv,
        }
    }
}

const COLUMNS: &str = "start_unix_us,worker,name,method,url,attempt,status,error,cache,backend,bytes_in,bytes_out,dns_us,connect_us,tls_us,send_us,wait_us,receive_us,service_us,corrected_us,flow_id,step_index,outcome,intended_unix_us,key,trace_id,sampled";

/// The writer thread and what the engine threads share with it.
pub struct RequestLog {
    tx: Option<SyncSender<Vec<u8>>>,
    writer: Option<std::thread::JoinHandle<std::io::Result<()>>>,
    dropped: Arc<AtomicU64>,
    format: LogFormat,
    sample: f64,
}

impl RequestLog {
    /// Creates the file (with the CSV header) and starts the writer. The file is its
    /// owner's alone: it holds every request's URL.
    pub fn create(spec: &LogSpec) -> std::io::Result<RequestLog> {
        let format = spec.format();
        let mut file = std::io::BufWriter::new(barrage_metrics::secrets::create(&spec.path, true)?);
        if format == LogFormat::Csv {
            writeln!(file, "{COLUMNS}")?;
            file.flush()?;
        }
        let (tx, rx) = sync_channel(QUEUE);
        let writer = std::thread::Builder::new().name("barrage-log".into()).spawn(move || write_chunks(rx, file))?;
        Ok(RequestLog {
            tx: Some(tx),
            writer: Some(writer),
            dropped: Arc::new(AtomicU64::new(0)),
            format,
            sample: spec.sample,
        })
    }

    /// A thread's handle: its own buffer and a sender.
    pub fn handle(&self) -> LogHandle {
        LogHandle {
            buf: Vec::with_capacity(CHUNK + 1024),
            tx: self.tx.clone().expect("the log is open"),
            dropped: self.dropped.clone(),
            format: self.format,
            sample: self.sample,
        }
    }

    /// Waits for the writer to drain (every handle must be dropped first); returns how many
    /// chunks of rows were dropped because the disk fell behind.
    pub fn finish(mut self, path: &Path) -> std::io::Result<u64> {
        drop(self.tx.take());
        if let Some(w) = self.writer.take() {
            w.join().map_err(|_| std::io::Error::other(format!("the writer of {} stopped", path.display())))??;
        }
        Ok(self.dropped.load(Ordering::Relaxed))
    }
}

fn write_chunks(rx: Receiver<Vec<u8>>, mut file: std::io::BufWriter<std::fs::File>) -> std::io::Result<()> {
    for chunk in rx {
        file.write_all(&chunk)?;
        // Each chunk reaches the OS: a killed run keeps the rows written so far.
        file.flush()?;
    }
    file.flush()
}

/// One engine thread's side of the log.
pub struct LogHandle {
    buf: Vec<u8>,
    tx: SyncSender<Vec<u8>>,
    dropped: Arc<AtomicU64>,
    format: LogFormat,
    sample: f64,
}

/// What a row says besides the sample.
pub struct Row<'a> {
    /// Wall-clock start of the run, µs since the Unix epoch.
    pub run_start_unix_us: u64,
    /// Worker (closed loop) or slot (open loop) number within the run.
    pub worker: usize,
    /// Target name.
    pub name: Option<&'a str>,
    /// Method.
    pub method: &'a str,
    /// URL, or a template's URL with `{id}` standing for `id`.
    pub url: &'a str,
    /// A template's id.
    pub id: Option<u64>,
    /// A key-value command's (first) key.
    pub key: Option<&'a [u8]>,
    /// Attempt number (1 without retries).
    pub attempt: u32,
    /// Backend header value.
    pub backend: Option<&'a [u8]>,
    /// A flow's step.
    pub flow: Option<FlowCols<'a>>,
    /// `--trace-context`: the trace id its `traceparent` carried, and whether it said sampled.
    pub trace: Option<(barrage_metrics::trace::TraceId, bool)>,
}

/// What a row of a flow's step says: `name` is the step's key.
pub struct FlowCols<'a> {
    /// The flow instance, unique in the run.
    pub id: u64,
    /// The step's place in the flow's run order, from 0.
    pub step: usize,
    /// `ok`, `request_failed`, `check_failed:KIND`, `capture_failed:NAME` or `skipped`.
    pub outcome: &'a str,
}

impl LogHandle {
    /// Whether this request is logged (`--log-sample`).
    pub fn wants(&self) -> bool {
        self.sample >= 1.0 || rand::random::<f64>() < self.sample
    }

    /// Appends a row; hands the buffer over once it is full.
    pub fn row(&mut self, row: &Row<'_>, s: &Sample) {
        match self.format {
            LogFormat::Csv => csv_row(&mut self.buf, row, s),
            LogFormat::JsonLines => json_row(&mut self.buf, row, s),
        }
        if self.buf.len() >= CHUNK {
            self.hand_over();
        }
    }

    /// Appends the row of a step that was not sent (its flow failed before it): no times,
    /// no status; `at` is when it was skipped, from the run's start.
    pub fn skipped(&mut self, row: &Row<'_>, at: std::time::Duration) {
        if !self.wants() {
            return;
        }
        let start = row.run_start_unix_us + at.as_micros() as u64;
        let flow = row.flow.as_ref().expect("a skipped row is a flow's");
        match self.format {
            LogFormat::Csv => {
                let _ = write!(self.buf, "{start},{},", row.worker);
                csv_field(&mut self.buf, row.name.unwrap_or(""));
                self.buf.push(b',');
                csv_field(&mut self.buf, row.method);
                self.buf.push(b',');
                csv_field(&mut self.buf, row.url);
                // Attempt 0; status to corrected_us (14 fields), when due, key, trace id and
                // sampled empty: a step not sent carried no traceparent.
                let _ = writeln!(self.buf, ",0{},{},{},{},,,,", ",".repeat(14), flow.id, flow.step, flow.outcome);
            }
            LogFormat::JsonLines => {
                let text = serde_json::json!({
                    "start_unix_us": start, "worker": row.worker, "name": row.name, "method": row.method,
                    "url": row.url, "attempt": 0, "status": null, "flow_id": flow.id, "step_index": flow.step,
                    "outcome": flow.outcome,
                });
                let _ = writeln!(self.buf, "{text}");
            }
        }
        if self.buf.len() >= CHUNK {
            self.hand_over();
        }
    }

    /// Hands over the rows so far, if any: once per interval, so a run killed (SIGKILL)
    /// loses at most its last second of rows, as its results file does.
    pub fn flush(&mut self) {
        if !self.buf.is_empty() {
            self.hand_over();
        }
    }

    fn hand_over(&mut self) {
        let chunk = std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK + 1024));
        if let Err(TrySendError::Full(_)) = self.tx.try_send(chunk) {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl Drop for LogHandle {
    fn drop(&mut self) {
        if !self.buf.is_empty() {
            // The last rows of a thread: wait for room rather than lose them.
            let _ = self.tx.send(std::mem::take(&mut self.buf));
        }
    }
}

fn url_of<'a>(row: &Row<'a>) -> std::borrow::Cow<'a, str> {
    match row.id {
        Some(id) => row.url.replacen(barrage_plan::plan::ID, &id.to_string(), 1).into(),
        None => row.url.into(),
    }
}

fn outcome_fields(s: &Sample) -> (u16, &'static str) {
    match s.outcome {
        Outcome::Status(code) => (code, ""),
        Outcome::Error(kind) => (0, ErrorKind::name(kind)),
    }
}

fn csv_field(out: &mut Vec<u8>, text: &str) {
    if text.contains([',', '"', '\n', '\r']) {
        out.push(b'"');
        out.extend_from_slice(text.replace('"', "\"\"").as_bytes());
        out.push(b'"');
    } else {
        out.extend_from_slice(text.as_bytes());
    }
}

fn csv_row(out: &mut Vec<u8>, row: &Row<'_>, s: &Sample) {
    let (status, error) = outcome_fields(s);
    let start = row.run_start_unix_us + s.started.as_micros() as u64;
    let _ = write!(out, "{start},{},", row.worker);
    csv_field(out, row.name.unwrap_or(""));
    out.push(b',');
    csv_field(out, row.method);
    out.push(b',');
    csv_field(out, &url_of(row));
    let _ = write!(out, ",{},{status},{error},{},", row.attempt, s.cache.name());
    csv_field(out, &String::from_utf8_lossy(row.backend.unwrap_or_default()));
    let _ = write!(out, ",{},{}", s.bytes_in, s.bytes_out);
    for p in Phase::ALL {
        match s.phases[p as usize] {
            Some(d) => {
                let _ = write!(out, ",{}", d.as_micros());
            }
            None => out.push(b','),
        }
    }
    let _ = write!(out, ",{},{}", s.service().as_micros(), s.corrected().as_micros());
    match &row.flow {
        Some(f) => {
            let _ = write!(out, ",{},{},{}", f.id, f.step, f.outcome);
        }
        None => out.extend_from_slice(b",,,"),
    }
    let _ = write!(out, ",{},", intended_unix_us(row, s));
    csv_field(out, &String::from_utf8_lossy(row.key.unwrap_or_default()));
    match row.trace {
        Some((id, sampled)) => {
            let _ = write!(out, ",{id},{}", u8::from(sampled));
        }
        None => out.extend_from_slice(b",,"),
    }
    out.push(b'\n');
}

/// When the request was due, on the wall clock: with `--start-at`, the same instant for
/// request k in whichever shard sent it.
fn intended_unix_us(row: &Row<'_>, s: &Sample) -> u64 {
    row.run_start_unix_us + s.intended.as_micros() as u64
}

fn json_row(out: &mut Vec<u8>, row: &Row<'_>, s: &Sample) {
    let (status, error) = outcome_fields(s);
    let string = |out: &mut Vec<u8>, v: &str| {
        let _ = serde_json::to_writer(&mut *out, v);
    };
    let start = row.run_start_unix_us + s.started.as_micros() as u64;
    let _ = write!(out, "{{\"start_unix_us\":{start},\"worker\":{},\"name\":", row.worker);
    match row.name {
        Some(n) => string(out, n),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"method\":");
    string(out, row.method);
    out.extend_from_slice(b",\"url\":");
    string(out, &url_of(row));
    let _ = write!(out, ",\"attempt\":{},\"status\":{status},\"error\":", row.attempt);
    if error.is_empty() {
        out.extend_from_slice(b"null");
    } else {
        string(out, error);
    }
    let _ = write!(out, ",\"cache\":\"{}\",\"backend\":", s.cache.name());
    match row.backend {
        Some(b) => string(out, &String::from_utf8_lossy(b)),
        None => out.extend_from_slice(b"null"),
    }
    let _ = write!(out, ",\"bytes_in\":{},\"bytes_out\":{}", s.bytes_in, s.bytes_out);
    for p in Phase::ALL {
        match s.phases[p as usize] {
            Some(d) => {
                let _ = write!(out, ",\"{}_us\":{}", p.name(), d.as_micros());
            }
            None => {
                let _ = write!(out, ",\"{}_us\":null", p.name());
            }
        }
    }
    let _ = write!(out, ",\"service_us\":{},\"corrected_us\":{}", s.service().as_micros(), s.corrected().as_micros());
    let _ = write!(out, ",\"intended_unix_us\":{}", intended_unix_us(row, s));
    if let Some(key) = row.key {
        out.extend_from_slice(b",\"key\":");
        string(out, &String::from_utf8_lossy(key));
    }
    if let Some(f) = &row.flow {
        let _ = write!(out, ",\"flow_id\":{},\"step_index\":{},\"outcome\":", f.id, f.step);
        string(out, f.outcome);
    }
    if let Some((id, sampled)) = row.trace {
        let _ = write!(out, ",\"trace_id\":\"{id}\",\"sampled\":{sampled}");
    }
    out.extend_from_slice(b"}\n");
}
