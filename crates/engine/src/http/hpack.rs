//! HPACK (RFC 7541), as HTTP/2's client needs it: a decoder of response header blocks into
//! one reused buffer, and the few encodings a request's pre-encoded block uses.
//!
//! Our own rather than a crate's: the maintained decoders (the `hpack` crate and its forks
//! `fluke-hpack`/`loona-hpack`, `httlib-hpack`) hand each header over as a new allocation
//! (a `Vec` per Huffman-coded string, per dynamic-table entry) and decode Huffman a bit at a
//! time; nginx sends five headers with incremental indexing on every response, so that is
//! per-request work. Here a header block decodes into the stream's reused [`Fields`], the
//! dynamic table is one byte ring with size accounting (no allocation per entry once warm),
//! and Huffman decodes by a 10-bit lookup table built at start-up from the code lengths of
//! RFC 7541 Appendix B (the code is canonical: the lengths alone define it), falling back to
//! a canonical search per length for the rare codes longer than 10 bits.
//!
//! Every size a server controls is bounded: the dynamic table by our
//! SETTINGS_HEADER_TABLE_SIZE (the default, 4,096), the decoded list by the caller's limit,
//! integers to 32 bits.

use std::collections::VecDeque;
use std::sync::OnceLock;

/// Our SETTINGS_HEADER_TABLE_SIZE: the default, never changed, so never sent.
pub const TABLE_SIZE: usize = 4096;

/// A header block the decoder could not read: the server broke HPACK (COMPRESSION_ERROR),
/// or the list went over the caller's bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Error {
    /// Not valid HPACK; what was wrong.
    Compression(&'static str),
    /// The decoded list is over the bound.
    TooLarge,
}

/// Decoded header fields: names and values back to back in one buffer, reused from one
/// block to the next. Pseudo-headers (`:status`) are kept as fields too.
#[derive(Default, Debug)]
pub(crate) struct Fields {
    bytes: Vec<u8>,
    /// Each field: where its name starts, its value starts, its value ends.
    spans: Vec<[u32; 3]>,
    /// Bit n: a name of n bytes (63: longer), as [`barrage_plan::HeaderLines`] notes them,
    /// so that a lookup of a header no field has costs a test.
    lengths: u64,
    /// The list's size as RFC 7541 counts it (bytes of names and values, 32 per field).
    size: usize,
}

impl Fields {
    pub(crate) fn clear(&mut self) {
        self.bytes.clear();
        self.spans.clear();
        self.lengths = 0;
        self.size = 0;
    }

    /// Every field, name and value.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        self.spans.iter().map(|&[n, v, e]| (&self.bytes[n as usize..v as usize], &self.bytes[v as usize..e as usize]))
    }

    fn bit(len: usize) -> u64 {
        1 << len.min(63)
    }

    /// Ends the field whose name started at `name` and value at `value`.
    fn push(&mut self, name: usize, value: usize, limit: usize) -> Result<(), Error> {
        let end = self.bytes.len();
        self.size += end - name + 32;
        if self.size > limit {
            return Err(Error::TooLarge);
        }
        self.spans.push([name as u32, value as u32, end as u32]);
        self.lengths |= Self::bit(value - name);
        Ok(())
    }

    /// The bytes it holds.
    #[cfg(any(test, feature = "fuzz"))]
    pub(crate) fn capacity(&self) -> usize {
        self.bytes.capacity() + self.spans.capacity() * 12
    }

    /// The value of the first field named `name` (lowercase, as HTTP/2 sends names).
    pub(crate) fn get(&self, name: &[u8]) -> Option<&[u8]> {
        if self.lengths & Self::bit(name.len()) == 0 {
            return None;
        }
        self.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v)
    }
}

impl barrage_plan::HeaderView for Fields {
    fn any_value(&self, name: &http::HeaderName, each: &mut dyn FnMut(&[u8]) -> bool) -> bool {
        let name = name.as_str().as_bytes();
        if self.lengths & Self::bit(name.len()) == 0 {
            return false;
        }
        self.iter().filter(|(n, _)| n.eq_ignore_ascii_case(name)).any(|(_, v)| each(v))
    }

