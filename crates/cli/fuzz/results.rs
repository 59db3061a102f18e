//! Results files, as `report` and `compare` read them: the reader to the end, the summary,
//! every renderer (text, JSON, CSV, HTML, the sheets, the HdrHistogram log) and a comparison
//! with a good run. Inputs are valid files mutated the ways a disk, a transfer or an
//! attacker would: bits flipped, cut short, bytes overwritten, a record's length changed, a
//! record's payload changed with its checksum made right again (so the decoders behind the
//! checksum see it), records dropped or repeated; and random bytes, with and without a
//! valid start.

use super::{config, within};
use barrage_metrics::file::{FORMAT_VERSION, MAGIC};
use barrage_report::Report;
use proptest::prelude::*;
use proptest::sample::Index;
use std::path::{Path, PathBuf};

/// Valid files: a real run (two named targets, 200s and 405s, a watched process, an `--at`
/// event), a run whose every request was refused, and a version 3 file.
const SEEDS: [&str; 3] = [
    "tests/corpus/fuzz/results/run-mixed.brg",
    "tests/corpus/fuzz/results/run-refused.brg",
    "crates/metrics/testdata/format-v3.brg",
];

fn seed(i: usize) -> Vec<u8> {
    std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join(SEEDS[i])).unwrap()
}

/// The records of `bytes`: (start of the frame, end of the payload), as far as they parse.
fn records(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut at = MAGIC.len() + 2;
    while let Some(frame) = bytes.get(at..at + 8) {
        let len = u32::from_le_bytes(frame[..4].try_into().unwrap()) as usize;
        let end = at + 8 + len;
        if end > bytes.len() {
            break;
        }
        out.push((at, end));
        at = end;
    }
    out
}

/// One change to a file.
#[derive(Clone, Debug)]
enum Mutation {
    Flip(Index, u8),
    /// One byte of a record's payload set to a value at an edge of postcard's encodings
    /// (a varint's end or continuation, 0, the largest), checksum made right: mostly still
    /// decodes, with a count or a length changed.
    Tweak(Option<Index>, Index, u8),
    Cut(Index),
    Overwrite(Index, Vec<u8>),
    Length(Index, u32),
    /// Bytes of a record's payload (the header's with `None`) overwritten, checksum made right.
    Payload(Option<Index>, Index, Vec<u8>),
    Drop(Index),
    Repeat(Index, Index),
}

/// A record after the header, mostly: a header that does not decode refuses the file
/// before anything else is read.
fn record() -> impl Strategy<Value = Option<Index>> {
    prop::option::weighted(0.9, any::<Index>())
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let length = prop_oneof![any::<u32>(), 0u32..16, Just(u32::MAX), Just(64 << 20), Just((64 << 20) + 1)];
    let bytes = prop::collection::vec(any::<u8>(), 1..8);
    prop_oneof![
        3 => (any::<Index>(), 0u8..8).prop_map(|(at, bit)| Mutation::Flip(at, bit)),
        6 => (record(), any::<Index>(), prop::sample::select(&[0u8, 1, 0x7f, 0x80, 0xff][..]))
            .prop_map(|(r, at, b)| Mutation::Tweak(r, at, b)),
        2 => any::<Index>().prop_map(Mutation::Cut),
        2 => (any::<Index>(), bytes.clone()).prop_map(|(at, b)| Mutation::Overwrite(at, b)),
        2 => (any::<Index>(), length).prop_map(|(r, len)| Mutation::Length(r, len)),
        6 => (record(), any::<Index>(), bytes).prop_map(|(r, at, b)| Mutation::Payload(r, at, b)),
        1 => any::<Index>().prop_map(Mutation::Drop),
        1 => (any::<Index>(), any::<Index>()).prop_map(|(r, to)| Mutation::Repeat(r, to)),
    ]
}

