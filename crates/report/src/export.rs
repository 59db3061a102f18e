//! Report tables exported for spreadsheets: each [`Sheet`] as one CSV file ([`to_csv()`]), or all
//! of them as the sheets of one `.xlsx` workbook ([`write_xlsx()`]).
//!
//! ```
//! use barrage_report::{to_csv, Cell, Sheet};
//!
//! let mut t = Sheet::new("status codes", &["status", "count", "share"]);
//! t.push(vec!["200 OK".into(), 990u64.into(), 0.99.into()]);
//! t.push(vec!["503, retried".into(), 10u64.into(), Cell::Empty]);
//! assert_eq!(to_csv(&t), "status,count,share\n200 OK,990,0.99\n\"503, retried\",10,\n");
//! ```

use crate::ReportError;
use rust_xlsxwriter::{ColNum, Format, RowNum, Workbook, Worksheet, XlsxError};
use std::collections::HashSet;
use std::fmt::Write;
use std::path::Path;

/// One cell of an exported table.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    /// Text, written as is (never interpreted as a number or a formula).
    Text(String),
    /// A number: a numeric cell in a workbook, so that spreadsheets can compute with it.
    Number(f64),
    /// No value: an empty field or cell.
    Empty,
}

impl From<f64> for Cell {
    fn from(n: f64) -> Self {
        Cell::Number(n)
    }
}

/// Counts are exact up to 2^53, the precision of spreadsheets' numbers (IEEE 754 doubles).
impl From<u64> for Cell {
    fn from(n: u64) -> Self {
        Cell::Number(n as f64)
    }
}

impl From<&str> for Cell {
    fn from(s: &str) -> Self {
        Cell::Text(s.to_owned())
    }
}

impl From<String> for Cell {
    fn from(s: String) -> Self {
        Cell::Text(s)
    }
}

/// `None` is [`Cell::Empty`].
impl From<Option<f64>> for Cell {
    fn from(n: Option<f64>) -> Self {
        n.map_or(Cell::Empty, Cell::Number)
    }
}

/// A table to export: a sheet of a workbook, or one CSV file.
#[derive(Clone, Debug, PartialEq)]
pub struct Sheet {
    /// The sheet's name in a workbook (made valid for Excel by [`write_xlsx()`]); unused by
    /// [`to_csv()`].
    pub name: String,
    /// The column titles: the first line or row.
    pub header: Vec<String>,
    /// The rows under the header, normally as many cells each as the header has titles.
    pub rows: Vec<Vec<Cell>>,
}

impl Sheet {
    /// An empty table with these column titles.
    pub fn new(name: &str, header: &[&str]) -> Sheet {
        Sheet { name: name.to_owned(), header: header.iter().map(|&h| h.to_owned()).collect(), rows: Vec::new() }
    }

    /// Appends a row.
    pub fn push(&mut self, row: Vec<Cell>) {
        self.rows.push(row);
    }
}

/// RFC 4180 CSV: header line then rows; fields with comma, quote, CR or LF quoted with doubled quotes;
/// numbers printed with Rust's shortest round-trip `{}` formatting (integers without ".0"); Empty as an
/// empty field; lines end with "\n".
///
/// Numbers are never in exponent notation (`1e21` is `1` and 21 zeros); NaN and infinities are `NaN`,
/// `inf` and `-inf`. Rows shorter than the header are padded with empty fields, so that every line
/// has as many fields as the header; longer rows are written in full. A line of a single empty field
/// is written `""`, as readers may skip blank lines. [`Sheet::name`] is not part of the output.
pub fn to_csv(sheet: &Sheet) -> String {
    let mut out = String::with_capacity(16 * (sheet.rows.len() + 1) * sheet.header.len().max(1));
    csv_line(&mut out, sheet.header.len(), |i| Field::Text(&sheet.header[i]));
    for row in &sheet.rows {
        csv_line(&mut out, row.len().max(sheet.header.len()), |i| match row.get(i) {
            Some(Cell::Text(s)) => Field::Text(s),
            Some(Cell::Number(n)) => Field::Number(*n),
            Some(Cell::Empty) | None => Field::Text(""),
        });
    }
    out
}

