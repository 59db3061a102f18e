use super::wire::{counters, crafted_key, decode, encode, NameLimit, Wire, V2_COOKIE, V2_DEFLATE_COOKIE};
use super::*;
use crate::bounded::Bounded;
use crate::legacy::v9::RecorderV9;
use crate::limits::{MAX_HISTOGRAM_BYTES, MAX_INTERVAL_SAMPLES, MAX_INTERVAL_TICKS};
use proptest::prelude::*;

fn sample(latency_ms: u64, outcome: Outcome) -> Sample {
    let ms = Duration::from_millis;
    let phases = [None, Some(Duration::from_micros(50)), None, None, None, None];
    Sample { started: ms(1), phases, ..crate::testing::sample(ms(1 + latency_ms), outcome) }
}

/// A step's check that fails on a 200 fails the request in every figure it goes into:
/// the totals, its name, its method, its second, its backend; the status stays 200.
#[test]
fn a_rejected_answer_fails_its_request_everywhere() {
    let mut r = Recorder::new();
    let keys = SampleKeys { name: Some(b"step"), method: Some(b"GET"), backend: Some(b"b1") };
    r.record_keyed(&sample(3, Outcome::Status(200)), &keys);
    r.record_keyed(&Sample { rejected: true, ..sample(3, Outcome::Status(200)) }, &keys);
    r.record_keyed(&Sample { rejected: true, ..sample(3, Outcome::Status(404)) }, &keys);
    r.names.mark(b"step", FlowFailure::Check, || "check status failed".into());
    assert_eq!((r.counts.completed, r.counts.ok, r.counts.rejected), (3, 1, 1), "a rejected 404 is a 404");
    for keyed in [&r.names, &r.methods, &r.backends] {
        assert_eq!((keyed[0].requests, keyed[0].failed), (3, 2), "{}", keyed[0].name);
    }
    assert_eq!(r.names[0].flow.check_failed, 1);
    let tick = r.timeline[0];
    assert_eq!((tick.ok, tick.failed), (1, 2));
    assert_eq!(r.status_counts()[&200], 2);
    let back: Recorder = postcard::from_bytes(&postcard::to_stdvec(&r).unwrap()).unwrap();
    assert_eq!(back.counts, r.counts);
}

/// Versions 5 to 9 counted a rejected 2xx as `ok` in the totals and under its method,
/// and as failed under its step's name: read today, the totals and the one method are
/// put right from the names.
#[test]
fn older_files_count_their_rejected_answers_from_the_names() {
    let mut r = Recorder::new();
    let keys = SampleKeys { name: Some(b"step"), method: Some(b"GET"), backend: None };
    for _ in 0..3 {
        r.record_keyed(&sample(3, Outcome::Status(200)), &keys);
    }
    r.record_keyed(&sample(3, Outcome::Status(500)), &keys);
    r.flows.record_flow(b"group", Some(FlowFailure::Check), Duration::from_millis(3), 0, Duration::ZERO);
    // As version 9 wrote a 200 whose check failed: failed under its name alone.
    r.names.stats[0].failed += 1;
    r.names.mark(b"step", FlowFailure::Check, || "check".into());
    assert_eq!((r.counts.ok, r.methods[0].failed), (3, 1));
    let bytes = postcard::to_stdvec(&RecorderV9(r.clone())).unwrap();
    let back = postcard::from_bytes::<RecorderV9>(&bytes).unwrap().0;
    assert_eq!((back.counts.ok, back.counts.rejected, back.methods[0].failed), (2, 1, 2));
    // Without flows nothing was rejected, whatever the names say.
    let mut plain = r.clone();
    plain.flows = Keyed::default();
    let bytes = postcard::to_stdvec(&RecorderV9(plain)).unwrap();
    let back = postcard::from_bytes::<RecorderV9>(&bytes).unwrap().0;
    assert_eq!((back.counts.ok, back.counts.rejected), (3, 0));
}

