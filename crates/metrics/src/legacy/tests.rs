//! Each version's reader tested by a file of that version, written as that version wrote it.

use crate::file::tests::{header, interval, sample_at, write_old};
use crate::file::*;
use crate::legacy::{v10, v11, v3, v4, v5, v6, v7, v8, v9};
use crate::recorder::Recorder;
use std::time::Duration;

#[test]
fn version_3_files_read_with_the_new_figures_at_0() {
    // Written by the barrage of version 3 (6 requests: 2 ok, 2 refused, 2 timed out):
    // its counters and examples land on the same kinds, stale retries read as 0.
    use crate::sample::ErrorKind;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("v3.brg");
    std::fs::write(&p, include_bytes!("../../testdata/format-v3.brg")).unwrap();
    let mut r = ResultsReader::open(&p).unwrap();
    let mut total = Recorder::new();
    while let Some(i) = r.next_interval() {
        total.add(&i.recorder);
    }
    assert!(r.warning().is_none() && r.footer().is_some(), "{:?}", r.warning());
    let c = &total.counts;
    assert_eq!((c.sent, c.ok, c.connections, c.stale_retries), (6, 2, 4, 0));
    let errors: Vec<_> = ErrorKind::ALL.iter().map(|k| (k.name(), c.errors[*k as usize])).filter(|e| e.1 > 0).collect();
    assert_eq!(errors, [("refused", 2), ("request_timeout", 2)]);
    assert_eq!(total.example(ErrorKind::RequestTimeout), Some("no complete response within --timeout"));
    assert!(total.example(ErrorKind::Refused).unwrap().contains("refused"));
}

/// A file written by the barrage before format version 4 reads back: no boot ID, no
/// process roots, everything else as written.
#[test]
fn version_3_files_still_read() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("old.brg");
    let h = header(5_000);
    let old_header = v3::RunHeader {
        barrage_version: h.barrage_version.clone(),
        started_unix_ms: h.started_unix_ms,
        host: h.host.clone(),
        mode: h.mode,
        urls: h.urls.clone(),
        settings_json: h.settings_json.clone(),
        steps: h.steps.clone(),
        threads: h.threads,
        insecure: h.insecure,
    };
    let proc = |name: &str, processes| v3::ProcSample {
        name: name.into(),
        processes,
        cpu_user_percent: 12.5,
        cpu_system_percent: 2.5,
        rss_kib: 4096,
        threads: 2,
        fds: 9,
        context_switches: 77,
    };
    let (me, nginx) = (proc("barrage", 1), proc("nginx", 2));
    let i = interval(0, 5_000, 3);
    let old_interval = v3::IntervalRecord {
        index: 0,
        start_unix_ms: i.start_unix_ms,
        length_ms: i.length_ms,
        step: 0,
        recorder: crate::legacy::v3::RecorderV3(i.recorder.clone()),
        watch: Some(v3::WatchSample { host: Default::default(), generator: me, processes: vec![nginx] }),
    };
    write_old(&p, 3, &[v3::Record::Header(old_header), v3::Record::Interval(old_interval)]);
    let mut r = ResultsReader::open(&p).unwrap();
    assert_eq!(r.header(), &RunHeader { boot_id: String::new(), launch: unsplit(&h), ..h });
    let got = r.next_interval().unwrap();
    assert_eq!(got.recorder, i.recorder);
    let w = got.watch.unwrap();
    assert_eq!((w.generator.name.as_str(), w.generator.processes), ("barrage", 1));
    let p = &w.processes[0];
    assert_eq!((p.name.as_str(), p.processes, p.rss_kib, p.context_switches), ("nginx", 2, 4096, 77));
    assert!(p.roots.is_empty());
    assert!(r.next_interval().is_none() && r.warning().is_none(), "{:?}", r.warning());
}

/// Writes `records` as a file of an older format `version` did.
/// `h` as a version 6 header: without its launch.
fn as_v6(h: &RunHeader) -> v6::RunHeader {
    let groups = v10::RunHeader::from(h).groups;
    let h = h.clone();
    v6::RunHeader {
        barrage_version: h.barrage_version,
        started_unix_ms: h.started_unix_ms,
        host: h.host,
        boot_id: h.boot_id,
        mode: h.mode,
        urls: h.urls,
        settings_json: h.settings_json,
        steps: h.steps,
        threads: h.threads,
        insecure: h.insecure,
        groups,
    }
}

