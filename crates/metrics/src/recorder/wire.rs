//! A [`Recorder`] as the results file holds it: histograms in HdrHistogram's compressed V2
//! encoding, every list bounded before it is decoded, so a crafted file cannot make a reader
//! allocate more than a recorder holds.

use super::{
    new_histogram, status_slot, Counts, FlowCounts, Keyed, PhaseSet, Recorder, RequestPoint, Tick, Timeline,
    CLASS_COUNT, MAX_KEYS, STATUS_SLOTS,
};
use super::{HIGHEST_US, SIGNIFICANT_DIGITS};
use crate::bounded::{limit, refuse, Bounded};
use crate::limits::{fmt_limit, MAX_HISTOGRAM_BYTES, MAX_HISTOGRAM_COUNTERS, MAX_INTERVAL_SAMPLES, MAX_INTERVAL_TICKS};
use crate::sample::{ERROR_KIND_COUNT, PHASE_COUNT};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// One key in the results file: name, requests, failed, latency, timeline (empty untimed),
/// flow counts, an example of a failed check or capture.
pub(crate) type KeyedWire = (String, u64, u64, Vec<u8>, KeyTicks, FlowCounts, Option<String>);

/// A key's timeline in the results file.
pub(crate) type KeyTicks = Bounded<Tick, KeyTickLimit>;

/// The keyed lists of a recorder in the results file, flows and replies.
pub(crate) type Keys<L> = Bounded<KeyedWire, L>;

/// Test files only: a recorder whose replies hold `n` classes, written as today's, so that
/// a file can hold more classes than a recorder keeps (a crafted one).
#[cfg(test)]
pub(crate) struct WideReplies(pub usize);

#[cfg(test)]
impl Serialize for WideReplies {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut w = Recorder::new().wire();
        w.replies = (0..self.0).map(crafted_key).collect();
        w.serialize(s)
    }
}

/// Key `i` of a crafted recorder: `E<i>`, one failed request.
#[cfg(test)]
pub(super) fn crafted_key(i: usize) -> KeyedWire {
    (format!("E{i}"), 1, 1, encode(&new_histogram()), Bounded::default(), FlowCounts::default(), None)
}

impl<K, C, F, R> Wire<K, C, F, R> {
    /// The same recorder written another way: its keys, its counters, the error kind
    /// index of each example (dropped when `example` says `None`), its flows and its
    /// server replies.
    pub(crate) fn map<J, D, G, S>(
        self,
        key: impl Fn(K) -> J,
        counts: impl FnOnce(C) -> D,
        example: impl Fn(u8) -> Option<u8>,
        flows: impl FnOnce(F) -> G,
        replies: impl FnOnce(R) -> S,
    ) -> Wire<J, D, G, S> {
        Wire {
            corrected: self.corrected,
            service: self.service,
            lag: self.lag,
            phases: self.phases,
            by_class: self.by_class,
            counts: counts(self.counts),
            status: self.status,
            examples: self.examples.0.into_iter().filter_map(|(i, m)| Some((example(i)?, m))).collect(),
            hit: self.hit,
            miss: self.miss,
            backends: self.backends.map(&key),
            whole: self.whole,
            names: self.names.map(&key),
            methods: self.methods.map(&key),
            timeline: self.timeline,
            samples: self.samples,
            flows: flows(self.flows),
            replies: replies(self.replies),
        }
    }
}