    fn value(&self, name: &http::HeaderName) -> Option<&[u8]> {
        self.get(name.as_str().as_bytes())
    }
}

/// The decoding side of one connection: its dynamic table.
pub(crate) struct Decoder {
    /// Entries' names and values back to back, oldest first.
    ring: VecDeque<u8>,
    /// Entries, oldest first: where each starts (counted from the first byte ever pushed),
    /// its name's and value's lengths.
    entries: VecDeque<(usize, u32, u32)>,
    /// Bytes ever dropped off the ring's front.
    dropped: usize,
    /// The table's size as RFC 7541 counts it, and its current maximum.
    size: usize,
    max: usize,
    /// The last Huffman string decoded at each place of a block (the n-th field's name or
    /// value), coded and decoded: a server sends the same values response after response
    /// (nginx: `server`, `content-type`, `last-modified`, `etag`… Huffman-coded literals
    /// every time; `date` changes once a second), and comparing the coded bytes costs a
    /// fraction of decoding them again. Exact: a string is reused only when its coded bytes
    /// are the same.
    memo: Vec<(Vec<u8>, Vec<u8>)>,
}

/// Places of a block whose last Huffman string is kept ([`Decoder::memo`]), and the longest
/// string kept: at most 32 × 64 coded bytes and their decoding a connection.
const MEMO_PLACES: usize = 32;
const MEMO_LEN: usize = 64;

impl Default for Decoder {
    fn default() -> Self {
        Decoder {
            ring: VecDeque::new(),
            entries: VecDeque::new(),
            dropped: 0,
            size: 0,
            max: TABLE_SIZE,
            memo: Vec::new(),
        }
    }
}

impl Decoder {
    /// Decodes `block` into `out` (cleared first); the decoded list may be at most `limit`
    /// bytes as RFC 7541 counts it.
    pub(crate) fn decode(&mut self, mut block: &[u8], out: &mut Fields, limit: usize) -> Result<(), Error> {
        out.clear();
        let mut fields_seen = false;
        // The place of the next string in the block, for the memo of Huffman strings.
        let mut place = 0;
        while let Some(&first) = block.first() {
            if first & 0x80 != 0 {
                // Indexed field.
                let index = integer(&mut block, 7)?;
                let name = out.bytes.len();
                let value = self.copy_entry(index, out, true)?;
                out.push(name, value, limit)?;
            } else if first & 0xe0 == 0x20 {
                // A dynamic table size update: only at the block's start.
                if fields_seen {
                    return Err(Error::Compression("a table size update after a field"));
                }
                let max = integer(&mut block, 5)?;
                if max > TABLE_SIZE {
                    return Err(Error::Compression("a table size over our SETTINGS_HEADER_TABLE_SIZE"));
                }
                self.max = max;
                self.evict(0);
                continue;
            } else {
                // A literal: with incremental indexing (01), without (0000) or never (0001).
                let (prefix, indexing) = if first & 0xc0 == 0x40 { (6, true) } else { (4, false) };
                let index = integer(&mut block, prefix)?;
                let name = out.bytes.len();
                if index == 0 {
                    self.string(&mut block, &mut out.bytes, place)?;
                } else {
                    self.copy_entry(index, out, false)?;
                }
                let value = out.bytes.len();
                self.string(&mut block, &mut out.bytes, place + 1)?;
                place += 2;
                if indexing {
                    self.insert(&out.bytes[name..value], &out.bytes[value..]);
                }
                out.push(name, value, limit)?;
            }
            fields_seen = true;
        }
        Ok(())
    }