/// The launch a file from before version 7 reads with: unsplit, ready when it started.
fn unsplit(h: &RunHeader) -> Launch {
    Launch { ready_unix_us: h.started_unix_ms * 1000, ..Default::default() }
}

/// A file written before launches (format version 6) reads back as an unsplit run,
/// ready when it started.
#[test]
fn version_6_files_read_as_unsplit_runs() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("v6.brg");
    let h = header(6_000);
    let i = interval(0, 6_000, 3);
    let footer = RunFooter { attack_us: 9, ..Default::default() };
    write_old(
        &p,
        6,
        &[v6::Record::Header(as_v6(&h)), v6::Record::Interval(as_v7(&i)), v6::Record::Footer(footer.clone().into())],
    );
    let mut r = ResultsReader::open(&p).unwrap();
    assert_eq!(r.header(), &RunHeader { launch: unsplit(&h), ..h });
    assert_eq!(r.header().launch.shard, None);
    assert_eq!(r.next_interval().unwrap(), i);
    assert!(r.next_interval().is_none() && r.warning().is_none(), "{:?}", r.warning());
    assert_eq!(r.footer(), Some(&footer));
}

/// `i` as a version 7 interval: without the HTTP/2 figures.
fn as_v7(i: &IntervalRecord) -> v7::IntervalRecord {
    v7::IntervalRecord {
        index: i.index,
        start_unix_ms: i.start_unix_ms,
        length_ms: i.length_ms,
        step: i.step,
        recorder: crate::legacy::v7::RecorderV7(i.recorder.clone()),
        watch: i.watch.clone(),
    }
}

/// A file written before the HTTP/2 figures (format version 7) reads back whole, with
/// connections by protocol, streams, stalls and stream retries at 0; a version 8 file
/// keeps them.
#[test]
fn version_7_files_read_with_the_http2_figures_at_0() {
    use crate::recorder::StreamFigures;
    let dir = tempfile::tempdir().unwrap();
    let (h, footer) = (header(7_000), RunFooter { attack_us: 7, ..Default::default() });
    let mut i = interval(0, 7_000, 3);
    i.recorder.record_stale_retry();
    let before = i.recorder.clone();
    i.recorder.record_http_connection(crate::Protocol::Http2, false);
    i.recorder.record_http_connection(crate::Protocol::Http1, true);
    i.recorder.record_stream_retry();
    i.recorder.record_streams(&StreamFigures { most_open: 10, cap: 5, send_stalls: 2, recv_stalls: 3 });
    let p = dir.path().join("v7.brg");
    write_old(
        &p,
        7,
        &[v7::Record::Header((&h).into()), v7::Record::Interval(as_v7(&i)), v7::Record::Footer(footer.into())],
    );
    let mut r = ResultsReader::open(&p).unwrap();
    assert_eq!(r.header(), &h);
    let got = r.next_interval().unwrap().recorder;
    // The connections count stays: version 7 had it, without the protocols.
    let mut want = before.counts.clone();
    want.connections = 2;
    assert_eq!(got.counts, want);
    assert!(r.next_interval().is_none() && r.warning().is_none(), "{:?}", r.warning());
    // Today's file keeps every figure.
    let p = dir.path().join("v8.brg");
    write_old(&p, FORMAT_VERSION, &[Record::Header(h), Record::Interval(i.clone())]);
    let got = ResultsReader::open(&p).unwrap().next_interval().unwrap().recorder.counts;
    assert_eq!((got.protocols, got.http1_fallbacks, got.stream_retries), ([1, 1, 0], 1, 1));
    assert_eq!((got.streams_max, got.stream_cap, got.send_stalls, got.recv_stalls), (10, 5, 2, 3));
    assert_eq!(got, i.recorder.counts);
}

