//! HTTP/2 frames and HPACK header blocks, as a connection handles them
//! (`barrage_engine::fuzz::http2` and `hpack`). Frames are built as a server would send
//! them to four streams in flight, then bent the ways h2spec bends them for a peer: frames
//! over the size limit or with a length that lies, stream ids that are 0, even, idle or the
//! largest, padding longer than its frame, SETTINGS out of range, windows pushed past
//! 2^31-1, CONTINUATION interleaved, flooded or missing, HPACK with huge indices, integers
//! and table-size updates; and byte-level changes after. Each input ends in a result or a
//! connection error, never a panic, within [`super::LIMIT`], with what the connection holds
//! bounded by the protocol's limits and what it queues in answer linear in the input.

use super::mutate::{maybe_mutated, reads};
use super::{config, within};
use barrage_engine::fuzz::frame::*;
use barrage_engine::fuzz::{hpack, http2, HTTP2_READ_BUF, MAX_FRAME, MAX_HEADER_LIST, TABLE_SIZE as TABLE};
use proptest::prelude::*;

/// The most a connection may hold for `input` bytes: its read buffer (and a frame),
/// a header block being gathered (a list and a frame), the decoded heads of its four
/// streams and of ignored ones (a list and the largest field after it: a table entry or a
/// frame's literal), each at most doubled by growth, the kept bodies (from the input) and
/// the HPACK table and memo.
fn bound(input: usize) -> usize {
    let head = MAX_HEADER_LIST + TABLE + 2 * MAX_FRAME;
    HTTP2_READ_BUF + MAX_FRAME + 2 * (MAX_HEADER_LIST + MAX_FRAME) + 5 * 2 * head + 2 * input + 16 * TABLE
}

/// One frame; `len` is the length its header declares when that is not its payload's.
#[derive(Clone, Debug)]
struct Frame {
    kind: u8,
    flags: u8,
    id: u32,
    payload: Vec<u8>,
    len: Option<u32>,
}

impl Frame {
    fn new(kind: u8, flags: u8, id: u32, payload: Vec<u8>) -> Frame {
        Frame { kind, flags, id, payload, len: None }
    }
}

fn encode(frames: &[Frame]) -> Vec<u8> {
    let mut out = Vec::new();
    for f in frames {
        let len = f.len.unwrap_or(f.payload.len() as u32);
        out.extend_from_slice(&len.to_be_bytes()[1..]);
        out.extend_from_slice(&[f.kind, f.flags]);
        out.extend_from_slice(&f.id.to_be_bytes());
        out.extend_from_slice(&f.payload);
    }
    out
}

/// Header blocks of valid responses: `:status` indexed or literal, a 100 Continue, nginx's
/// Huffman-coded `server` indexed incrementally and then used, table-size updates down and
/// up, RFC 7541 C.5 and C.6 responses (the later ones use the table the first fills).
const BLOCKS: &[&[u8]] = &[
    &[0x88],
    &[0x08, 0x03, b'9', b'9', b'9'],
    &[0x08, 0x03, b'1', b'0', b'0'],
    &[0x88, 0x76, 0x84, 0xaa, 0x63, 0x55, 0xe7, 0xbe],
    &[0x20, 0x3f, 0xe1, 0x1f, 0x88],
    b"\x48\x03302\x58\x07private\x61\x1dMon, 21 Oct 2013 20:13:21 GMT\x6e\x17https://www.example.com",
    b"\x48\x03307\xc1\xc0\xbf",
    b"\x88\xc1\x61\x96\xd0\x7a\xbe\x94\x10\x54\xd4\x44\xa8\x20\x05\x95\x04\x0b\x81\x66\xe0\x84\xa6\x2d\x1b\xff\xc0\x5a\x83\x9b\xd9\xab",
];

/// Hostile header blocks: indices past every table, integers over 32 bits, table-size
/// updates over ours and after a field, Huffman with bad padding or EOS, strings past the
/// block's end.
const HOSTILE_BLOCKS: &[&[u8]] = &[
    &[0x20, 0x88, 0x3f, 0xe1, 0x1f],
    &[0x3f, 0xe1, 0x1f, 0x88, 0x40, 0x01, b'a', 0x7f, 0x7f],
    &[0x88, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f],
    &[0x88, 0xfe, 0x80, 0x80, 0x80, 0x08],
    &[0x88, 0x00, 0x82, 0x1f, 0xff, 0x00],
    &[0x88, 0x00, 0x84, 0xff, 0xff, 0xff, 0xff, 0x00],
    &[0x88, 0x00, 0x7f, 0x80, 0x80, 0x04, b'x'],
    &[0x3f, 0xff, 0xff, 0xff, 0xff, 0x0f],
];

/// A header block: mostly a valid one, changed now and then; or a hostile one.
fn block() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![3 => prop::sample::select(BLOCKS), 1 => prop::sample::select(HOSTILE_BLOCKS)]
        .prop_flat_map(|b| maybe_mutated(b.to_vec(), 2))
}