#[test]
fn cache_split_is_allocated_on_demand_and_round_trips() {
    let mut r = Recorder::new();
    r.record(&sample(3, Outcome::Status(200)));
    assert!(r.hit.is_none() && r.miss.is_none());
    let hit = Sample { cache: CacheStatus::Hit, ..sample(2, Outcome::Status(200)) };
    let stale = Sample { cache: CacheStatus::Stale, ..sample(2, Outcome::Status(200)) };
    let miss = Sample { cache: CacheStatus::Miss, ..sample(9, Outcome::Status(200)) };
    for s in [&hit, &stale, &miss] {
        r.record(s);
    }
    assert_eq!(r.counts.cache, [1, 1, 0, 0, 1, 1]);
    assert_eq!(r.counts.cache_bytes[CacheStatus::Hit as usize], 100);
    assert_eq!(r.hit.as_ref().unwrap().corrected.len(), 2);
    assert_eq!(r.miss.as_ref().unwrap().phases[Phase::Connect as usize].len(), 1);
    let back: Recorder = postcard::from_bytes(&postcard::to_stdvec(&r).unwrap()).unwrap();
    assert_eq!(back, r);
    let mut sum = Recorder::new();
    sum.add(&r);
    sum.add(&r);
    assert_eq!(sum.hit.unwrap().corrected.len(), 4);
}

#[test]
fn backends_are_kept_apart_up_to_a_bound() {
    let mut r = Recorder::new();
    let ok = sample(4, Outcome::Status(200));
    let bad = sample(4, Outcome::Status(502));
    r.backends.record(b"a", &ok);
    r.backends.record(b"b", &bad);
    r.backends.record(b"a", &ok);
    assert_eq!(
        r.backends.iter().map(|b| (b.name.as_str(), b.requests, b.failed)).collect::<Vec<_>>(),
        [("a", 2, 0), ("b", 1, 1)]
    );
    for i in 0..200 {
        r.backends.record(format!("req-{i}").as_bytes(), &ok);
    }
    assert_eq!(r.backends.len(), MAX_KEYS);
    assert_eq!(r.backends.last().unwrap().name, "(other)");
    // Backends keep when they answered (the samples end at 5 ms: tick 0); names do not.
    assert_eq!(r.backends[0].timeline.iter().map(|t| (t.tick, t.ok)).collect::<Vec<_>>(), [(0, 2)]);
    r.names.record(b"get", &ok);
    assert!(r.names[0].timeline.is_empty());
    let back: Recorder = postcard::from_bytes(&postcard::to_stdvec(&r).unwrap()).unwrap();
    assert_eq!(back, r);
    let mut sum = Recorder::new();
    sum.add(&r);
    sum.add(&r);
    assert_eq!(sum.backends[0].requests, 4);
}

#[test]
fn records_counts_status_and_errors() {
    let mut r = Recorder::new();
    r.record(&sample(5, Outcome::Status(200)));
    r.record(&sample(5, Outcome::Status(503)));
    r.record(&sample(5, Outcome::Error(ErrorKind::Reset)));
    assert_eq!(r.counts.completed, 3);
    assert_eq!(r.counts.ok, 1);
    assert_eq!(r.counts.errors[ErrorKind::Reset as usize], 1);
    assert_eq!(r.status_counts(), BTreeMap::from([(200, 1), (503, 1)]));
    assert_eq!(r.by_class[1].len(), 1);
    assert_eq!(r.by_class[5].len(), 1);
    // The phase that did not happen is absent, not zero.
    assert_eq!(r.phase(Phase::Dns).len(), 0);
    assert_eq!(r.phase(Phase::Connect).len(), 3);
    assert_eq!(r.corrected.max(), r.corrected.highest_equivalent(6_000));
}

/// A V2 header (and no counts) declaring `len` bytes of counts, deflated as a results
/// file holds it.
fn crafted(len: u32, low: u64, high: u64, digits: u32) -> Vec<u8> {
    use std::io::Write;
    let mut plain = Vec::new();
    for word in [V2_COOKIE, len, 0, digits] {
        plain.extend_from_slice(&word.to_be_bytes());
    }
    for word in [low, high, 1f64.to_bits()] {
        plain.extend_from_slice(&word.to_be_bytes());
    }
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    z.write_all(&plain).unwrap();
    let stream = z.finish().unwrap();
    let mut out = V2_DEFLATE_COOKIE.to_be_bytes().to_vec();
    out.extend_from_slice(&(stream.len() as u32).to_be_bytes());
    out.extend_from_slice(&stream);
    out
}