/// The serialised form: histograms in HdrHistogram's compressed V2 encoding, status codes
/// sparse. Used by the results file; `K` is how a key is written, `C` the counters' layout,
/// `F` the flows and `R` the server replies ([`KeyedWire`], [`Counts`] and two lists of
/// keys; in files of version 3 `KeyedWireV3`, `CountsV3` and nothing twice, `()`,
/// which postcard writes as no bytes; in version 4 `KeyedWireV4`, [`Counts`] and nothing
/// twice; in version 5 no replies).
///
/// Every list holds no more than a recorder does, refused from its length before it is
/// decoded ([`Bounded`]): an entry decodes to many times its bytes (an empty key of 11
/// bytes to 150).
#[derive(Serialize, Deserialize)]
pub(crate) struct Wire<K = KeyedWire, C = Counts, F = Keys<FlowLimit>, R = Keys<ReplyLimit>> {
    pub(super) corrected: Vec<u8>,
    pub(super) service: Vec<u8>,
    pub(super) lag: Vec<u8>,
    pub(super) phases: Bounded<Vec<u8>, PhaseLimit>,
    pub(super) by_class: Bounded<Vec<u8>, ClassLimit>,
    pub(super) counts: C,
    pub(super) status: Bounded<(u16, u64), StatusLimit>,
    pub(super) examples: Bounded<(u8, String), ExampleLimit>,
    pub(super) hit: Option<Bounded<Vec<u8>, SplitLimit>>,
    pub(super) miss: Option<Bounded<Vec<u8>, SplitLimit>>,
    pub(super) backends: Bounded<K, BackendLimit>,
    pub(super) whole: Option<Vec<u8>>,
    pub(super) names: Bounded<K, NameLimit>,
    pub(super) methods: Bounded<K, MethodLimit>,
    pub(super) timeline: Bounded<Tick, TickLimit>,
    pub(super) samples: Bounded<RequestPoint, SampleLimit>,
    pub(super) flows: F,
    pub(super) replies: R,
}

limit!(PhaseLimit = PHASE_COUNT, "phase histograms");
limit!(ClassLimit = CLASS_COUNT, "status class histograms");
limit!(SplitLimit = PHASE_COUNT + 1, "histograms of a cache split");
limit!(StatusLimit = STATUS_SLOTS, "status codes");
limit!(ExampleLimit = ERROR_KIND_COUNT, "error examples");
limit!(BackendLimit = MAX_KEYS, "backends");
limit!(NameLimit = MAX_KEYS, "request names");
limit!(MethodLimit = MAX_KEYS, "methods");
limit!(FlowLimit = MAX_KEYS, "scenario groups");
limit!(ReplyLimit = MAX_KEYS, "server reply classes");
limit!(TickLimit = MAX_INTERVAL_TICKS, "timeline ticks");
limit!(KeyTickLimit = MAX_INTERVAL_TICKS, "ticks of a key's timeline");
limit!(SampleLimit = MAX_INTERVAL_SAMPLES, "request samples");

fn encode_set(set: &PhaseSet) -> Bounded<Vec<u8>, SplitLimit> {
    std::iter::once(&set.corrected).chain(&set.phases).map(encode).collect()
}

fn decode_set(bytes: &[Vec<u8>]) -> Result<PhaseSet, String> {
    if bytes.len() != PHASE_COUNT + 1 {
        return Err(format!("a cache split holds {} histograms, not {}", bytes.len(), PHASE_COUNT + 1));
    }
    let phases: Vec<Histogram<u64>> = bytes[1..].iter().map(|b| decode(b)).collect::<Result<_, _>>()?;
    let phases = phases.try_into().expect("PHASE_COUNT histograms, checked above");
    Ok(PhaseSet { corrected: decode(&bytes[0])?, phases })
}

pub(super) fn encode(h: &Histogram<u64>) -> Vec<u8> {
    use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
    let mut out = Vec::new();
    V2DeflateSerializer::new().serialize(h, &mut out).expect("serialising into memory cannot fail");
    out
}

/// HdrHistogram's V2 encoding: a cookie, then the payload's length, a normalising offset,
/// the significant digits, the lowest and highest trackable values and an integer-to-double
/// ratio (40 bytes in all, big-endian), then the counts. The deflate form is a cookie, the
/// compressed length and the zlib stream of the V2 encoding.
pub(super) const V2_COOKIE: u32 = 0x1c84_9313;
pub(super) const V2_DEFLATE_COOKIE: u32 = 0x1c84_9314;
const V2_HEADER: usize = 40;

