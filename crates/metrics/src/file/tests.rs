//! The results file: written, read back, cut off, corrupt, bounded.
use super::*;
use crate::sample::{Outcome, Sample};
use std::time::Duration;

pub(crate) use crate::testing::header;

pub(crate) fn interval(index: u32, start: u64, n: u64) -> IntervalRecord {
    let mut recorder = Recorder::new();
    for k in 0..n {
        recorder.record(&sample_at(1 + k));
    }
    crate::testing::interval(index, start + u64::from(index) * 1000, recorder)
}

pub(crate) fn write(path: &Path, start: u64, intervals: u32, footer: bool) {
    let mut w = ResultsWriter::create(path, &header(start)).unwrap();
    for i in 0..intervals {
        w.write_interval(&interval(i, start, 10)).unwrap();
    }
    if footer {
        w.finish(&RunFooter { attack_us: 1, ..Default::default() }).unwrap();
    }
}

/// The most URLs a run lists, each as long as a target file's may well be: together
/// over the 64 MiB a record may take. The file reads back whole, every URL in order.
#[test]
fn a_million_long_urls_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("a.brg");
    let mut h = header(1);
    let long = "x".repeat(100);
    h.urls = (0..MAX_RUN_URLS).map(|i| format!("http://127.0.0.1:1/{long}/{i}")).collect();
    let mut w = ResultsWriter::create(&p, &h).unwrap();
    w.write_interval(&interval(0, 1, 10)).unwrap();
    w.finish(&RunFooter::default()).unwrap();
    let mut r = ResultsReader::open(&p).unwrap();
    assert_eq!(r.header(), &h);
    assert_eq!(r.next_interval(), Some(interval(0, 1, 10)));
    assert_eq!((r.next_interval(), r.warning()), (None, None));
    assert!(r.footer().is_some());
}

#[test]
fn round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("a.brg");
    write(&p, 1_000_000, 3, true);
    let mut r = ResultsReader::open(&p).unwrap();
    assert_eq!(r.header(), &header(1_000_000));
    let got: Vec<_> = std::iter::from_fn(|| r.next_interval()).collect();
    assert_eq!(got, vec![interval(0, 1_000_000, 10), interval(1, 1_000_000, 10), interval(2, 1_000_000, 10)]);
    assert_eq!(r.footer().unwrap().attack_us, 1);
    assert!(r.warning().is_none());
}

#[test]
fn truncated_tail_reads_with_warning() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("a.brg");
    write(&p, 0, 3, false);
    let len = std::fs::metadata(&p).unwrap().len();
    let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
    f.set_len(len - 5).unwrap();
    let mut r = ResultsReader::open(&p).unwrap();
    assert_eq!(std::iter::from_fn(|| r.next_interval()).count(), 2);
    assert!(r.warning().unwrap().contains("cut off"), "{:?}", r.warning());
    assert!(r.footer().is_none());
}

#[test]
fn bad_magic_and_version() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x");
    std::fs::write(&p, b"hello world").unwrap();
    assert!(matches!(ResultsReader::open(&p), Err(FileError::NotResults { .. })));
    let mut bytes = MAGIC.to_vec();
    bytes.extend_from_slice(&99u16.to_le_bytes());
    std::fs::write(&p, bytes).unwrap();
    let err = ResultsReader::open(&p).err().unwrap();
    assert!(err.to_string().contains("version 99"), "{err}");
}

proptest::proptest! {
    /// The reader parses user files: arbitrary bytes after a valid start, or a valid file
    /// with bytes flipped, give an error or a warning, never a panic.
    #[test]
    fn arbitrary_bytes_never_panic(tail in proptest::collection::vec(proptest::num::u8::ANY, 0..512),
                                   flip in 0usize..4096, cut in 0usize..4096) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.brg");
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        bytes.extend_from_slice(&tail);
        std::fs::write(&p, &bytes).unwrap();
        if let Ok(mut r) = ResultsReader::open(&p) {
            while r.next_interval().is_some() {}
        }
        write(&p, 0, 2, true);
        let mut good = std::fs::read(&p).unwrap();
        let i = flip % good.len();
        good[i] ^= 0x5a;
        good.truncate(good.len() - cut % good.len());
        std::fs::write(&p, &good).unwrap();
        if let Ok(mut r) = ResultsReader::open(&p) {
            while r.next_interval().is_some() {}
        }
    }
}