#[test]
fn histograms_decode_within_bounds_whatever_their_header_claims() {
    // A crafted header claiming 4 GiB of counts: hdrhistogram's deflate decoder would
    // allocate them before finding the stream ends.
    let err = decode(&crafted(0xFFFF_FF00, 1, HIGHEST_US, 3)).unwrap_err();
    assert!(err.contains("declares 4294967040 bytes of counts, holds 0"), "{err}");
    // Bounds as wide as HdrHistogram allows: 6 million counters allocated up front.
    let err = decode(&crafted(0, 1, u64::MAX, 5)).unwrap_err();
    assert!(err.contains("out of range"), "{err}");
    // A stream that inflates past the limit (a zip bomb) stops at it.
    let mut bomb = crafted(0, 1, HIGHEST_US, 3);
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    std::io::Write::write_all(&mut z, &vec![0u8; MAX_HISTOGRAM_BYTES + 100]).unwrap();
    let stream = z.finish().unwrap();
    bomb.truncate(4);
    bomb.extend_from_slice(&(stream.len() as u32).to_be_bytes());
    bomb.extend_from_slice(&stream);
    assert!(decode(&bomb).unwrap_err().contains("inflates past the 1 MiB limit"));
    assert!(decode(b"nonsense").unwrap_err().contains("not an HdrHistogram"));
    // What barrage writes still reads, with its counts, and our bounds have 23,552
    // counters.
    let mut h = new_histogram();
    h.record(1234).unwrap();
    h.record(HIGHEST_US).unwrap();
    let back = decode(&encode(&h)).unwrap();
    assert_eq!((back.len(), back.max(), back.high()), (2, h.max(), HIGHEST_US));
    assert_eq!(counters(1, HIGHEST_US, 3), Some(23_552));
    assert_eq!(counters(1, HIGHEST_US, 3).unwrap() as usize, h.distinct_values());
}

/// A recorder as it reads back from `w` written, or why it does not.
fn read(w: &Wire) -> Result<Recorder, String> {
    let bytes = postcard::to_stdvec(w).unwrap();
    crate::bounded::decoding(|| postcard::from_bytes::<Recorder>(&bytes))
}

#[test]
fn a_recorder_holds_no_more_histograms_than_it_has() {
    let mut w = Recorder::new().wire();
    w.phases.0.push(encode(&new_histogram()));
    assert_eq!(read(&w).unwrap_err(), "7 phase histograms, over the limit of 6");
    let mut w = Recorder::new().wire();
    w.by_class.0.push(encode(&new_histogram()));
    assert_eq!(read(&w).unwrap_err(), "7 status class histograms, over the limit of 6");
}

/// Timelines and samples are bounded in the file only: a recorder writes no more than
/// a reader takes, and reads back what it wrote up to there.
#[test]
fn a_recorder_writes_no_more_ticks_or_samples_than_a_reader_takes() {
    let mut r = Recorder::new();
    for tick in 0..MAX_INTERVAL_TICKS as u64 + 5 {
        let s = Sample { ended: Duration::from_millis(tick * 100), ..sample(0, Outcome::Status(200)) };
        r.record(&s);
        r.backends.record(b"b1", &s);
    }
    r.samples = vec![RequestPoint::default(); MAX_INTERVAL_SAMPLES + 5];
    let back = read(&r.wire()).unwrap();
    assert_eq!((back.timeline.len(), back.backends[0].timeline.len()), (MAX_INTERVAL_TICKS, MAX_INTERVAL_TICKS));
    assert_eq!(back.timeline[..], r.timeline[..MAX_INTERVAL_TICKS]);
    assert_eq!(back.samples.len(), MAX_INTERVAL_SAMPLES);
    // Crafted: one more is refused, from its length.
    let mut w = r.wire();
    w.timeline.0.push(Tick::default());
    assert_eq!(read(&w).unwrap_err(), "1001 timeline ticks, over the limit of 1000");
    let mut w = r.wire();
    w.backends.0[0].4 .0.push(Tick::default());
    assert_eq!(read(&w).unwrap_err(), "1001 ticks of a key's timeline, over the limit of 1000");
    let mut w = r.wire();
    w.samples.0.push(RequestPoint::default());
    assert_eq!(
        read(&w).unwrap_err(),
        format!("{} request samples, over the limit of {}", MAX_INTERVAL_SAMPLES + 1, MAX_INTERVAL_SAMPLES)
    );
}