    /// Reads a string literal (RFC 7541 5.2), the block's `place`-th, onto the end of
    /// `out`.
    fn string(&mut self, block: &mut &[u8], out: &mut Vec<u8>, place: usize) -> Result<(), Error> {
        let huffman = block.first().is_some_and(|b| b & 0x80 != 0);
        let len = integer(block, 7)?;
        if len > block.len() {
            return Err(Error::Compression("a string past the block's end"));
        }
        let (s, rest) = block.split_at(len);
        *block = rest;
        if !huffman {
            out.extend_from_slice(s);
            return Ok(());
        }
        if place >= MEMO_PLACES || s.len() > MEMO_LEN {
            return huffman_decode(s, out);
        }
        if self.memo.len() <= place {
            self.memo.resize_with(place + 1, Default::default);
        }
        let (coded, decoded) = &mut self.memo[place];
        if coded[..] == *s {
            out.extend_from_slice(decoded);
            return Ok(());
        }
        let at = out.len();
        huffman_decode(s, out)?;
        coded.clear();
        coded.extend_from_slice(s);
        decoded.clear();
        decoded.extend_from_slice(&out[at..]);
        Ok(())
    }

    /// The bytes its table and memo hold.
    #[cfg(any(test, feature = "fuzz"))]
    pub(crate) fn held(&self) -> usize {
        let memo: usize = self.memo.iter().map(|(c, d)| c.capacity() + d.capacity()).sum();
        self.ring.capacity() + self.entries.capacity() * 16 + memo
    }

    /// Appends entry `index`'s name (and its value when `value`) to `out`; returns where
    /// the value starts.
    fn copy_entry(&self, index: usize, out: &mut Fields, value: bool) -> Result<usize, Error> {
        let bytes = &mut out.bytes;
        if index == 0 {
            return Err(Error::Compression("index 0"));
        }
        if let Some(&(name, val)) = STATIC.get(index - 1) {
            bytes.extend_from_slice(name.as_bytes());
            let at = bytes.len();
            if value {
                bytes.extend_from_slice(val.as_bytes());
            }
            return Ok(at);
        }
        let newest = index - STATIC.len() - 1;
        let Some(at) = self.entries.len().checked_sub(newest + 1) else {
            return Err(Error::Compression("an index past the dynamic table"));
        };
        let (start, name_len, value_len) = self.entries[at];
        let start = start - self.dropped;
        let (name_len, value_len) = (name_len as usize, value_len as usize);
        self.copy_ring(start, name_len, bytes);
        let at = bytes.len();
        if value {
            self.copy_ring(start + name_len, value_len, bytes);
        }
        Ok(at)
    }

    fn copy_ring(&self, start: usize, len: usize, out: &mut Vec<u8>) {
        let (a, b) = self.ring.as_slices();
        let end = start + len;
        if start < a.len() {
            out.extend_from_slice(&a[start..end.min(a.len())]);
        }
        if end > a.len() {
            out.extend_from_slice(&b[start.saturating_sub(a.len())..end - a.len()]);
        }
    }

    /// Adds an entry, evicting the oldest to make room (RFC 7541 4.4).
    fn insert(&mut self, name: &[u8], value: &[u8]) {
        let size = name.len() + value.len() + 32;
        if size > self.max {
            // An entry larger than the table empties it.
            self.evict(self.max);
            return;
        }
        self.evict(size);
        self.entries.push_back((self.dropped + self.ring.len(), name.len() as u32, value.len() as u32));
        self.ring.extend(name);
        self.ring.extend(value);
        self.size += size;
    }

    /// Evicts the oldest entries until `room` more fits.
    fn evict(&mut self, room: usize) {
        while self.size + room > self.max {
            let Some((_, name, value)) = self.entries.pop_front() else { break };
            let len = (name + value) as usize;
            self.ring.drain(..len);
            self.dropped += len;
            self.size -= len + 32;
        }
        if self.entries.is_empty() {
            // Keep the offsets small and the ring's start at its buffer's.
            self.ring.clear();
            self.dropped = 0;
            self.size = 0;
        }
    }
}