/// A CSV field to write.
enum Field<'a> {
    Text(&'a str),
    Number(f64),
}

/// Writes one line of `len` fields, the `i`th being `field(i)`, and its newline.
fn csv_line<'a>(out: &mut String, len: usize, field: impl Fn(usize) -> Field<'a>) {
    if len == 1 && matches!(field(0), Field::Text("")) {
        out.push_str("\"\"\n");
        return;
    }
    for i in 0..len {
        if i > 0 {
            out.push(',');
        }
        match field(i) {
            Field::Text(s) if s.contains([',', '"', '\r', '\n']) => {
                out.push('"');
                out.push_str(&s.replace('"', "\"\""));
                out.push('"');
            }
            Field::Text(s) => out.push_str(s),
            Field::Number(n) => write!(out, "{n}").expect("writing to a String cannot fail"),
        }
    }
    out.push('\n');
}

/// Excel's longest sheet name, in UTF-16 code units.
const MAX_SHEET_NAME: usize = 31;

/// Column widths, in Excel's character units (the width of a digit), for [`column_widths()`].
const MIN_WIDTH: f64 = 6.0;
const MAX_WIDTH: f64 = 60.0;
/// What is added to the widest cell of a column, for the cell margins and the proportional font.
const PADDING: f64 = 2.0;
/// How much wider bold text (the header) is than regular text.
const BOLD: f64 = 1.1;
/// Excel shows numbers in its General format with at most 11 characters.
const MAX_NUMBER_CHARS: usize = 11;

/// Writes one workbook with a sheet per table, in order. Sheet names are made valid for Excel (at most 31
/// chars, none of []:*?/\ , unique: append " (2)" etc. on clashes). Header row bold and frozen; numbers as
/// numbers (not text) so spreadsheets can compute with them; columns given a sensible width.
///
/// Excel's other rules for names apply too: characters forbidden in names, and control characters, are
/// replaced by `_`; leading and trailing apostrophes are dropped; a blank name becomes `SheetN` (N the
/// 1-based position of the table); names are compared regardless of case, and `History`, reserved by
/// Excel, counts as taken. Columns are as wide as their widest cell (header included), between 6 and 60
/// characters. NaN and infinities, which Excel cannot store, are written as the texts `NAN`, `INF` and
/// `-INF`. Without tables the workbook has one empty sheet, as Excel needs at least one.
///
/// # Errors
///
/// [`ReportError::Xlsx`] if a table exceeds Excel's limits (1,048,576 rows, 16,384 columns, 32,767
/// characters in a cell) or if the file cannot be written.
///
/// A `private` workbook (its runs were not redacted) is its owner's alone
/// ([`barrage_metrics::secrets::create`]).
pub fn write_xlsx(path: &Path, sheets: &[Sheet], private: bool) -> Result<(), ReportError> {
    let error = |message: String| ReportError::Xlsx { path: path.to_path_buf(), message };
    let mut workbook = Workbook::new();
    let bold = Format::new().set_bold();
    for (sheet, name) in sheets.iter().zip(sheet_names(sheets)) {
        let worksheet = workbook.add_worksheet();
        fill(worksheet, &name, sheet, &bold).map_err(|e| error(format!("sheet {name:?}: {e}")))?;
    }
    let bytes = workbook.save_to_buffer().map_err(|e| error(e.to_string()))?;
    barrage_metrics::secrets::write(path, bytes, private).map_err(|e| error(e.to_string()))
}

/// Writes `sheet` into `worksheet`, named `name` (already valid and unique).
fn fill(worksheet: &mut Worksheet, name: &str, sheet: &Sheet, bold: &Format) -> Result<(), XlsxError> {
    worksheet.set_name(name)?;
    for (col, title) in sheet.header.iter().enumerate() {
        worksheet.write_string_with_format(0, col_num(col)?, title, bold)?;
    }
    for (row, cells) in sheet.rows.iter().enumerate() {
        let row = RowNum::try_from(row + 1).map_err(|_| XlsxError::RowColumnLimitError)?;
        for (col, cell) in cells.iter().enumerate() {
            match cell {
                Cell::Text(s) => worksheet.write_string(row, col_num(col)?, s)?,
                Cell::Number(n) => worksheet.write_number(row, col_num(col)?, *n)?,
                Cell::Empty => continue,
            };
        }
    }
    if !sheet.header.is_empty() {
        worksheet.set_freeze_panes(1, 0)?;
    }
    for (col, width) in column_widths(sheet).into_iter().enumerate() {
        worksheet.set_column_width(col_num(col)?, width)?;
    }
    Ok(())
}