/// Found by the fuzz harness: a results file whose key counted more failures than
/// requests made the summary underflow. It is refused as corrupt where it is read.
#[test]
fn a_key_with_more_failures_than_requests_does_not_decode() {
    let key = |failed| std::iter::once(get_key(failed)).collect();
    assert!(Keyed::decode::<NameLimit>(key(1), false).is_ok());
    let err = Keyed::decode::<NameLimit>(key(2), false).err().unwrap();
    assert_eq!(err, "a key counts 2 failed of 1 requests");
}

#[test]
fn round_trips_through_postcard() {
    let mut r = Recorder::new();
    r.record(&sample(7, Outcome::Status(204)));
    r.record(&sample(7, Outcome::Error(ErrorKind::Unreachable)));
    r.record_stale_retry();
    r.set_example(ErrorKind::Tls, "bad cert".into());
    r.set_example(ErrorKind::Unreachable, "Network is unreachable (os error 101)".into());
    let bytes = postcard::to_stdvec(&r).unwrap();
    let back: Recorder = postcard::from_bytes(&bytes).unwrap();
    assert_eq!(back, r);
    let mut sum = back.clone();
    sum.add(&back);
    assert_eq!((sum.counts.stale_retries, sum.counts.errors[ErrorKind::Unreachable as usize]), (2, 2));
}

/// Merged HTTP/2 figures: connections and stalls add up, streams in use is the most on
/// any connection, the stream cap the lowest a server set (0, none, never wins).
#[test]
fn http2_figures_merge_as_sums_a_maximum_and_a_lowest_cap() {
    let one = |most_open, cap, stalls| {
        let mut r = Recorder::new();
        r.record_http_connection(Protocol::Http2, false);
        r.record_streams(&StreamFigures { most_open, cap, send_stalls: stalls, recv_stalls: 1 });
        r
    };
    let (mut a, b, c) = (one(10, 0, 1), one(5, 5, 2), one(8, 7, 0));
    a.record_http_connection(Protocol::Http1, true);
    a.record_stream_retry();
    for other in [&b, &c] {
        a.add(other);
    }
    let n = &a.counts;
    assert_eq!((n.connections, n.protocols, n.http1_fallbacks, n.stream_retries), (4, [1, 3, 0], 1, 1));
    assert_eq!((n.streams_max, n.stream_cap, n.send_stalls, n.recv_stalls), (10, 5, 3, 3));
    // The order of merging does not matter.
    let mut d = c.clone();
    d.add(&b);
    assert_eq!(d.counts.stream_cap, 5);
    assert_eq!(lowest_cap(0, 0), 0);
}

#[test]
fn examples_are_written_without_the_secrets_they_quote() {
    let mut r = Recorder::new();
    r.set_example(ErrorKind::Other, "error sending request for url (http://u:S3CRET@h/?token=S3CRET)".into());
    r.set_example(ErrorKind::Tls, "bad cert".into());
    r.redact_examples(&crate::secrets::Redaction::default());
    assert_eq!(
        r.example(ErrorKind::Other),
        Some("error sending request for url (http://u:<redacted>@h/?token=<redacted>)")
    );
    assert_eq!(r.example(ErrorKind::Tls), Some("bad cert"));
}

