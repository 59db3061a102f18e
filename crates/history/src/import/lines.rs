//! Reading another tool's file a line (or a CSV record) at a time, bounded: a file over
//! [`MAX_FILE_BYTES`] is refused before anything is read, a line over [`MAX_LINE_BYTES`] as
//! soon as it is, so that memory stays small whatever the file holds and time stays linear
//! in its size.

use crate::HistoryError;
use std::borrow::Cow;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

/// The largest file imported: 4 GiB. A day of Vegeta results at 10,000 requests a second
/// is about this; anything larger is not a run's results.
pub const MAX_FILE_BYTES: u64 = 4 << 30;

/// The longest line (or CSV record) read: 1 MiB. A Vegeta result keeps the response's body
/// and headers, a JMeter sample its failure message; longer is not a result.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// An import error of `path`, at `line` when it is one line's fault.
pub(super) fn error(path: &Path, line: Option<u64>, why: impl Into<String>) -> HistoryError {
    HistoryError::Import { path: path.to_path_buf(), line, why: why.into() }
}

/// Opens `path` for reading, refusing a file over [`MAX_FILE_BYTES`] and an empty one.
pub(super) fn open(path: &Path) -> Result<BufReader<std::io::Take<File>>, HistoryError> {
    let io = |e: std::io::Error| error(path, None, e.to_string());
    let file = File::open(path).map_err(io)?;
    let len = file.metadata().map_err(io)?.len();
    if len > MAX_FILE_BYTES {
        return Err(error(path, None, format!("{len} bytes: larger than the 4 GiB an import reads")));
    }
    if len == 0 {
        return Err(error(path, None, "empty file"));
    }
    // The length is checked again as it is read: a file may grow (or be a pipe's).
    Ok(BufReader::with_capacity(1 << 16, file.take(MAX_FILE_BYTES)))
}

/// The lines of a file, each without its line ending, at most [`MAX_LINE_BYTES`] each. Bytes
/// that are not UTF-8 are replaced: the fields read are numbers, URLs and labels, and a
/// label in another encoding must not sink an import.
pub(super) struct Lines<R> {
    reader: R,
    path: PathBuf,
    /// The number of the line last read, from 1.
    pub number: u64,
    buf: Vec<u8>,
}

impl<R: BufRead> Lines<R> {
    /// The lines of `reader`, read from `path`.
    pub fn new(reader: R, path: &Path) -> Lines<R> {
        Lines { reader, path: path.to_path_buf(), number: 0, buf: Vec::new() }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// An error at the line last read.
    pub fn error(&self, why: impl Into<String>) -> HistoryError {
        error(&self.path, Some(self.number), why)
    }

    /// The next line into `line`; `false` at the end.
    pub fn read(&mut self, line: &mut String) -> Result<bool, HistoryError> {
        self.buf.clear();
        line.clear();
        let limit = MAX_LINE_BYTES as u64 + 2;
        let read = (&mut self.reader)
            .take(limit)
            .read_until(b'\n', &mut self.buf)
            .map_err(|e| error(&self.path, Some(self.number + 1), e.to_string()))?;
        if read == 0 {
            return Ok(false);
        }
        self.number += 1;
        if self.buf.last() == Some(&b'\n') {
            self.buf.pop();
            if self.buf.last() == Some(&b'\r') {
                self.buf.pop();
            }
        }
        if self.buf.len() > MAX_LINE_BYTES {
            return Err(self.error("a line longer than 1 MiB: not a result"));
        }
        line.push_str(&String::from_utf8_lossy(&self.buf));
        Ok(true)
    }

    /// The first line that is not blank, `None` when there is none.
    pub fn first_nonblank(&mut self) -> Result<Option<String>, HistoryError> {
        let mut line = String::new();
        while self.read(&mut line)? {
            if !line.trim().is_empty() {
                return Ok(Some(line));
            }
        }
        Ok(None)
    }
}

/// One CSV record: its text and where each field is in it.
#[derive(Default)]
pub(super) struct Record {
    text: String,
    /// Each field's bounds in `text`, and whether it was quoted (its `""` then stand for `"`).
    fields: Vec<(usize, usize, bool)>,
    /// The line it starts on, from 1.
    pub line: u64,
}

impl Record {
    /// How many fields it has.
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    /// Field `i`, unquoted; empty when there is no such field.
    pub fn get(&self, i: usize) -> Cow<'_, str> {
        match self.fields.get(i) {
            Some(&(a, b, false)) => Cow::Borrowed(&self.text[a..b]),
            Some(&(a, b, true)) => Cow::Owned(self.text[a..b].replace("\"\"", "\"")),
            None => Cow::Borrowed(""),
        }
    }