fn mutate(bytes: &mut Vec<u8>, m: &Mutation) {
    let records = records(bytes);
    let record = |i: &Index| (!records.is_empty()).then(|| records[i.index(records.len())]);
    match m {
        Mutation::Flip(at, bit) => {
            let at = at.index(bytes.len());
            bytes[at] ^= 1 << bit;
        }
        Mutation::Cut(at) => bytes.truncate(at.index(bytes.len())),
        Mutation::Overwrite(at, b) => {
            let at = at.index(bytes.len());
            let end = (at + b.len()).min(bytes.len());
            bytes[at..end].copy_from_slice(&b[..end - at]);
        }
        Mutation::Length(r, len) => {
            if let Some((start, _)) = record(r) {
                bytes[start..start + 4].copy_from_slice(&len.to_le_bytes());
            }
        }
        Mutation::Payload(r, at, b) => {
            let record = match r {
                None => records.first().copied(),
                Some(r) => (records.len() > 1).then(|| records[1 + r.index(records.len() - 1)]),
            };
            if let Some((start, end)) = record.filter(|(s, e)| e - s > 8) {
                let at = start + 8 + at.index(end - start - 8);
                let stop = (at + b.len()).min(end);
                bytes[at..stop].copy_from_slice(&b[..stop - at]);
                let crc = crc32fast::hash(&bytes[start + 8..end]);
                bytes[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
            }
        }
        Mutation::Tweak(r, at, b) => mutate(bytes, &Mutation::Payload(*r, *at, vec![*b])),
        Mutation::Drop(r) => {
            if let Some((start, end)) = record(r) {
                bytes.drain(start..end);
            }
        }
        Mutation::Repeat(r, to) => {
            if let (Some((start, end)), Some((to, _))) = (record(r), record(to)) {
                let copy = bytes[start..end].to_vec();
                bytes.splice(to..to, copy);
            }
        }
    }
}

/// A file to read: a seed mutated, or random bytes with or without a valid start.
fn file() -> impl Strategy<Value = Vec<u8>> {
    let random = prop::collection::vec(any::<u8>(), 0..2048);
    prop_oneof![
        8 => (0..SEEDS.len(), prop::collection::vec(mutation(), 1..4)).prop_map(|(s, ms)| {
            let mut bytes = seed(s);
            for m in &ms {
                mutate(&mut bytes, m);
            }
            bytes
        }),
        1 => random.clone().prop_map(|tail| [&MAGIC[..], &FORMAT_VERSION.to_le_bytes(), &tail].concat()),
        1 => random,
    ]
}

/// `bytes` as a results file through `report` (every format) and `compare`.
pub(super) fn check(bytes: &[u8]) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.brg");
    std::fs::write(&path, bytes).unwrap();
    let paths = [path.clone()];
    within(&format!("{} bytes: {:?}", bytes.len(), &bytes[..bytes.len().min(64)]), || {
        if let Ok(mut reader) = barrage_metrics::file::ResultsReader::open(&path) {
            while reader.next_interval().is_some() {}
        }
        let _ = barrage_report::write_hdr_log(&paths, &mut Vec::new());
        let summary = match barrage_metrics::summary::summarize(&paths) {
            Ok(s) => s,
            Err(e) => {
                assert!(e.to_string().contains(path.to_str().unwrap()), "the error names the file: {e}");
                return;
            }
        };
        render(&Report::Run(&summary));
        let runs = [("good".to_string(), good()), ("fuzzed".to_string(), summary.clone())];
        let comparison = barrage_report::compare::compare(&runs, 0.05);
        render(&Report::Comparison { runs: &runs, comparison: &comparison });
        let reversed = [runs[1].clone(), runs[0].clone()];
        let comparison = barrage_report::compare::compare(&reversed, 0.05);
        render(&Report::Comparison { runs: &reversed, comparison: &comparison });
    });
}

/// Every format of `report`.
fn render(report: &Report) {
    report.text(false);
    report.text(true);
    report.json();
    report.csv();
    report.html(&barrage_report::HtmlOptions::default());
    for sheet in report.sheets() {
        barrage_report::to_csv(&sheet);
    }
}

/// The summary of the first seed, the baseline of comparisons.
fn good() -> barrage_metrics::RunSummary {
    static GOOD: std::sync::OnceLock<barrage_metrics::RunSummary> = std::sync::OnceLock::new();
    GOOD.get_or_init(|| {
        let path: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).join(SEEDS[0]);
        barrage_metrics::summary::summarize(&[path]).unwrap()
    })
    .clone()
}

/// The seeds themselves read in full: else the mutations start from nothing.
#[test]
fn the_seeds_are_valid_results_files() {
    for (i, name) in SEEDS.iter().enumerate() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(name);
        let s = barrage_metrics::summary::summarize(&[path]).unwrap();
        assert!(
            s.requests.total > 0 && s.warnings.iter().all(|w| !w.text.contains("stopped")),
            "{name}: {:?}",
            s.warnings
        );
        assert!(records(&seed(i)).len() >= 3, "{name}");
    }
}

proptest! {
    #![proptest_config(config(200))]

    /// Whatever the file holds, it reads to its readable end, or is refused naming the file.
    #[test]
    fn mutated_results_files_read_or_fail_cleanly(bytes in file()) {
        check(&bytes);
    }
}