fn col_num(col: usize) -> Result<ColNum, XlsxError> {
    ColNum::try_from(col).map_err(|_| XlsxError::RowColumnLimitError)
}

/// The width of each column, in Excel's character units: its widest cell, the bold header included,
/// plus a margin, within [`MIN_WIDTH`]..=[`MAX_WIDTH`]. (The character count of the longest line is a
/// close estimate: Excel's unit is the width of a digit, about that of an average letter.)
fn column_widths(sheet: &Sheet) -> Vec<f64> {
    let lines = |s: &str| s.lines().map(|l| l.chars().count()).max().unwrap_or(0) as f64;
    let mut widths: Vec<f64> = sheet.header.iter().map(|h| lines(h) * BOLD).collect();
    for row in &sheet.rows {
        if widths.len() < row.len() {
            widths.resize(row.len(), 0.0);
        }
        for (width, cell) in widths.iter_mut().zip(row) {
            let chars = match cell {
                Cell::Text(s) => lines(s),
                Cell::Number(n) => n.to_string().len().min(MAX_NUMBER_CHARS) as f64,
                Cell::Empty => 0.0,
            };
            *width = width.max(chars);
        }
    }
    widths.into_iter().map(|w| (w + PADDING).clamp(MIN_WIDTH, MAX_WIDTH)).collect()
}

/// The sheets' names made valid for Excel and unique (regardless of case), in order.
fn sheet_names(sheets: &[Sheet]) -> Vec<String> {
    // Excel reserves "History" (for its change tracking).
    let mut taken = HashSet::from(["history".to_owned()]);
    let mut names = Vec::with_capacity(sheets.len());
    for (i, sheet) in sheets.iter().enumerate() {
        let base = clean_sheet_name(&sheet.name, i + 1);
        let mut name = base.clone();
        let mut n = 2;
        while !taken.insert(name.to_lowercase()) {
            let suffix = format!(" ({n})");
            name = format!("{}{suffix}", truncate_utf16(&base, MAX_SHEET_NAME - suffix.len()));
            n += 1;
        }
        names.push(name);
    }
    names
}

/// `name` with the characters Excel forbids in sheet names (and control characters) replaced by `_`,
/// without leading or trailing apostrophes, cut to [`MAX_SHEET_NAME`]; `Sheet{position}` if blank.
fn clean_sheet_name(name: &str, position: usize) -> String {
    let name: String = name.chars().map(|c| if "[]:*?/\\".contains(c) || c.is_control() { '_' } else { c }).collect();
    let name = truncate_utf16(name.trim_matches('\''), MAX_SHEET_NAME).trim_end_matches('\'');
    if name.trim().is_empty() {
        format!("Sheet{position}")
    } else {
        name.to_owned()
    }
}