/// A histogram of a results file. Bounded whatever the file says: hdrhistogram's own
/// deflate decoder allocates the payload length the header declares (a 5.9 KB file made
/// it allocate 4 GiB) and a histogram as wide as its declared bounds. So the stream is
/// inflated here to at most [`MAX_HISTOGRAM_BYTES`], the declared length must be what is
/// there, the bounds at most [`MAX_HISTOGRAM_COUNTERS`] counters; only then does
/// hdrhistogram read the plain V2 form.
pub(super) fn decode(bytes: &[u8]) -> Result<Histogram<u64>, String> {
    let plain = inflate(bytes)?;
    check_v2_header(&plain)?;
    let mut h: Histogram<u64> = hdrhistogram::serialization::Deserializer::new()
        .deserialize(&mut &plain[..])
        .map_err(|e| format!("bad histogram: {e:?}"))?;
    // Deserialised histograms carry the writer's bounds; re-home them into ours so that
    // additions never fail.
    if h.high() != HIGHEST_US || h.sigfig() != SIGNIFICANT_DIGITS {
        let mut ours = new_histogram();
        ours.add(&h).map_err(|e| format!("histogram out of range: {e:?}"))?;
        h = ours;
    }
    Ok(h)
}

/// The plain V2 encoding of a histogram: inflated, at most [`MAX_HISTOGRAM_BYTES`].
fn inflate(bytes: &[u8]) -> Result<std::borrow::Cow<'_, [u8]>, String> {
    use std::io::Read;
    let word = |at: usize| bytes.get(at..at + 4).map(|b| u32::from_be_bytes(b.try_into().expect("4 bytes")));
    match word(0) {
        Some(V2_COOKIE) => Ok(std::borrow::Cow::Borrowed(bytes)),
        Some(V2_DEFLATE_COOKIE) => {
            let len = word(4).ok_or("bad histogram: cut off")? as usize;
            let stream = &bytes[8..bytes.len().min(8usize.saturating_add(len))];
            let mut plain = Vec::new();
            flate2::read::ZlibDecoder::new(stream)
                .take(MAX_HISTOGRAM_BYTES as u64 + 1)
                .read_to_end(&mut plain)
                .map_err(|e| format!("bad histogram: {e}"))?;
            if plain.len() > MAX_HISTOGRAM_BYTES {
                return Err(format!(
                    "bad histogram: inflates past the {} limit",
                    fmt_limit(MAX_HISTOGRAM_BYTES as u64)
                ));
            }
            Ok(std::borrow::Cow::Owned(plain))
        }
        _ => Err("bad histogram: not an HdrHistogram V2 encoding".into()),
    }
}

/// The header of a plain V2 histogram promises no more than is there: its payload length
/// at most the bytes that follow, its bounds at most [`MAX_HISTOGRAM_COUNTERS`] counters.
fn check_v2_header(plain: &[u8]) -> Result<(), String> {
    let header = plain.get(..V2_HEADER).ok_or("bad histogram: cut off inside its header")?;
    let u32_at = |at: usize| u32::from_be_bytes(header[at..at + 4].try_into().expect("4 bytes"));
    let u64_at = |at: usize| u64::from_be_bytes(header[at..at + 8].try_into().expect("8 bytes"));
    let (len, digits, low, high) = (u32_at(4) as usize, u32_at(12), u64_at(16), u64_at(24));
    if u32_at(0) != V2_COOKIE || len > plain.len() - V2_HEADER {
        return Err(format!("bad histogram: declares {len} bytes of counts, holds {}", plain.len() - V2_HEADER));
    }
    match counters(low, high, digits) {
        Some(n) if n <= MAX_HISTOGRAM_COUNTERS => Ok(()),
        _ => Err(format!("bad histogram: bounds {low}..{high} at {digits} digits are out of range")),
    }
}

/// How many counters HdrHistogram allocates for these bounds (as its `new_with_bounds`
/// computes them), or `None` for bounds it refuses.
pub(super) fn counters(low: u64, high: u64, digits: u32) -> Option<u64> {
    if low == 0 || digits > 5 || high / 2 < low {
        return None;
    }
    let largest = 2 * 10u64.pow(digits);
    let unit_magnitude = 63 - low.leading_zeros();
    let sub_bucket_magnitude = 64 - (largest - 1).leading_zeros();
    if unit_magnitude + sub_bucket_magnitude > 63 {
        return None;
    }
    // Buckets to cover `high`, each twice as wide as the one before.
    let mut untrackable = 1u64 << (sub_bucket_magnitude + unit_magnitude);
    let mut buckets = 1u64;
    while untrackable <= high {
        if untrackable > u64::MAX / 2 {
            buckets += 1;
            break;
        }
        untrackable <<= 1;
        buckets += 1;
    }
    Some((buckets + 1) << (sub_bucket_magnitude - 1))
}