/// Reads an integer with an `n`-bit prefix (RFC 7541 5.1), up to 2^32.
fn integer(block: &mut &[u8], n: u32) -> Result<usize, Error> {
    let truncated = Error::Compression("a truncated integer");
    let (&first, mut rest) = block.split_first().ok_or(truncated)?;
    let max = (1u32 << n) - 1;
    let mut value = u64::from(first) & u64::from(max);
    if value == u64::from(max) {
        let mut shift = 0;
        loop {
            let (&b, more) = rest.split_first().ok_or(truncated)?;
            rest = more;
            value += u64::from(b & 0x7f) << shift;
            shift += 7;
            if b & 0x80 == 0 {
                break;
            }
            if shift > 28 {
                return Err(Error::Compression("an integer over 32 bits"));
            }
        }
        if value > u64::from(u32::MAX) {
            return Err(Error::Compression("an integer over 32 bits"));
        }
    }
    *block = rest;
    Ok(value as usize)
}

/// Appends the integer `value` with an `n`-bit prefix, the prefix's other bits `flags`.
pub(crate) fn put_integer(out: &mut Vec<u8>, flags: u8, n: u32, value: usize) {
    let max = (1usize << n) - 1;
    if value < max {
        out.push(flags | value as u8);
        return;
    }
    out.push(flags | max as u8);
    let mut rest = value - max;
    while rest >= 128 {
        out.push((rest % 128) as u8 | 0x80);
        rest /= 128;
    }
    out.push(rest as u8);
}

/// Appends a literal field without indexing: name `index` in the static table, or a
/// literal name when 0; the strings raw (Huffman saves a request a few bytes, but only the
/// server would read them faster).
pub(crate) fn put_literal(out: &mut Vec<u8>, index: usize, name: &[u8], value: &[u8]) {
    put_integer(out, 0, 4, index);
    if index == 0 {
        put_integer(out, 0, 7, name.len());
        out.extend_from_slice(name);
    }
    put_integer(out, 0, 7, value.len());
    out.extend_from_slice(value);
}

/// The static table's index of a field with exactly this name and value, or 0.
pub(crate) fn static_index(name: &str, value: &str) -> usize {
    STATIC.iter().position(|&(n, v)| n == name && v == value).map_or(0, |i| i + 1)
}

/// The static table's index of a name, or 0.
pub(crate) fn static_name(name: &str) -> usize {
    STATIC.iter().position(|&(n, _)| n == name).map_or(0, |i| i + 1)
}

/// A decoded header list: each field's name and value.
#[cfg(any(test, feature = "fuzz"))]
pub type HeaderList = Vec<(Vec<u8>, Vec<u8>)>;

/// What one HPACK decoder made of a connection's header blocks.
#[cfg(any(test, feature = "fuzz"))]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hpack {
    /// Each block's fields, or why it was refused.
    pub blocks: Vec<Result<HeaderList, String>>,
    /// The most bytes the table, its memo and the decoded list held.
    pub peak: usize,
}

/// Decodes `blocks` one after the other on one table, as a connection's header blocks are,
/// each into a list of at most `limit` bytes; after each, checks the table's accounting.
#[cfg(any(test, feature = "fuzz"))]
pub(crate) fn fuzz_blocks(blocks: &[&[u8]], limit: usize) -> Hpack {
    let (mut decoder, mut fields) = (Decoder::default(), Fields::default());
    let mut out = Hpack { blocks: Vec::new(), peak: 0 };
    for block in blocks {
        let decoded = decoder.decode(block, &mut fields, limit);
        out.blocks.push(decoded.map(|()| fields.iter().map(|(n, v)| (n.to_vec(), v.to_vec())).collect()).map_err(
            |e| match e {
                Error::Compression(what) => what.to_string(),
                Error::TooLarge => "over the limit".to_string(),
            },
        ));
        let entries: usize = decoder.entries.iter().map(|&(_, n, v)| (n + v) as usize).sum();
        assert_eq!(decoder.ring.len(), entries, "the ring holds the entries");
        assert_eq!(decoder.size, entries + 32 * decoder.entries.len(), "the table's size is its entries'");
        assert!(decoder.size <= decoder.max && decoder.max <= TABLE_SIZE, "the table within its maximum");
        out.peak = out.peak.max(decoder.held() + fields.capacity());
    }
    out
}