/// The longest prefix of `s` of at most `max` UTF-16 code units (Excel's measure of names).
fn truncate_utf16(s: &str, max: usize) -> &str {
    let mut units = 0;
    for (i, c) in s.char_indices() {
        units += c.len_utf16();
        if units > max {
            return &s[..i];
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use calamine::{open_workbook_auto, Data, Reader};

    #[test]
    fn csv_fields_are_quoted_only_when_needed() {
        let cases: &[(&str, &str)] = &[
            ("plain", "plain"),
            ("", ""),
            ("with space", "with space"),
            ("a,b", "\"a,b\""),
            ("say \"hi\"", "\"say \"\"hi\"\"\""),
            ("\"", "\"\"\"\""),
            ("two\nlines", "\"two\nlines\""),
            ("cr\r", "\"cr\r\""),
            ("crlf\r\n", "\"crlf\r\n\""),
            ("semi;colon", "semi;colon"),
            ("'quote", "'quote"),
            ("=1+1", "=1+1"),
            ("héllo ✓", "héllo ✓"),
        ];
        for &(text, field) in cases {
            let mut t = Sheet::new("t", &["h", text]);
            t.push(vec![Cell::from(text), Cell::Text(text.to_owned())]);
            assert_eq!(to_csv(&t), format!("h,{field}\n{field},{field}\n"), "{text:?}");
        }
    }

    #[test]
    fn csv_numbers_are_shortest_round_trip() {
        let cases: &[(f64, &str)] = &[
            (0.0, "0"),
            (-0.0, "-0"),
            (1.0, "1"),
            (-42.0, "-42"),
            (0.5, "0.5"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1.0 / 3.0, "0.3333333333333333"),
            (1234.5678, "1234.5678"),
            (1e21, "1000000000000000000000"),
            (1.5e-7, "0.00000015"),
            (9_007_199_254_740_992.0, "9007199254740992"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
        ];
        for &(n, field) in cases {
            let mut t = Sheet::new("t", &["n"]);
            t.push(vec![n.into()]);
            assert_eq!(to_csv(&t), format!("n\n{field}\n"), "{n:?}");
            assert_eq!(field.parse::<f64>().map(f64::to_bits), Ok(n.to_bits()), "{field} round-trips");
        }
    }

    #[test]
    fn csv_cells_and_row_shapes() {
        let cases: &[(Vec<Cell>, &str)] = &[
            (vec![1u64.into(), "x".into(), Some(2.5).into()], "1,x,2.5"),
            (vec![u64::MAX.into(), Cell::Empty, None.into()], "18446744073709552000,,"),
            (vec![Cell::Empty, Cell::Empty, Cell::Empty], ",,"),
            (vec![3u64.into()], "3,,"),
            (vec![], ",,"),
            (vec![1u64.into(), 2u64.into(), 3u64.into(), 4u64.into()], "1,2,3,4"),
            (vec![String::from("s").into(), "".into(), 7.0.into()], "s,,7"),
        ];
        for (row, line) in cases {
            let mut t = Sheet::new("t", &["a", "b", "c"]);
            t.push(row.clone());
            assert_eq!(to_csv(&t), format!("a,b,c\n{line}\n"), "{row:?}");
        }

        // A line of one empty field is not a blank line.
        let mut t = Sheet::new("t", &["only"]);
        t.push(vec![Cell::Empty]);
        t.push(vec![]);
        t.push(vec!["".into()]);
        assert_eq!(to_csv(&t), "only\n\"\"\n\"\"\n\"\"\n");
        assert_eq!(to_csv(&Sheet::new("t", &["a", "b"])), "a,b\n");
    }

    #[test]
    fn sheet_names_are_valid_and_unique() {
        let cases: &[(&[&str], &[&str])] = &[
            (&["latency", "errors"], &["latency", "errors"]),
            (&["a/b", "a:b", "A_B"], &["a_b", "a_b (2)", "A_B (3)"]),
            (&["[x]*?\\"], &["_x____"]),
            (&["tab\there"], &["tab_here"]),
            (&["'quoted'", "''"], &["quoted", "Sheet2"]),
            (&["", " ", "Sheet1"], &["Sheet1", "Sheet2", "Sheet1 (2)"]),
            (&["History", "history"], &["History (2)", "history (3)"]),
            (&["0123456789012345678901234567890123"], &["0123456789012345678901234567890"]),
            (
                &["0123456789012345678901234567890123", "0123456789012345678901234567890"],
                &["0123456789012345678901234567890", "012345678901234567890123456 (2)"],
            ),
            (&["012345678901234567890123456789'x"], &["012345678901234567890123456789"]),
            // 😀 is two UTF-16 code units: 15 of them fill 30, and a 16th would not fit.
            (&["😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀x"], &["😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀"]),
        ];
        for &(names, expected) in cases {
            let sheets: Vec<Sheet> = names.iter().map(|n| Sheet::new(n, &[])).collect();
            let got = sheet_names(&sheets);
            assert_eq!(got, expected, "{names:?}");
            for name in &got {
                assert!(name.encode_utf16().count() <= MAX_SHEET_NAME, "{name:?}");
            }
        }
    }

    #[test]
    fn column_widths_fit_the_widest_cell() {
        let mut t = Sheet::new("t", &["a", "a long header title", "c"]);
        t.push(vec!["x".repeat(30).into(), 1.0.into(), (1.0 / 3.0).into(), "extra".into()]);
        t.push(vec!["y".repeat(100).into()]);
        t.push(vec!["two\nlines".into()]);
        let widths = column_widths(&t);
        assert_eq!(widths.len(), 4);
        assert_eq!(widths[0], MAX_WIDTH);
        assert!((widths[1] - (19.0 * BOLD + PADDING)).abs() < 1e-9);
        assert_eq!(widths[2], MAX_NUMBER_CHARS as f64 + PADDING);
        assert_eq!(widths[3], 5.0 + PADDING);
        assert_eq!(column_widths(&Sheet::new("t", &["c"])), [MIN_WIDTH]);
    }

    #[test]
    fn workbook_round_trips_through_calamine() {
        let long = "Latency: p50/p99 [ms] by endpoint and status";
        let mut latency = Sheet::new(long, &["endpoint", "p50_ms", "p99_ms", "note"]);
        latency.push(vec!["GET /".into(), 1.25.into(), 9.5.into(), Cell::Empty]);
        latency.push(vec!["POST /login".into(), 3u64.into(), None.into(), "slow, \"retried\"".into()]);
        latency.push(vec!["=1+1".into(), Cell::Empty, 0.30000000000000004.into(), "12".into()]);
        let mut clash = Sheet::new(long, &["second", "ok"]);
        clash.push(vec![0u64.into(), 1000u64.into()]);

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.xlsx");
        write_xlsx(&path, &[latency, clash], false).unwrap();

        let mut book = open_workbook_auto(&path).unwrap();
        assert_eq!(book.sheet_names(), ["Latency_ p50_p99 _ms_ by endpoi", "Latency_ p50_p99 _ms_ by en (2)"]);

        let range = book.worksheet_range("Latency_ p50_p99 _ms_ by endpoi").unwrap();
        assert_eq!(range.get_size(), (4, 4));
        let text = |s: &str| Data::String(s.to_owned());
        let rows: Vec<Vec<Data>> = range.rows().map(<[Data]>::to_vec).collect();
        assert_eq!(
            rows,
            [
                vec![text("endpoint"), text("p50_ms"), text("p99_ms"), text("note")],
                vec![text("GET /"), Data::Float(1.25), Data::Float(9.5), Data::Empty],
                vec![text("POST /login"), Data::Float(3.0), Data::Empty, text("slow, \"retried\"")],
                // Text stays text: no formula, no number.
                vec![text("=1+1"), Data::Empty, Data::Float(0.30000000000000004), text("12")],
            ]
        );

        let range = book.worksheet_range("Latency_ p50_p99 _ms_ by en (2)").unwrap();
        let rows: Vec<Vec<Data>> = range.rows().map(<[Data]>::to_vec).collect();
        assert_eq!(rows, [vec![text("second"), text("ok")], vec![Data::Float(0.0), Data::Float(1000.0)]]);
    }

    #[test]
    fn workbook_without_tables_has_one_empty_sheet() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty.xlsx");
        write_xlsx(&path, &[], false).unwrap();
        let mut book = open_workbook_auto(&path).unwrap();
        assert_eq!(book.sheet_names(), ["Sheet1"]);
        assert!(book.worksheet_range("Sheet1").unwrap().is_empty());
    }

    #[test]
    fn write_errors_name_the_file_and_the_sheet() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing").join("report.xlsx");
        let err = write_xlsx(&path, &[Sheet::new("t", &["a"])], false).unwrap_err();
        assert!(matches!(&err, ReportError::Xlsx { path: p, .. } if *p == path), "{err:?}");
        assert!(err.to_string().starts_with(&path.display().to_string()), "{err}");

        let mut t = Sheet::new("big cell", &["a"]);
        t.push(vec!["x".repeat(32_768).into()]);
        let err = write_xlsx(&dir.path().join("big.xlsx"), &[t], false).unwrap_err();
        assert!(err.to_string().contains("sheet \"big cell\": "), "{err}");
    }
}