/// Streams 1, 3, 5 and 7 are in flight; 0, an even (server-initiated) one, an idle one and
/// the largest are not.
fn stream() -> impl Strategy<Value = u32> {
    prop_oneof![8 => prop::sample::select(&[1u32, 3, 5, 7][..]), 1 => prop::sample::select(&[0u32, 2, 9, 0x7fff_ffff, 0x8000_0001][..])]
}

/// A 32-bit value at an edge of a setting or a window: 0, small, the frame sizes, 2^31-1
/// and past it.
fn edge() -> impl Strategy<Value = u32> {
    prop_oneof![
        3 => prop::sample::select(&[0u32, 1, 2, 100, 16_383, 16_384, 65_535, 65_536, 16_777_215, 16_777_216, 0x7fff_ffff, 0x8000_0000, u32::MAX][..]),
        1 => any::<u32>(),
    ]
}

/// A payload padded as PADDED says: a pad length, the payload, that much padding; or a
/// pad length longer than the frame.
fn padded(payload: Vec<u8>, pad: u8, honest: bool) -> Vec<u8> {
    let mut p = vec![pad];
    p.extend(payload);
    if honest {
        p.extend(std::iter::repeat_n(0, usize::from(pad)));
    }
    p
}

/// A response head: HEADERS (padded, with priority, ending the stream or not), or HEADERS
/// and CONTINUATION frames carrying the block in pieces.
fn head() -> impl Strategy<Value = Vec<Frame>> {
    (stream(), block(), any::<bool>(), any::<bool>(), any::<bool>(), 0u8..4, 1usize..4, any::<bool>()).prop_map(
        |(id, block, end, pad, priority, pad_len, pieces, honest)| {
            let mut flags = if end { END_STREAM } else { 0 };
            let size = block.len().div_ceil(pieces).max(1);
            let mut chunks: Vec<Vec<u8>> = block.chunks(size).map(<[u8]>::to_vec).collect();
            if chunks.is_empty() {
                chunks.push(Vec::new());
            }
            let mut first = chunks.remove(0);
            if priority {
                flags |= PRIORITY_FLAG;
                first.splice(0..0, [0, 0, 0, 3, 16]);
            }
            if pad {
                flags |= PADDED;
                first = padded(first, pad_len, honest);
            }
            if chunks.is_empty() {
                flags |= END_HEADERS;
            }
            let mut frames = vec![Frame::new(HEADERS, flags, id, first)];
            let last = chunks.len();
            for (i, c) in chunks.into_iter().enumerate() {
                frames.push(Frame::new(CONTINUATION, if i + 1 == last { END_HEADERS } else { 0 }, id, c));
            }
            frames
        },
    )
}

/// One frame a server may send, valid or bent.
fn frame() -> impl Strategy<Value = Vec<Frame>> {
    let data = (
        stream(),
        prop::collection::vec(any::<u8>(), 0..64),
        any::<bool>(),
        prop::option::of((any::<u8>(), any::<bool>())),
    )
        .prop_map(|(id, body, end, pad)| {
            let (flags, payload) = match pad {
                Some((n, honest)) => (PADDED, padded(body, n % 8, honest)),
                None => (0, body),
            };
            vec![Frame::new(DATA, flags | if end { END_STREAM } else { 0 }, id, payload)]
        });
    let setting = (prop::sample::select(&[1u16, 2, 3, 4, 5, 6, 0x99][..]), edge());
    let settings = (prop::collection::vec(setting, 0..4), prop::bool::weighted(0.1)).prop_map(|(params, ack)| {
        let payload = params.iter().flat_map(|(k, v)| [&k.to_be_bytes()[..], &v.to_be_bytes()[..]].concat()).collect();
        vec![Frame::new(SETTINGS, u8::from(ack), 0, payload)]
    });
    let window = (prop_oneof![Just(0u32), stream()], edge())
        .prop_map(|(id, inc)| vec![Frame::new(WINDOW_UPDATE, 0, id, inc.to_be_bytes().to_vec())]);
    let rst =
        (stream(), edge()).prop_map(|(id, code)| vec![Frame::new(RST_STREAM, 0, id, code.to_be_bytes().to_vec())]);
    let goaway = (edge(), edge())
        .prop_map(|(last, code)| vec![Frame::new(GOAWAY, 0, 0, [last.to_be_bytes(), code.to_be_bytes()].concat())]);
    let ping = (any::<u64>(), any::<bool>())
        .prop_map(|(p, ack)| vec![Frame::new(PING, u8::from(ack), 0, p.to_be_bytes().to_vec())]);
    let other = (
        prop::sample::select(&[PRIORITY, PUSH_PROMISE, CONTINUATION, 0x0a, 0xfa][..]),
        stream(),
        prop::collection::vec(any::<u8>(), 0..8),
    )
        .prop_map(|(kind, id, payload)| vec![Frame::new(kind, END_HEADERS, id, payload)]);
    prop_oneof![4 => head(), 4 => data, 2 => settings, 2 => window, 1 => rst, 1 => goaway, 1 => ping, 1 => other]
}