/// Records of URLs belong right after the header, and add up to at most
/// [`MAX_RUN_URLS`]: else the read stops there with a warning, as at a corrupt record.
#[test]
fn urls_apart_from_the_header_or_over_the_limit_stop_the_read() {
    let dir = tempfile::tempdir().unwrap();
    let urls = |n: usize| Record::Urls((0..n).map(|i| format!("http://h/{i}")).collect());
    let p = dir.path().join("late.brg");
    let i = interval(0, 1, 3);
    write_old(&p, FORMAT_VERSION, &[Record::Header(header(1)), Record::Interval(i.clone()), urls(1)]);
    let mut r = ResultsReader::open(&p).unwrap();
    assert_eq!((r.next_interval(), r.next_interval()), (Some(i), None));
    assert!(
        r.warning().unwrap().contains("URLs or a schedule apart from the header, after interval 1"),
        "{:?}",
        r.warning()
    );
    let p = dir.path().join("many.brg");
    let mut records = vec![Record::Header(header(1))];
    records.extend((0..MAX_RUN_URLS / URLS_PER_RECORD + 1).map(|_| urls(URLS_PER_RECORD)));
    records.push(Record::Interval(interval(0, 1, 3)));
    write_old(&p, FORMAT_VERSION, &records);
    let mut r = ResultsReader::open(&p).unwrap();
    assert_eq!(r.next_interval(), None);
    assert!(r.warning().unwrap().contains("more than 1000000 URLs"), "{:?}", r.warning());
    assert!(r.header().urls.len() <= MAX_RUN_URLS);
}

pub(crate) fn write_old<R: Serialize>(path: &Path, version: u16, records: &[R]) {
    let mut bytes = MAGIC.to_vec();
    bytes.extend_from_slice(&version.to_le_bytes());
    for record in records {
        let payload = postcard::to_stdvec(record).unwrap();
        bytes.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
        bytes.extend_from_slice(&payload);
    }
    std::fs::write(path, bytes).unwrap();
}

/// An interval of `n` requests of which the last two were server error replies, `ERR`
/// then `MOVED`, as the key-value engine records them.
pub(crate) fn interval_with_replies(index: u32, start: u64, n: u64) -> IntervalRecord {
    let mut i = interval(index, start, n);
    for (class, status, text) in [(&b"ERR"[..], 500, "ERR unknown command"), (b"MOVED", 421, "MOVED 1 h:1")] {
        let s = Sample { outcome: Outcome::Status(status), ..sample_at(5) };
        i.recorder.record(&s);
        i.recorder.replies.record_example(class, &s, || text.into());
    }
    i
}

/// A 200 that ended `ms` after the run's start, of one byte each way.
pub(crate) fn sample_at(ms: u64) -> Sample {
    Sample { bytes_in: 1, bytes_out: 1, ..crate::testing::sample(Duration::from_millis(ms), Outcome::Status(200)) }
}

/// Server replies are written in today's format and read back as they were.
#[test]
fn replies_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("kv.brg");
    let mut w = ResultsWriter::create(&p, &header(0)).unwrap();
    w.write_interval(&interval_with_replies(0, 0, 3)).unwrap();
    w.finish(&RunFooter::default()).unwrap();
    let bytes = std::fs::read(&p).unwrap();
    assert_eq!(u16::from_le_bytes([bytes[8], bytes[9]]), FORMAT_VERSION);
    let mut r = ResultsReader::open(&p).unwrap();
    let got = r.next_interval().unwrap();
    assert_eq!(got, interval_with_replies(0, 0, 3));
    let classes: Vec<_> =
        got.recorder.replies.iter().map(|k| (k.name.as_str(), k.requests, k.example.as_deref())).collect();
    assert_eq!(classes, [("ERR", 1, Some("ERR unknown command")), ("MOVED", 1, Some("MOVED 1 h:1"))]);
}