/// A block decoded on a fresh table, as text: for tests of what is encoded.
#[cfg(test)]
pub(crate) fn decode_list(block: &[u8]) -> Vec<(String, String)> {
    let mut fields = Fields::default();
    Decoder::default().decode(block, &mut fields, usize::MAX).expect("a valid block");
    fields
        .iter()
        .map(|(n, v)| (String::from_utf8_lossy(n).into_owned(), String::from_utf8_lossy(v).into_owned()))
        .collect()
}

// ---------------------------------------------------------------------------------------
// Huffman

/// Bits of the first lookup.
const FAST_BITS: u32 = 10;

struct Huffman {
    /// By the next FAST_BITS bits: the symbol and its code's length (0: a longer code).
    fast: Vec<(u16, u8)>,
    /// By code length: the first code of that length, how many there are, and where
    /// their symbols start in `sorted`.
    first: [u32; 31],
    count: [u32; 31],
    offset: [u32; 31],
    /// Symbols by (length, symbol): canonical order.
    sorted: Vec<u16>,
}

fn huffman() -> &'static Huffman {
    static TABLE: OnceLock<Huffman> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut count = [0u32; 31];
        for &len in CODE_LENGTHS.iter() {
            count[len as usize] += 1;
        }
        let (mut first, mut offset) = ([0u32; 31], [0u32; 31]);
        let (mut code, mut at) = (0u32, 0u32);
        for len in 1..31 {
            code = (code + count[len - 1]) << 1;
            first[len] = code;
            offset[len] = at;
            at += count[len];
        }
        let mut sorted: Vec<u16> = (0..CODE_LENGTHS.len() as u16).collect();
        sorted.sort_by_key(|&s| (CODE_LENGTHS[s as usize], s));
        let mut fast = vec![(0u16, 0u8); 1 << FAST_BITS];
        for (i, &sym) in sorted.iter().enumerate() {
            let len = u32::from(CODE_LENGTHS[sym as usize]);
            if len > FAST_BITS {
                break;
            }
            let code = first[len as usize] + (i as u32 - offset[len as usize]);
            let from = (code << (FAST_BITS - len)) as usize;
            for slot in &mut fast[from..from + (1 << (FAST_BITS - len))] {
                *slot = (sym, len as u8);
            }
        }
        Huffman { fast, first, count, offset, sorted }
    })
}

impl Huffman {
    /// The symbol whose code starts the 30 bits `top`, and the code's length.
    fn symbol(&self, top: u32) -> (u16, u32) {
        let (sym, len) = self.fast[(top >> (30 - FAST_BITS)) as usize];
        if len != 0 {
            return (sym, u32::from(len));
        }
        for len in FAST_BITS + 1..=30 {
            let code = top >> (30 - len);
            let i = code.wrapping_sub(self.first[len as usize]);
            if i < self.count[len as usize] {
                return (self.sorted[(self.offset[len as usize] + i) as usize], len);
            }
        }
        unreachable!("every 30 bits start with a code: EOS is 30 ones")
    }
}

/// Decodes the Huffman-coded `src` onto the end of `out` (RFC 7541 5.2: the padding is at
/// most 7 bits, all ones; EOS inside is an error).
fn huffman_decode(src: &[u8], out: &mut Vec<u8>) -> Result<(), Error> {
    let table = huffman();
    let (mut acc, mut bits, mut next) = (0u64, 0u32, 0usize);
    out.reserve(src.len() * 8 / 5);
    loop {
        while bits <= 56 && next < src.len() {
            acc = (acc << 8) | u64::from(src[next]);
            bits += 8;
            next += 1;
        }
        if bits == 0 {
            return Ok(());
        }
        // The next 30 bits, the missing ones taken as padding (ones).
        let top = if bits >= 30 {
            (acc >> (bits - 30)) as u32 & 0x3fff_ffff
        } else {
            ((acc << (30 - bits)) as u32 | ((1 << (30 - bits)) - 1)) & 0x3fff_ffff
        };
        let (sym, len) = table.symbol(top);
        if len > bits {
            // Only padding is left: fewer than 8 bits, all ones.
            let ones = (1u64 << bits) - 1;
            if bits >= 8 || acc & ones != ones {
                return Err(Error::Compression("bad Huffman padding"));
            }
            return Ok(());
        }
        if sym == 256 {
            return Err(Error::Compression("EOS in a Huffman string"));
        }
        out.push(sym as u8);
        bits -= len;
    }
}