impl Recorder {
    /// The serialised form.
    pub(crate) fn wire(&self) -> Wire {
        Wire {
            corrected: encode(&self.corrected),
            service: encode(&self.service),
            lag: encode(&self.lag),
            phases: self.phases.iter().map(encode).collect(),
            by_class: self.by_class.iter().map(encode).collect(),
            counts: self.counts.clone(),
            status: self.status_counts().into_iter().collect(),
            examples: self
                .examples
                .iter()
                .enumerate()
                .filter_map(|(i, e)| e.as_ref().map(|m| (i as u8, m.clone())))
                .collect(),
            hit: self.hit.as_deref().map(encode_set),
            miss: self.miss.as_deref().map(encode_set),
            backends: self.backends.encode(),
            whole: self.whole.as_deref().map(encode),
            names: self.names.encode(),
            methods: self.methods.encode(),
            timeline: self.timeline.written(),
            // No more than a reader takes (see `MAX_INTERVAL_SAMPLES`).
            samples: self.samples.iter().take(MAX_INTERVAL_SAMPLES).copied().collect(),
            flows: self.flows.encode(),
            replies: self.replies.encode(),
        }
    }
}

impl Serialize for Recorder {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.wire().serialize(s)
    }
}

impl<'de> Deserialize<'de> for Recorder {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        from_wire(Wire::deserialize(d)?).map_err(refuse)
    }
}

/// `N` histograms: `v`'s first ones, then empty ones for the slots `v` has none for.
fn filled<const N: usize>(v: Vec<Histogram<u64>>) -> [Histogram<u64>; N] {
    let mut v = v.into_iter();
    std::array::from_fn(|_| v.next().unwrap_or_else(new_histogram))
}

/// A recorder from its serialised form.
pub(crate) fn from_wire(w: Wire) -> Result<Recorder, String> {
    let hist = |b: &[u8]| decode(b);
    // Each histogram as decoded, and an empty one for a slot the file has none for. Built in
    // place, not over `Recorder::new()`'s: its dozen empty histograms (2 MiB zeroed, then
    // dropped) were a tenth of the page faults of reading a results file back.
    let array = |v: &[Vec<u8>]| -> Result<Vec<Histogram<u64>>, String> { v.iter().map(|b| hist(b)).collect() };
    let mut r = Recorder {
        corrected: hist(&w.corrected)?,
        service: hist(&w.service)?,
        lag: hist(&w.lag)?,
        phases: filled(array(&w.phases.0)?),
        by_class: filled(array(&w.by_class.0)?),
        counts: w.counts,
        hit: w.hit.map(|set| decode_set(&set.0)).transpose()?.map(Box::new),
        miss: w.miss.map(|set| decode_set(&set.0)).transpose()?.map(Box::new),
        backends: Keyed::decode(w.backends, true)?,
        names: Keyed::decode(w.names, false)?,
        methods: Keyed::decode(w.methods, false)?,
        flows: Keyed::decode(w.flows, true)?,
        replies: Keyed::decode(w.replies, false)?,
        whole: w.whole.as_deref().map(hist).transpose()?.map(Box::new),
        timeline: Timeline(w.timeline.0),
        samples: w.samples.0,
        exemplars: Vec::new(),
        status: Box::new([0; STATUS_SLOTS]),
        examples: Default::default(),
    };
    for (code, n) in w.status.0 {
        r.status[status_slot(code)] += n;
    }
    for (i, m) in w.examples.0 {
        if let Some(slot) = r.examples.get_mut(usize::from(i)) {
            *slot = Some(m);
        }
    }
    Ok(r)
}