/// A file written before the workload's intents (format version 8) reads back whole,
/// with no intents and no sent prefix; a version 9 file keeps them.
#[test]
fn version_8_files_read_without_intents() {
    let dir = tempfile::tempdir().unwrap();
    let (h, footer) = (header(8_000), RunFooter { attack_us: 8, sent_prefix: 40, ..Default::default() });
    let mut i = interval(0, 8_000, 3);
    let before = i.recorder.clone();
    let mut s = sample_at(5);
    s.intent = crate::Intent::New;
    s.origin = crate::Origin::Kept;
    i.recorder.record(&s);
    let p = dir.path().join("v8.brg");
    let old = v8::IntervalRecord {
        index: i.index,
        start_unix_ms: i.start_unix_ms,
        length_ms: i.length_ms,
        step: i.step,
        recorder: crate::legacy::v8::RecorderV8(before.clone()),
        watch: i.watch.clone(),
    };
    write_old(
        &p,
        8,
        &[v8::Record::Header((&h).into()), v8::Record::Interval(old), v8::Record::Footer(footer.clone().into())],
    );
    let mut r = ResultsReader::open(&p).unwrap();
    assert_eq!(r.next_interval().unwrap().recorder.counts, before.counts);
    assert!(r.next_interval().is_none());
    assert_eq!(r.footer().map(|f| (f.attack_us, f.sent_prefix)), Some((8, 0)));
    let p = dir.path().join("v9.brg");
    write_old(&p, FORMAT_VERSION, &[Record::Header(h), Record::Interval(i.clone()), Record::Footer(footer)]);
    let mut r = ResultsReader::open(&p).unwrap();
    let got = r.next_interval().unwrap().recorder.counts.workload;
    assert_eq!((got.new, got.new_judged, got.false_hits, got.stamped), (1, 1, 1, 1));
    assert!(r.next_interval().is_none());
    assert_eq!(r.footer().map(|f| f.sent_prefix), Some(40));
}

/// A file written before rejected requests and a closed loop's quota (format version 9)
/// reads back whole: its footer without the quota, its recorders as they were (a plain
/// run's have nothing to put right).
#[test]
fn version_9_files_read_without_the_quota() {
    let dir = tempfile::tempdir().unwrap();
    let (h, footer) = (header(9_000), RunFooter { attack_us: 9, sent_prefix: 40, due: Some(7), ..Default::default() });
    let i = interval(0, 9_000, 3);
    let p = dir.path().join("v9.brg");
    let old = v9::IntervalRecord {
        index: i.index,
        start_unix_ms: i.start_unix_ms,
        length_ms: i.length_ms,
        step: i.step,
        recorder: crate::legacy::v9::RecorderV9(i.recorder.clone()),
        watch: i.watch.clone(),
    };
    write_old(
        &p,
        9,
        &[v9::Record::Header((&h).into()), v9::Record::Interval(old), v9::Record::Footer(footer.clone().into())],
    );
    let mut r = ResultsReader::open(&p).unwrap();
    assert_eq!(r.next_interval().unwrap().recorder.counts, i.recorder.counts);
    assert!(r.next_interval().is_none());
    assert_eq!(r.footer().map(|f| (f.sent_prefix, f.due)), Some((40, None)));
    let p = dir.path().join("v10.brg");
    write_old(&p, FORMAT_VERSION, &[Record::Header(h), Record::Interval(i), Record::Footer(footer)]);
    let mut r = ResultsReader::open(&p).unwrap();
    while r.next_interval().is_some() {}
    assert_eq!(r.footer().and_then(|f| f.due), Some(7));
}

/// A version 10 file holds every URL in its header's record, and no run id: it reads as
/// it is, with an empty id; today's file keeps the id.
#[test]
fn version_10_files_read_with_every_url_in_the_header_and_no_run_id() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("v10.brg");
    let mut h = header(10_000);
    h.urls = (0..URLS_PER_RECORD + 5).map(|i| format!("http://h/{i}")).collect();
    h.launch.run_id = "0123456789abcdef0123456789abcdef".into();
    let old = v10::Record::Header((&h).into());
    write_old(&p, 10, &[old, v10::Record::Interval(interval(0, 10_000, 3))]);
    let mut r = ResultsReader::open(&p).unwrap();
    assert_eq!(r.header(), &RunHeader { launch: Launch { run_id: String::new(), ..h.launch.clone() }, ..h.clone() });
    assert_eq!(r.next_interval(), Some(interval(0, 10_000, 3)));
    let p = dir.path().join("v11.brg");
    ResultsWriter::create(&p, &h).unwrap().finish(&RunFooter::default()).unwrap();
    assert_eq!(ResultsReader::open(&p).unwrap().header().launch.run_id, h.launch.run_id);
}