/// The lengths of the codes of symbols 0 to 255 and EOS (256), from RFC 7541 Appendix B.
#[rustfmt::skip]
const CODE_LENGTHS: [u8; 257] = [
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, // 0
    28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28, // 16
    6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6,         // 32 ' '
    5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10,              // 48 '0'
    13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,                // 64 '@'
    7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6,             // 80 'P'
    15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5,                // 96 '`'
    6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28,            // 112 'p'
    20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23, // 128
    24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, // 144
    22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, // 160
    21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23, // 176
    26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, // 192
    19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27, // 208
    20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23, // 224
    26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, // 240
    30,                                                             // EOS
];

/// The static table, RFC 7541 Appendix A.
const STATIC: [(&str, &str); 61] = [
    (":authority", ""),
    (":method", "GET"),
    (":method", "POST"),
    (":path", "/"),
    (":path", "/index.html"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "200"),
    (":status", "204"),
    (":status", "206"),
    (":status", "304"),
    (":status", "400"),
    (":status", "404"),
    (":status", "500"),
    ("accept-charset", ""),
    ("accept-encoding", "gzip, deflate"),
    ("accept-language", ""),
    ("accept-ranges", ""),
    ("accept", ""),
    ("access-control-allow-origin", ""),
    ("age", ""),
    ("allow", ""),
    ("authorization", ""),
    ("cache-control", ""),
    ("content-disposition", ""),
    ("content-encoding", ""),
    ("content-language", ""),
    ("content-length", ""),
    ("content-location", ""),
    ("content-range", ""),
    ("content-type", ""),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("expect", ""),
    ("expires", ""),
    ("from", ""),
    ("host", ""),
    ("if-match", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("if-range", ""),
    ("if-unmodified-since", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("max-forwards", ""),
    ("proxy-authenticate", ""),
    ("proxy-authorization", ""),
    ("range", ""),
    ("referer", ""),
    ("refresh", ""),
    ("retry-after", ""),
    ("server", ""),
    ("set-cookie", ""),
    ("strict-transport-security", ""),
    ("transfer-encoding", ""),
    ("user-agent", ""),
    ("vary", ""),
    ("via", ""),
    ("www-authenticate", ""),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    fn list(f: &Fields) -> Vec<(String, String)> {
        f.iter()
            .map(|(n, v)| (String::from_utf8(n.to_vec()).unwrap(), String::from_utf8(v.to_vec()).unwrap()))
            .collect()
    }

    /// The table's entries, newest first, as RFC 7541's examples print them.
    fn table(d: &Decoder) -> Vec<(String, String)> {
        let mut out = Fields::default();
        (0..d.entries.len())
            .map(|i| {
                out.clear();
                let v = d.copy_entry(STATIC.len() + 1 + i, &mut out, true).unwrap();
                (
                    String::from_utf8(out.bytes[..v].to_vec()).unwrap(),
                    String::from_utf8(out.bytes[v..].to_vec()).unwrap(),
                )
            })
            .collect()
    }

    fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    }

    /// The code is complete (Kraft's sum is exactly 1) and canonical as the RFC prints it.
    #[test]
    fn huffman_codes_are_the_rfcs() {
        let sum: u64 = CODE_LENGTHS.iter().map(|&l| 1u64 << (30 - l)).sum();
        assert_eq!(sum, 1 << 30);
        let t = huffman();
        let code = |sym: u16| {
            let len = CODE_LENGTHS[sym as usize] as usize;
            let i = t.sorted[t.offset[len] as usize..].iter().position(|&s| s == sym).unwrap() as u32;
            (t.first[len] + i, len)
        };
        // A few of Appendix B's lines: '/' 0x18 [6], 'a' 0x3 [5], 0 0x1ff8 [13], 1 0x7fffd8
        // [23], 255 0x3ffffee [26], EOS 0x3fffffff [30].
        assert_eq!(code(b'/' as u16), (0x18, 6));
        assert_eq!(code(b'a' as u16), (0x3, 5));
        assert_eq!(code(0), (0x1ff8, 13));
        assert_eq!(code(1), (0x7fffd8, 23));
        assert_eq!(code(255), (0x3ffffee, 26));
        assert_eq!(code(256), (0x3fffffff, 30));
    }

    /// RFC 7541 C.3 (requests without Huffman) and C.4 (with): the same lists and tables.
    #[test]
    fn appendix_c3_c4_requests() {
        let expected = [
            (
                pairs(&[(":method", "GET"), (":scheme", "http"), (":path", "/"), (":authority", "www.example.com")]),
                pairs(&[(":authority", "www.example.com")]),
            ),
            (
                pairs(&[
                    (":method", "GET"),
                    (":scheme", "http"),
                    (":path", "/"),
                    (":authority", "www.example.com"),
                    ("cache-control", "no-cache"),
                ]),
                pairs(&[("cache-control", "no-cache"), (":authority", "www.example.com")]),
            ),
            (
                pairs(&[
                    (":method", "GET"),
                    (":scheme", "https"),
                    (":path", "/index.html"),
                    (":authority", "www.example.com"),
                    ("custom-key", "custom-value"),
                ]),
                pairs(&[
                    ("custom-key", "custom-value"),
                    ("cache-control", "no-cache"),
                    (":authority", "www.example.com"),
                ]),
            ),
        ];
        let plain = [
            "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
            "8286 84be 5808 6e6f 2d63 6163 6865",
            "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
        ];
        let huff = [
            "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
            "8286 84be 5886 a8eb 1064 9cbf",
            "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
        ];
        for blocks in [plain, huff] {
            let mut d = Decoder::default();
            let mut f = Fields::default();
            for (block, (fields, entries)) in blocks.iter().zip(&expected) {
                d.decode(&hex(block), &mut f, 1 << 20).unwrap();
                assert_eq!(&list(&f), fields);
                assert_eq!(&table(&d), entries);
            }
        }
    }

    /// RFC 7541 C.5 (responses without Huffman) and C.6 (with), a 256-byte table: entries
    /// evicted as the RFC says.
    #[test]
    fn appendix_c5_c6_responses_with_evictions() {
        let date1 = "Mon, 21 Oct 2013 20:13:21 GMT";
        let date2 = "Mon, 21 Oct 2013 20:13:22 GMT";
        let loc = "https://www.example.com";
        let cookie = "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1";
        let expected = [
            (
                pairs(&[(":status", "302"), ("cache-control", "private"), ("date", date1), ("location", loc)]),
                pairs(&[("location", loc), ("date", date1), ("cache-control", "private"), (":status", "302")]),
                222,
            ),
            (
                pairs(&[(":status", "307"), ("cache-control", "private"), ("date", date1), ("location", loc)]),
                pairs(&[(":status", "307"), ("location", loc), ("date", date1), ("cache-control", "private")]),
                222,
            ),
            (
                pairs(&[
                    (":status", "200"),
                    ("cache-control", "private"),
                    ("date", date2),
                    ("location", loc),
                    ("content-encoding", "gzip"),
                    ("set-cookie", cookie),
                ]),
                pairs(&[("set-cookie", cookie), ("content-encoding", "gzip"), ("date", date2)]),
                215,
            ),
        ];
        let plain = [
            "4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 \
             3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
            "4803 3330 37c1 c0bf",
            "88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d 54c0 5a04 677a 6970 \
             7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049 5541 5851 5745 4f49 553b 206d 6178 2d61 \
             6765 3d33 3630 303b 2076 6572 7369 6f6e 3d31",
        ];
        let huff = [
            "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 2d1b ff6e 919d 29ad \
             1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
            "4883 640e ffc1 c0bf",
            "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab 77ad 94e7 821d d7f2 \
             e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07",
        ];
        for blocks in [plain, huff] {
            let mut d = Decoder { max: 256, ..Decoder::default() };
            let mut f = Fields::default();
            for (block, (fields, entries, size)) in blocks.iter().zip(&expected) {
                d.decode(&hex(block), &mut f, 1 << 20).unwrap();
                assert_eq!(&list(&f), fields);
                assert_eq!(&table(&d), entries);
                assert_eq!(d.size, *size);
            }
        }
    }

    /// What a hostile server may send is refused, never followed.
    #[test]
    fn bad_blocks_are_errors() {
        let mut d = Decoder::default();
        let mut f = Fields::default();
        let bad = [
            ("80", "index 0"),
            ("be", "an index past the dynamic table"),
            ("3fe21f", "a table size over our SETTINGS_HEADER_TABLE_SIZE"),
            ("ffffffffffff0f", "an integer over 32 bits"),
            ("0f", "a truncated integer"),
            ("0085f2b24a", "a string past the block's end"),
            // 'a' then 8 bits of ones: padding too long.
            ("00821fff", "bad Huffman padding"),
            // 'a' then 3 zero bits: padding not ones.
            ("008118", "bad Huffman padding"),
            // EOS (30 ones) inside a string.
            ("0084ffffffff", "EOS in a Huffman string"),
        ];
        for (block, why) in bad {
            assert_eq!(d.decode(&hex(block), &mut f, 1 << 20), Err(Error::Compression(why)), "{block}");
        }
        // A small block that expands past the bound: one 4 KiB entry indexed again and again.
        let mut block = vec![0x40, 0x01, b'x'];
        put_integer(&mut block, 0, 7, 4000);
        block.extend(std::iter::repeat_n(b'v', 4000));
        block.extend(std::iter::repeat_n(0xbe, 1000));
        assert_eq!(d.decode(&block, &mut f, 1 << 20), Err(Error::TooLarge));
    }

    /// A Huffman string seen at the same place before is reused only when its coded bytes
    /// are the same: the second block decodes as the first, the third to its own value.
    #[test]
    fn repeated_huffman_strings_decode_the_same() {
        // server: nginx (literal without indexing, name 54, Huffman), then header x with
        // www.example.com (C.4.1's coding) or no-cache (C.4.2's).
        let block = |v: &str| hex(&format!("0f27 84aa6355e7 000178 {v}"));
        let mut d = Decoder::default();
        let mut f = Fields::default();
        let mut lists = Vec::new();
        for v in ["8cf1e3c2e5f23a6ba0ab90f4ff", "8cf1e3c2e5f23a6ba0ab90f4ff", "86a8eb10649cbf"] {
            d.decode(&block(v), &mut f, 1 << 20).unwrap();
            lists.push(list(&f));
        }
        let name = "x".to_string();
        let first = vec![("server".into(), "nginx".into()), (name.clone(), "www.example.com".into())];
        assert_eq!(lists, [first.clone(), first, vec![("server".into(), "nginx".into()), (name, "no-cache".into())]]);
    }

    #[test]
    fn integers_round_trip() {
        for (n, v) in [(5, 10), (5, 1337), (8, 42), (7, 127), (4, 15), (4, 16), (7, 1 << 20)] {
            let mut out = Vec::new();
            put_integer(&mut out, 0, n, v);
            let mut s = &out[..];
            assert_eq!(integer(&mut s, n).unwrap(), v);
            assert!(s.is_empty());
        }
        let mut out = Vec::new();
        put_integer(&mut out, 0, 5, 1337);
        assert_eq!(out, [31, 154, 10]);
    }
}