#[test]
fn timeline_counts_per_tenth_of_a_second_in_any_order() {
    let mut t = Timeline::default();
    for (ms, ok) in [(50, true), (99, false), (100, true), (350, false), (120, true), (5, true)] {
        t.record(Duration::from_millis(ms), ok, ms);
    }
    let ticks: Vec<(u32, u32, u32, u32)> = t.iter().map(|t| (t.tick, t.ok, t.failed, t.max_us)).collect();
    assert_eq!(ticks, [(0, 2, 1, 99), (1, 2, 0, 120), (3, 0, 1, 350)]);
    let mut later = Timeline::default();
    later.record(Duration::from_millis(250), true, 1000);
    later.shift(1);
    t.add(&later);
    let ticks: Vec<(u32, u32, u32, u32)> = t.iter().map(|t| (t.tick, t.ok, t.failed, t.max_us)).collect();
    assert_eq!(ticks, [(0, 2, 1, 99), (1, 2, 0, 120), (3, 1, 1, 1000)]);
}

proptest! {
    #[test]
    fn merge_keeps_counts_and_is_order_free(a in proptest::collection::vec(1u64..5_000, 0..50),
                                            b in proptest::collection::vec(1u64..5_000, 0..50)) {
        let fill = |v: &[u64]| {
            let mut r = Recorder::new();
            for ms in v { r.record(&sample(*ms, Outcome::Status(200))); }
            r
        };
        let (ra, rb) = (fill(&a), fill(&b));
        let mut ab = ra.clone();
        ab.add(&rb);
        let mut ba = rb.clone();
        ba.add(&ra);
        prop_assert_eq!(ab.counts.completed, (a.len() + b.len()) as u64);
        prop_assert_eq!(&ab.corrected, &ba.corrected);
        let all: Vec<u64> = a.iter().chain(&b).copied().collect();
        prop_assert_eq!(ab.corrected, fill(&all).corrected);
    }

    /// Runs of alike requests recorded at once leave the recorder exactly as recording
    /// them one by one does: histograms, counters, timelines, the scatter plot's points
    /// (a tick's first ten, across runs), and the figures by name and backend.
    #[test]
    fn alike_requests_recorded_at_once_are_recorded_as_one_by_one(
        runs in proptest::collection::vec((1u64..3_000, 1u64..30, 0u8..4, 0u64..400), 1..40),
    ) {
        let (mut once, mut each) = (Recorder::new(), Recorder::new());
        let total: u64 = runs.iter().map(|r| r.1).sum();
        for (ms, n, kind, at_ms) in runs {
            let outcome = match kind {
                0 => Outcome::Status(200),
                1 => Outcome::Status(503),
                _ => Outcome::Error(ErrorKind::Reset),
            };
            let cache = if kind == 3 { CacheStatus::Hit } else { CacheStatus::Unknown };
            let shift = Duration::from_millis(at_ms);
            let one = Sample {
                intended: shift,
                started: shift + Duration::from_millis(1),
                ended: shift + Duration::from_millis(1 + ms),
                late: kind == 1,
                cache,
                intent: Default::default(),
                origin: Default::default(),
                ..sample(ms, outcome)
            };
            let backend = [b"a".as_slice(), b"b"][usize::from(kind % 2)];
            let keys = SampleKeys { name: Some(b"GET"), method: None, backend: Some(backend) };
            for _ in 0..n {
                each.record_keyed(&one, &keys);
            }
            let all = Sample { bytes_in: one.bytes_in * n, bytes_out: one.bytes_out * n, ..one };
            once.record_alike(&all, n, &keys);
        }
        prop_assert_eq!(once.counts.completed, total);
        prop_assert_eq!(once.corrected.len(), total);
        prop_assert_eq!(once.names[0].latency.len(), total);
        // The scatter plot has each tick's first ten requests, no more, no fewer.
        for t in once.timeline.iter() {
            let points = once.samples.iter().filter(|p| u64::from(p.ended_ms) / 100 == u64::from(t.tick)).count();
            prop_assert_eq!(points as u32, (t.ok + t.failed).min(SAMPLES_PER_TICK));
        }
        prop_assert_eq!(once, each);
    }

    #[test]
    fn quantiles_are_monotonic(v in proptest::collection::vec(1u64..10_000_000, 1..200)) {
        let mut h = new_histogram();
        for x in &v { h.record(*x).unwrap(); }
        let mut last = 0;
        for q in [0.0, 0.5, 0.9, 0.95, 0.99, 0.999, 1.0] {
            let x = h.value_at_quantile(q);
            prop_assert!(x >= last);
            last = x;
        }
    }
}

