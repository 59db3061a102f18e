//! Crafted results files whose one record declares millions of tiny entries in one list:
//! each entry decodes to many times its few encoded bytes (an empty key to 150 bytes), so
//! a 64 MiB record could make the reader allocate gigabytes before any check counted them.
//! The reader refuses such a list from its declared length, before decoding it: reading
//! costs the record's bytes and little more, measured here by a counting allocator.

use barrage_metrics::file::{FORMAT_VERSION, MAGIC};
use barrage_metrics::recorder::RequestPoint;
use barrage_metrics::testing;
use barrage_metrics::{
    IntervalRecord, Outcome, ProcSample, Recorder, ResultsReader, ResultsWriter, RunFooter, RunHeader, Sample,
    WatchSample,
};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::Path;
use std::time::Duration;

/// Counts the bytes each thread holds, and its peak, so tests running side by side do not
/// see each other's allocations.
struct Counting;

thread_local! {
    static HELD: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn count(delta: isize) {
    // `try_with`: an allocation may come while the thread's locals are torn down.
    let _ = HELD.try_with(|held| {
        held.set(held.get() + delta);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(held.get())));
    });
}

// SAFETY: every call goes to the system allocator unchanged; only sizes are counted.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        count(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            count(new_size as isize - layout.size() as isize);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// What `f` returned, and the most bytes this thread held meanwhile beyond what it held
/// before.
fn peak_of<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let before = HELD.with(Cell::get);
    PEAK.with(|p| p.set(before));
    let r = f();
    (r, (PEAK.with(Cell::get) - before).max(0) as usize)
}

/// What reading a record may cost beyond its own bytes: a few histograms of about 200 KiB
/// each, buffers. Decoding the crafted lists costs hundreds of MiB.
const SLACK: usize = 8 << 20;

fn header(urls: Vec<String>) -> RunHeader {
    RunHeader { urls, ..testing::header(0) }
}

fn sample(ended_ms: u64) -> Sample {
    Sample { bytes_in: 1, bytes_out: 1, ..testing::sample(Duration::from_millis(ended_ms), Outcome::Status(200)) }
}

/// A good interval of three requests.
fn interval(index: u32) -> IntervalRecord {
    let mut recorder = Recorder::new();
    for ms in [5, 150, 420] {
        recorder.record(&sample(u64::from(index) * 1000 + ms));
    }
    IntervalRecord {
        watch: Some(WatchSample::default()),
        ..testing::interval(index, u64::from(index) * 1000, recorder)
    }
}

/// The payloads of the records of a file the writer wrote: the header, `intervals`, the footer.
fn payloads(dir: &Path, header: &RunHeader, intervals: &[IntervalRecord]) -> Vec<Vec<u8>> {
    let path = dir.join("written.brg");
    let mut w = ResultsWriter::create(&path, header).unwrap();
    for i in intervals {
        w.write_interval(i).unwrap();
    }
    w.finish(&RunFooter::default()).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let mut out = Vec::new();
    let mut at = MAGIC.len() + 2;
    while at < bytes.len() {
        let len = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        out.push(bytes[at + 8..at + 8 + len].to_vec());
        at += 8 + len;
    }
    out
}

/// `empty`, a payload holding an empty list, with that list made `n` copies of `entry`.
/// The list is where `empty` first differs from `one`, the same payload with one entry in
/// the list: postcard writes a list as its length (a varint, 0 for an empty one), then its
/// entries.
fn crafted(empty: &[u8], one: &[u8], n: u64, entry: &[u8]) -> Vec<u8> {
    let at = empty.iter().zip(one).position(|(a, b)| a != b).expect("the payloads differ");
    assert_eq!((empty[at], one[at]), (0, 1), "the list's length, 0 then 1");
    let mut out = empty[..at].to_vec();
    let mut v = n;
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
    out.reserve(entry.len() * n as usize + empty.len());
    for _ in 0..n {
        out.extend_from_slice(entry);
    }
    out.extend_from_slice(&empty[at + 1..]);
    out
}