/// A version 11 footer has no count of requests sent sampled (`--trace-context` came
/// after): it reads as 0, its other figures as they were; today's file keeps the count.
#[test]
fn version_11_files_read_with_no_requests_sampled() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("v11.brg");
    let h = header(11_000);
    let footer = RunFooter { attack_us: 11, sent_prefix: 40, due: Some(7), trace_sampled: 12, ..Default::default() };
    let old = [
        v11::Record::Header(h.clone()),
        v11::Record::Interval(interval(0, 11_000, 3)),
        v11::Record::Footer(footer.clone().into()),
    ];
    write_old(&p, 11, &old);
    let mut r = ResultsReader::open(&p).unwrap();
    assert_eq!(r.next_interval(), Some(interval(0, 11_000, 3)));
    assert!(r.next_interval().is_none());
    assert_eq!(r.footer(), Some(&RunFooter { trace_sampled: 0, ..footer.clone() }));
    let p = dir.path().join("v12.brg");
    ResultsWriter::create(&p, &h).unwrap().finish(&footer).unwrap();
    let mut r = ResultsReader::open(&p).unwrap();
    while r.next_interval().is_some() {}
    assert_eq!(r.footer().map(|f| f.trace_sampled), Some(12));
}

/// A file written before flows (format version 4) reads back whole, with no flows.
#[test]
fn version_4_files_read_with_no_flows() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("v4.brg");
    let h = header(5_000);
    let old_header = v4::RunHeader {
        barrage_version: h.barrage_version.clone(),
        started_unix_ms: h.started_unix_ms,
        host: h.host.clone(),
        boot_id: h.boot_id.clone(),
        mode: h.mode,
        urls: h.urls.clone(),
        settings_json: h.settings_json.clone(),
        steps: h.steps.clone(),
        threads: h.threads,
        insecure: h.insecure,
    };
    let i = interval(0, 5_000, 3);
    let old_interval = v4::IntervalRecord {
        index: 0,
        start_unix_ms: i.start_unix_ms,
        length_ms: i.length_ms,
        step: 0,
        recorder: crate::legacy::v4::RecorderV4(i.recorder.clone()),
        watch: None,
    };
    write_old(&p, 4, &[v4::Record::Header(old_header), v4::Record::Interval(old_interval)]);
    let mut r = ResultsReader::open(&p).unwrap();
    assert_eq!(r.header(), &RunHeader { launch: unsplit(&h), ..h });
    let got = r.next_interval().unwrap();
    assert_eq!(got.recorder, i.recorder);
    assert!(got.recorder.flows.is_empty());
    assert!(r.next_interval().is_none() && r.warning().is_none(), "{:?}", r.warning());
}

/// A file written before server replies (format version 5) reads back whole, flows
/// included, with no replies.
#[test]
fn version_5_files_read_with_no_replies() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("v5.brg");
    let h = RunHeader {
        groups: vec![GroupInfo { name: "writers".into(), flow: "album".into(), ..Default::default() }],
        ..header(5_000)
    };
    let mut i = interval(0, 5_000, 3);
    i.recorder.flows.record_flow(b"writers", None, Duration::from_millis(3), 0, Duration::ZERO);
    i.recorder.names.record(b"writers/post", &sample_at(2));
    let old_interval = v5::IntervalRecord {
        index: 0,
        start_unix_ms: i.start_unix_ms,
        length_ms: i.length_ms,
        step: 0,
        recorder: crate::legacy::v5::RecorderV5(i.recorder.clone()),
        watch: None,
    };
    let footer = RunFooter { attack_us: 7, ..Default::default() };
    write_old(
        &p,
        5,
        &[v5::Record::Header(as_v6(&h)), v5::Record::Interval(old_interval), v5::Record::Footer(footer.clone().into())],
    );
    let mut r = ResultsReader::open(&p).unwrap();
    assert_eq!(r.header(), &RunHeader { launch: unsplit(&h), ..h });
    let got = r.next_interval().unwrap();
    assert_eq!(got.recorder, i.recorder);
    assert_eq!((got.recorder.flows.len(), got.recorder.names.len()), (1, 1));
    assert!(got.recorder.replies.is_empty());
    assert!(r.next_interval().is_none() && r.warning().is_none(), "{:?}", r.warning());
    assert_eq!(r.footer(), Some(&footer));
}