/// A server error reply: a 500 (`ERR`) or a 421 (`MOVED`), as the key-value engine
/// maps them.
fn reply(latency_ms: u64, status: u16) -> Sample {
    sample(latency_ms, Outcome::Status(status))
}

/// Replies are counted per class with their latency; the example of each is made once,
/// by the first reply of its class, and survives the file and a merge (the first kept).
#[test]
fn replies_count_per_class_with_one_example_each() {
    let mut r = Recorder::new();
    let mut made = 0;
    for (class, status, latency, text) in [
        (&b"ERR"[..], 500, 2, "ERR wrong number of arguments for 'set' command"),
        (b"MOVED", 421, 4, "MOVED 3999 127.0.0.1:6381"),
        (b"ERR", 500, 6, "ERR unknown command 'FOO'"),
        (b"ERR", 500, 8, "ERR again"),
    ] {
        r.replies.record_example(class, &reply(latency, status), || {
            made += 1;
            text.to_string()
        });
    }
    assert_eq!(made, 2, "one example made per class, none for the later replies");
    let rows: Vec<_> =
        r.replies.iter().map(|k| (k.name.as_str(), k.requests, k.failed, k.example.as_deref())).collect();
    assert_eq!(
        rows,
        [
            ("ERR", 3, 3, Some("ERR wrong number of arguments for 'set' command")),
            ("MOVED", 1, 1, Some("MOVED 3999 127.0.0.1:6381")),
        ]
    );
    // Latency from the intended start: 1 ms late start + 2, 6 and 8 ms.
    let err = &r.replies[0].latency;
    assert_eq!((err.len(), err.min(), err.max()), (3, 3_000, err.highest_equivalent(9_000)));
    assert!(r.replies.iter().all(|k| k.timeline.is_empty()), "replies keep no timeline");
    let back: Recorder = postcard::from_bytes(&postcard::to_stdvec(&r).unwrap()).unwrap();
    assert_eq!(back, r);

    let mut other = Recorder::new();
    other.replies.record_example(b"ERR", &reply(10, 500), || "ERR from the other run".into());
    other.replies.record_example(b"LOADING", &reply(1, 503), || "LOADING Redis is loading".into());
    let mut sum = r.clone();
    sum.add(&other);
    let rows: Vec<_> =
        sum.replies.iter().map(|k| (k.name.as_str(), k.requests, k.latency.len(), k.example.as_deref())).collect();
    assert_eq!(
        rows,
        [
            ("ERR", 4, 4, Some("ERR wrong number of arguments for 'set' command")),
            ("MOVED", 1, 1, Some("MOVED 3999 127.0.0.1:6381")),
            ("LOADING", 1, 1, Some("LOADING Redis is loading")),
        ]
    );
    // A recorder without an example of its own takes the other's.
    let mut empty = Recorder::new();
    empty.add(&other);
    assert_eq!(empty.replies[0].example.as_deref(), Some("ERR from the other run"));
}

/// A server sending a new class name per reply cannot grow memory: classes past the
/// bound count as `(other)`, with the first of their examples.
#[test]
fn reply_classes_are_bounded_like_the_other_keys() {
    let mut r = Recorder::new();
    for i in 0..500 {
        let class = format!("E{i}");
        r.replies.record_example(class.as_bytes(), &reply(1, 500), || format!("{class} said"));
    }
    assert_eq!(r.replies.len(), MAX_KEYS);
    let other = r.replies.last().unwrap();
    assert_eq!((other.name.as_str(), other.requests), ("(other)", 500 - (MAX_KEYS as u64 - 1)));
    assert_eq!(other.example.as_deref(), Some("E63 said"));
    let mut sum = r.clone();
    sum.add(&r);
    assert_eq!((sum.replies.len(), sum.replies.iter().map(|k| k.requests).sum::<u64>()), (MAX_KEYS, 1000));
}