/// A file of these payloads, each framed with its length and checksum.
fn file(dir: &Path, payloads: &[&[u8]]) -> std::path::PathBuf {
    let path = dir.join("crafted.brg");
    let mut bytes = MAGIC.to_vec();
    bytes.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    for p in payloads {
        bytes.extend_from_slice(&(p.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&crc32fast::hash(p).to_le_bytes());
        bytes.extend_from_slice(p);
    }
    std::fs::write(&path, bytes).unwrap();
    path
}

/// Reads a file whose second interval is `interval` with one list, empty in `empty` and
/// holding one entry in `one`, made `n` copies of `entry`: the first interval reads, the
/// second is refused with a warning that `names`, at a cost of its bytes and [`SLACK`].
fn refused(empty: IntervalRecord, one: IntervalRecord, n: u64, entry: &[u8], names: &str) {
    let dir = tempfile::tempdir().unwrap();
    let h = header(vec!["http://127.0.0.1:1/".into()]);
    let [head, good, empty, _] = &payloads(dir.path(), &h, &[interval(0), empty])[..] else { panic!() };
    let one = &payloads(dir.path(), &h, &[interval(0), one])[2];
    let bad = crafted(empty, one, n, entry);
    let len = bad.len();
    assert!(len <= 64 << 20, "a record the reader accepts by its length: {len} bytes");
    let path = file(dir.path(), &[head, good, &bad]);
    drop(bad);
    let ((read, warning), peak) = peak_of(|| {
        let mut r = ResultsReader::open(&path).unwrap();
        let read = std::iter::from_fn(|| r.next_interval()).count();
        (read, r.warning().map(str::to_string))
    });
    eprintln!("{n} entries in {len} bytes: peak {} KiB; {warning:?}", peak >> 10);
    let warning = warning.expect("the crafted interval is refused");
    assert_eq!(read, 1, "{warning}");
    assert!(warning.contains("a record does not decode") && warning.contains(names), "{warning}");
    assert!(peak < len + SLACK, "reading a record of {len} bytes held {peak} bytes at its peak");
}

/// An empty key in the wire form: no name, no requests or failures, an empty histogram, no
/// ticks, five flow counts at 0, no example.
const EMPTY_KEY: [u8; 11] = [0; 11];

#[test]
fn five_million_empty_names_are_refused_before_they_are_decoded() {
    let mut one = interval(1);
    one.recorder.names.record(b"x", &sample(1200));
    refused(interval(1), one, 5_000_000, &EMPTY_KEY, "5000000 request names");
}

#[test]
fn millions_of_empty_backends_methods_flows_or_replies_are_refused() {
    let mut one = interval(1);
    one.recorder.replies.record(b"ERR", &sample(1200));
    refused(interval(1), one, 1_000_000, &EMPTY_KEY, "1000000 server reply classes");
    let mut one = interval(1);
    one.recorder.backends.record(b"b1", &sample(1200));
    refused(interval(1), one, 1_000_000, &EMPTY_KEY, "1000000 backends");
}

#[test]
fn a_timeline_of_millions_of_ticks_is_refused() {
    let mut one = interval(1);
    one.recorder.timeline = Recorder::new().timeline;
    let mut empty = one.clone();
    one.recorder.timeline.record(Duration::from_millis(1200), true, 5);
    empty.recorder.samples.clear();
    one.recorder.samples.clear();
    // A tick: its index, successes, failures and slowest latency, all 0.
    refused(empty, one, 10_000_000, &[0; 4], "10000000 timeline ticks");
}

#[test]
fn millions_of_request_samples_are_refused() {
    let mut empty = interval(1);
    empty.recorder.samples.clear();
    let mut one = empty.clone();
    one.recorder.samples.push(RequestPoint::default());
    // A sample: when it ended, its latency, whether it succeeded, all 0.
    refused(empty, one, 10_000_000, &[0; 3], "10000000 request samples");
}

#[test]
fn millions_of_watched_processes_are_refused() {
    let empty = interval(1);
    let mut one = interval(1);
    one.watch.as_mut().unwrap().processes.push(ProcSample::default());
    // A process: no name, no roots, 0 processes, CPU 0.0 (two f32 of 4 bytes), 0 memory,
    // threads, descriptors and context switches.
    let entry = [&[0u8; 3][..], &[0; 8], &[0; 4]].concat();
    refused(empty, one, 3_000_000, &entry, "3000000 watched processes");
}

/// A header of twenty million empty URLs: the file is refused at its start, naming why.
#[test]
fn a_header_of_millions_of_urls_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let empty = &payloads(dir.path(), &header(Vec::new()), &[])[0];
    let one = &payloads(dir.path(), &header(vec![String::new()]), &[])[0];
    let bad = crafted(empty, one, 20_000_000, &[0]);
    let len = bad.len();
    let path = file(dir.path(), &[&bad]);
    drop(bad);
    let (err, peak) = peak_of(|| ResultsReader::open(&path).err().map(|e| e.to_string()));
    eprintln!("20000000 URLs in {len} bytes: peak {} KiB; {err:?}", peak >> 10);
    let err = err.expect("the header is refused");
    assert!(err.contains("no readable run header") && err.contains("20000000 URLs"), "{err}");
    assert!(peak < len + SLACK, "reading a record of {len} bytes held {peak} bytes at its peak");
}