/// `i` as a record of format `version` (without its watch sample before version 4).
fn interval_payload(version: u16, i: &IntervalRecord) -> Vec<u8> {
    let (index, start_unix_ms, length_ms, step) = (i.index, i.start_unix_ms, i.length_ms, i.step);
    let r = i.recorder.clone();
    match version {
        3 => postcard::to_stdvec(&v3::Record::Interval(v3::IntervalRecord {
            index,
            start_unix_ms,
            length_ms,
            step,
            recorder: crate::legacy::v3::RecorderV3(r),
            watch: None,
        })),
        4 => postcard::to_stdvec(&v4::Record::Interval(v4::IntervalRecord {
            index,
            start_unix_ms,
            length_ms,
            step,
            recorder: crate::legacy::v4::RecorderV4(r),
            watch: i.watch.clone(),
        })),
        5 => postcard::to_stdvec(&v5::Record::Interval(v5::IntervalRecord {
            index,
            start_unix_ms,
            length_ms,
            step,
            recorder: crate::legacy::v5::RecorderV5(r),
            watch: i.watch.clone(),
        })),
        _ => postcard::to_stdvec(&Record::Interval(i.clone())),
    }
    .unwrap()
}

/// The header of [`header`] as a record of format `version`.
fn header_payload(version: u16) -> Vec<u8> {
    let h = header(0);
    let (barrage_version, host, boot_id, settings_json) = (h.barrage_version, h.host, h.boot_id, h.settings_json);
    let (started_unix_ms, mode, urls, steps, threads, insecure) =
        (h.started_unix_ms, h.mode, h.urls, h.steps, h.threads, h.insecure);
    match version {
        3 => postcard::to_stdvec(&v3::Record::Header(v3::RunHeader {
            barrage_version,
            started_unix_ms,
            host,
            mode,
            urls,
            settings_json,
            steps,
            threads,
            insecure,
        })),
        4 => postcard::to_stdvec(&v4::Record::Header(v4::RunHeader {
            barrage_version,
            started_unix_ms,
            host,
            boot_id,
            mode,
            urls,
            settings_json,
            steps,
            threads,
            insecure,
        })),
        _ => postcard::to_stdvec(&Record::Header(header(0))),
    }
    .unwrap()
}

/// Files of every format version refuse a list longer than its limit from its length,
/// before its entries are decoded: a crafted interval of a million empty request names
/// reads up to there, with a warning that says so.
#[test]
fn every_version_refuses_a_list_over_its_limit_from_its_length() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("crafted.brg");
    let n = 1_000_000;
    // An empty key of each version: no name, no requests or failures, an empty
    // histogram; since version 4 no ticks, since version 5 no flow counts nor example.
    for (version, key) in [(3, 4), (4, 5), (5, 11), (FORMAT_VERSION, 11)] {
        let empty = interval_payload(version, &interval(1, 0, 3));
        let mut one = interval(1, 0, 3);
        one.recorder.names.record(b"x", &sample_at(1200));
        let one = interval_payload(version, &one);
        let at = empty.iter().zip(&one).position(|(a, b)| a != b).unwrap();
        assert_eq!((empty[at], one[at]), (0, 1), "version {version}: the length of the names");
        // 1,000,000 as a varint, then the empty keys.
        let crafted = [&empty[..at], &[0xc0, 0x84, 0x3d], &vec![0; key * n], &empty[at + 1..]].concat();
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&version.to_le_bytes());
        for payload in [header_payload(version), interval_payload(version, &interval(0, 0, 3)), crafted] {
            bytes.extend_from_slice(&(payload.len() as u32).to_le_bytes());
            bytes.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
            bytes.extend_from_slice(&payload);
        }
        std::fs::write(&p, bytes).unwrap();
        let mut r = ResultsReader::open(&p).unwrap();
        assert_eq!(std::iter::from_fn(|| r.next_interval()).count(), 1, "version {version}");
        let warning = r.warning().unwrap();
        assert!(warning.contains("a record does not decode: 1000000 request names, over the limit of 64"), "{warning}");
    }
}