/// A results file holding more reply classes than a recorder keeps is refused where it
/// is read, as one with too many names is: from the list's length, before its keys are
/// decoded.
#[test]
fn a_recorder_holds_no_more_reply_classes_than_it_keeps() {
    let key = crafted_key;
    let mut w = Recorder::new().wire();
    w.replies = (0..MAX_KEYS).map(key).collect();
    assert_eq!(read(&w).unwrap().replies.len(), MAX_KEYS);
    w.replies.0.push(key(MAX_KEYS));
    assert_eq!(read(&w).unwrap_err(), "65 server reply classes, over the limit of 64");
    let mut w = Recorder::new().wire();
    w.names = (0..=MAX_KEYS).map(key).collect();
    assert_eq!(read(&w).unwrap_err(), "65 request names, over the limit of 64");
    // A length that claims billions of keys ends with the bytes, allocating nothing for
    // them: the replies are the last field, so the claim is the record's last bytes.
    let mut bytes = postcard::to_stdvec(&Recorder::new()).unwrap();
    assert_eq!(bytes.pop(), Some(0), "an empty list of replies ends the record");
    bytes.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
    assert!(postcard::from_bytes::<Recorder>(&bytes).is_err());
}

/// Why a recorder does not decode reaches the reader: postcard keeps no message.
#[test]
fn the_reason_a_recorder_is_refused_is_kept() {
    let mut w = Recorder::new().wire();
    w.names = std::iter::once(get_key(2)).collect();
    assert_eq!(read(&w).unwrap_err(), "a key counts 2 failed of 1 requests");
    let mut w = Recorder::new().wire();
    w.lag = vec![1, 2, 3];
    assert_eq!(read(&w).unwrap_err(), "bad histogram: not an HdrHistogram V2 encoding");
}

/// A key of one request, `failed` of them failed.
fn get_key(failed: u64) -> KeyedWire {
    ("GET".into(), 1, failed, encode(&new_histogram()), Bounded::default(), FlowCounts::default(), None)
}

#[test]
fn reply_examples_are_written_without_the_secrets_they_quote() {
    let mut r = Recorder::new();
    r.replies.record_example(b"ERR", &reply(1, 500), || "ERR bad URL http://u:S3CRET@h/?token=S3CRET".into());
    r.replies.record_example(b"MOVED", &reply(1, 421), || "MOVED 3999 127.0.0.1:6381".into());
    r.redact_examples(&crate::secrets::Redaction::default());
    assert_eq!(r.replies[0].example.as_deref(), Some("ERR bad URL http://u:<redacted>@h/?token=<redacted>"));
    assert_eq!(r.replies[1].example.as_deref(), Some("MOVED 3999 127.0.0.1:6381"));
}

/// Steps and flows are counted apart, survive the results file and add up exactly.
#[test]
fn flow_figures_round_trip_and_merge() {
    let mut r = Recorder::new();
    r.names.record(b"post", &Sample { rejected: true, ..sample(5, Outcome::Status(200)) });
    r.names.mark(b"post", FlowFailure::Capture, || "capture albumID found nothing".into());
    r.names.record(b"get", &Sample { rejected: true, ..sample(5, Outcome::Status(404)) });
    r.names.mark(b"get", FlowFailure::Check, || "check status".into());
    r.names.skip(b"get");
    r.flows.record_flow(b"writers", Some(FlowFailure::Capture), Duration::from_millis(30), 1, Duration::ZERO);
    r.flows.record_flow(b"writers", None, Duration::from_millis(10), 0, Duration::ZERO);
    r.flows.record_dropped(b"writers", 3);
    r.flows.record_unfinished(b"writers");
    let post = &r.names[0];
    assert_eq!((post.requests, post.failed, post.flow.capture_failed), (1, 1, 1));
    let get = &r.names[1];
    // The 404 failed already: the check does not count it twice.
    assert_eq!((get.requests, get.failed, get.flow.check_failed, get.flow.skipped), (1, 1, 1, 1));
    let back: Recorder = postcard::from_bytes(&postcard::to_stdvec(&r).unwrap()).unwrap();
    assert_eq!(back, r);
    let mut sum = back.clone();
    sum.add(&r);
    let w = &sum.flows[0];
    assert_eq!((w.requests, w.failed, w.latency.len()), (4, 2, 4));
    assert_eq!(w.flow, FlowCounts { check_failed: 0, capture_failed: 2, skipped: 2, dropped: 6, unfinished: 2 });
}