    /// Field `i`, trimmed, as a number.
    pub fn number<T: std::str::FromStr>(&self, i: usize) -> Option<T> {
        self.get(i).trim().parse().ok()
    }

    /// The whole record's text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Splits `text` into fields at `delim`, RFC 4180 style: a field may be quoted, a quoted
    /// field's `""` is a `"`.
    fn split(&mut self, delim: u8) {
        self.fields.clear();
        let bytes = self.text.as_bytes();
        let mut at = 0;
        loop {
            if bytes.get(at) == Some(&b'"') {
                // Quoted: up to the quote not followed by another.
                let start = at + 1;
                let mut i = start;
                while i < bytes.len() {
                    if bytes[i] == b'"' {
                        if bytes.get(i + 1) == Some(&b'"') {
                            i += 2;
                            continue;
                        }
                        break;
                    }
                    i += 1;
                }
                self.fields.push((start, i.min(bytes.len()), true));
                // Skip to the delimiter (anything between the closing quote and it is lost,
                // as Go's and Python's lenient readers do).
                at = bytes[i.min(bytes.len())..].iter().position(|&b| b == delim).map_or(bytes.len(), |p| i + p);
            } else {
                let end = bytes[at..].iter().position(|&b| b == delim).map_or(bytes.len(), |p| at + p);
                self.fields.push((at, end, false));
                at = end;
            }
            if at >= bytes.len() {
                return;
            }
            at += 1;
        }
    }
}

/// CSV records of a file, one or more lines each: a quoted field may hold line breaks (a
/// JMeter failure message, a Vegeta error), and a record is whole once its quotes are
/// balanced. Blank lines are skipped.
pub(super) struct Records<R> {
    /// The lines it reads.
    pub lines: Lines<R>,
    /// The field separator.
    pub delim: u8,
    line: String,
}

impl<R: BufRead> Records<R> {
    /// The records of `lines`, fields separated by `delim`.
    pub fn new(lines: Lines<R>, delim: u8) -> Records<R> {
        Records { lines, delim, line: String::new() }
    }
}

impl<R: BufRead> Records<R> {
    /// The next record into `rec`; `false` at the end.
    pub fn next_into(&mut self, rec: &mut Record) -> Result<bool, HistoryError> {
        rec.text.clear();
        // Counted a line at a time, so that a record of many lines is read in linear time.
        let mut quotes = 0usize;
        loop {
            if !self.lines.read(&mut self.line)? {
                break;
            }
            let first = rec.text.is_empty();
            if first && self.line.trim().is_empty() {
                continue;
            }
            if first {
                rec.line = self.lines.number;
            } else {
                rec.text.push('\n');
            }
            quotes += self.line.bytes().filter(|&b| b == b'"').count();
            rec.text.push_str(&self.line);
            if rec.text.len() > MAX_LINE_BYTES {
                return Err(error(self.lines.path(), Some(rec.line), "a record longer than 1 MiB: not a result"));
            }
            // Quotes come in pairs (a field's opening and closing, or an escaped one), so an
            // odd count means a quoted field goes on on the next line.
            if quotes.is_multiple_of(2) {
                break;
            }
        }
        if rec.text.is_empty() {
            return Ok(false);
        }
        if !quotes.is_multiple_of(2) {
            return Err(error(
                self.lines.path(),
                Some(rec.line),
                "a quoted field is never closed: the file is cut off",
            ));
        }
        rec.split(self.delim);
        Ok(true)
    }
}

/// The fields of one line of CSV, for headers and detection.
pub(super) fn split_line(line: &str, delim: u8) -> Vec<String> {
    let mut rec = Record { text: line.to_string(), ..Default::default() };
    rec.split(delim);
    (0..rec.len()).map(|i| rec.get(i).into_owned()).collect()
}