/// A crafted file whose interval holds more reply classes than a recorder keeps reads up
/// to that interval, with a warning, as one with too many names does.
#[test]
fn a_file_with_too_many_reply_classes_stops_with_a_warning() {
    use crate::recorder::{WideReplies, MAX_KEYS};
    /// [`Record`] as written, with a recorder of `n` reply classes.
    #[derive(Serialize)]
    enum Crafted {
        Header(RunHeader),
        Interval {
            index: u32,
            start_unix_ms: u64,
            length_ms: u32,
            step: u32,
            recorder: WideReplies,
            watch: Option<WatchSample>,
        },
    }
    let dir = tempfile::tempdir().unwrap();
    let interval = |index, n| Crafted::Interval {
        index,
        start_unix_ms: u64::from(index) * 1000,
        length_ms: 1000,
        step: 0,
        recorder: WideReplies(n),
        watch: None,
    };
    let read = |records: &[Crafted]| {
        let p = dir.path().join("crafted.brg");
        write_old(&p, FORMAT_VERSION, records);
        let mut r = ResultsReader::open(&p).unwrap();
        let read: Vec<usize> = std::iter::from_fn(|| r.next_interval()).map(|i| i.recorder.replies.len()).collect();
        (read, r.warning().map(str::to_string))
    };
    // As many as a recorder keeps read; one more does not.
    assert_eq!(read(&[Crafted::Header(header(0)), interval(0, MAX_KEYS)]), (vec![MAX_KEYS], None));
    let (got, warning) = read(&[Crafted::Header(header(0)), interval(0, 2), interval(1, MAX_KEYS + 1)]);
    let warning = warning.expect("the crafted interval is refused");
    assert_eq!(got.len(), 1, "{warning}");
    assert!(warning.contains("a record does not decode: 65 server reply classes, over the limit of 64"), "{warning}");
    assert!(warning.contains("read the first 1 interval(s)"), "{warning}");
}

/// An open loop's lanes are read with the interval they precede: a copy cut between the
/// two (a collector's, mid-stream) says the lanes of the last interval it holds, not the
/// next one's. Who stopped the run is read before the footer.
#[test]
fn lanes_go_with_their_interval_and_the_stop_with_the_footer() {
    use crate::lanes::LaneMark;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("a.brg");
    let mut w = ResultsWriter::create(&p, &header(1)).unwrap();
    let lanes = |n| vec![LaneMark::at(n), LaneMark { passed: n + 1, flying: vec![n], unlisted: 0 }];
    w.write_lanes(lanes(10)).unwrap();
    w.write_interval(&interval(0, 1, 10)).unwrap();
    let cut = std::fs::metadata(&p).unwrap().len();
    w.write_lanes(lanes(20)).unwrap();
    let copy = dir.path().join("copy.brg");
    std::fs::write(&copy, std::fs::read(&p).unwrap()).unwrap();
    w.write_interval(&interval(1, 1, 10)).unwrap();
    w.write_stopped_by("the collector: shard 0/3 was lost").unwrap();
    w.finish(&RunFooter { interrupted: true, ..Default::default() }).unwrap();
    let mut c = ResultsReader::open(&copy).unwrap();
    assert!(std::fs::metadata(&copy).unwrap().len() > cut);
    assert_eq!((c.next_interval().map(|i| i.index), c.next_interval()), (Some(0), None));
    assert_eq!(c.lanes(), Some(&lanes(10)[..]));
    let mut r = ResultsReader::open(&p).unwrap();
    while r.next_interval().is_some() {}
    assert_eq!(r.lanes(), Some(&lanes(20)[..]));
    assert_eq!(r.stopped_by(), Some("the collector: shard 0/3 was lost"));
}