/// A frame whose header lies about its length: 0, one more than it has, the largest we
/// take, one past it, the largest there is.
fn lie(mut frames: Vec<Frame>, which: prop::sample::Index, len: u32) -> Vec<Frame> {
    if !frames.is_empty() {
        let i = which.index(frames.len());
        frames[i].len = Some(if len == 1 { frames[i].payload.len() as u32 + 1 } else { len });
    }
    frames
}

/// What a server sends after its preface: usually its SETTINGS first, then frames; a
/// frame's length now and then a lie; a flood of one frame now and then; bytes changed.
fn frames() -> impl Strategy<Value = Vec<u8>> {
    let sequence = (any::<bool>(), prop::collection::vec(frame(), 1..10)).prop_map(|(settings, frames)| {
        let first = settings.then(|| Frame::new(SETTINGS, 0, 0, Vec::new()));
        first.into_iter().chain(frames.into_iter().flatten()).collect::<Vec<_>>()
    });
    let lied = (
        sequence,
        any::<prop::sample::Index>(),
        prop::option::weighted(0.1, prop::sample::select(&[0u32, 1, 16_384, 16_385, 0xff_ffff][..])),
    )
        .prop_map(|(frames, which, len)| match len {
            Some(len) => lie(frames, which, len),
            None => frames,
        });
    let flood = (prop::sample::select(&[CONTINUATION, PING, SETTINGS, DATA, HEADERS][..]), 100usize..2000).prop_map(
        |(kind, n)| {
            let mut frames = vec![Frame::new(SETTINGS, 0, 0, Vec::new()), Frame::new(HEADERS, 0, 1, vec![0x88])];
            let payload = if kind == PING { vec![0; 8] } else { Vec::new() };
            frames.extend(std::iter::repeat_n(
                Frame::new(kind, 0, if kind == PING || kind == SETTINGS { 0 } else { 1 }, payload),
                n,
            ));
            frames
        },
    );
    prop_oneof![
        8 => lied.prop_flat_map(|f| maybe_mutated(encode(&f), 1)),
        1 => flood.prop_map(|f| encode(&f)),
        1 => prop::collection::vec(any::<u8>(), 0..256),
    ]
}

/// Reads `bytes` whole and in `reads`: the same outcome, held to the bounds.
pub(super) fn check_in(bytes: &[u8], reads: &[usize]) {
    within(&format!("{} bytes: {:?}", bytes.len(), &bytes[..bytes.len().min(96)]), || {
        let whole = http2(bytes, &[]);
        let split = http2(bytes, reads);
        for r in [&whole, &split] {
            assert!(r.peak <= bound(bytes.len()), "held {} bytes for {}", r.peak, bytes.len());
            assert!(r.out <= 2 * bytes.len() + 256, "queued {} bytes in answer to {}", r.out, bytes.len());
            for s in &r.streams {
                assert!(s.body <= bytes.len(), "{s:?}");
            }
        }
        assert_eq!((&split.error, &split.streams), (&whole.error, &whole.streams), "split {reads:?}");
    });
}

/// The corpus's inputs: whole, byte by byte and in 7-byte reads.
pub(super) fn check(bytes: &[u8]) {
    check_in(bytes, &vec![1; bytes.len()]);
    check_in(bytes, &[7; 4096]);
}

/// A header block decoded twice on one table (the second time against what the first
/// added): each a list or an error, the table's accounting kept (checked in the engine).
pub(super) fn check_block(block: &[u8]) {
    check_blocks(&[block, block]);
}

fn check_blocks(blocks: &[&[u8]]) {
    within(&blocks, || {
        let limit = 64 * 1024;
        let r = hpack(blocks, limit);
        let input: usize = blocks.iter().map(|b| b.len()).sum();
        // A list stops at the first field past the limit: a table entry, or a literal of
        // the block (Huffman makes 8 bits of at most 5); doubled by growth, with the table.
        let fields = 2 * (limit + TABLE + 2 * input);
        assert!(r.peak <= fields + 16 * TABLE, "held {} bytes for {input}", r.peak);
        for list in r.blocks.iter().flatten() {
            let size: usize = list.iter().map(|(n, v)| n.len() + v.len() + 32).sum();
            assert!(size <= limit, "a list of {size} bytes returned, over {limit}");
        }
    });
}

proptest! {
    #![proptest_config(config(2000))]

    #[test]
    fn frames_end_in_a_result_or_a_connection_error_in_bounds(bytes in frames(), reads in reads()) {
        check_in(&bytes, &reads);
    }

    #[test]
    fn header_blocks_decode_or_fail_and_the_table_keeps_count(blocks in prop::collection::vec(block(), 1..5)) {
        let blocks: Vec<&[u8]> = blocks.iter().map(Vec::as_slice).collect();
        check_blocks(&blocks);
    }
}
