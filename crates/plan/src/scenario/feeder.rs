//! Feeders: the CSV files whose rows `{{row.NAME}}` reads, checked and loaded when the
//! scenario is read; their errors name the CSV file and its line.

use super::document::{check_name, one_line, Doc};
use super::raw::{RawFeeder, RawOnEnd, RawOrder};
use super::{Res, ScenarioError};
use crate::flow::{FeedOrder, Feeder, OnEnd};
use crate::limits::{MAX_TARGETS, MAX_TARGETS_FILE};
use std::sync::Arc;
use toml::Spanned;

pub(super) fn feeder(doc: &Doc, name: &str, raw: &Spanned<RawFeeder>) -> Res<Feeder> {
    check_name(doc, raw.span(), &format!("feeder.{name}"), name)?;
    let r = raw.get_ref();
    let order = match r.order {
        RawOrder::Sequential => FeedOrder::Sequential,
        RawOrder::Random => FeedOrder::Random,
        RawOrder::PerWorker => FeedOrder::PerWorker,
    };
    let on_end = match &r.on_end {
        None => OnEnd::Recycle,
        Some(e) if order != FeedOrder::Sequential => {
            return Err(doc.fail(
                e.span(),
                "on-end",
                "goes with order = \"sequential\": the other orders never run out",
            ))
        }
        Some(e) => match e.get_ref() {
            RawOnEnd::Recycle => OnEnd::Recycle,
            RawOnEnd::Stop => OnEnd::Stop,
        },
    };
    let path = doc.base.join(r.file.get_ref());
    let bytes = crate::limits::read_file(&path, MAX_TARGETS_FILE).map_err(|e| doc.fail(r.file.span(), "file", e))?;
    let (columns, rows) = read_csv(&path.display().to_string(), &bytes)?;
    Ok(Feeder::new(name.to_string(), columns, rows, order, on_end))
}

/// A row of a feeder.
pub(super) type Row = Arc<[String]>;

/// A feeder's columns (its header row) and rows, every row as long as the header; errors
/// name the CSV file and its line.
pub(super) fn read_csv(file: &str, bytes: &[u8]) -> Res<(Vec<String>, Vec<Row>)> {
    let fail = |line: u64, message: String| ScenarioError::new(file, line as usize, &message);
    let csv_error = |e: csv::Error| {
        let line = e.position().map_or(0, |p| p.line());
        match e.kind() {
            csv::ErrorKind::UnequalLengths { expected_len, len, .. } => fail(
                line,
                format!("a row of {len} fields where the header row has {expected_len}: every row has as many"),
            ),
            csv::ErrorKind::Utf8 { .. } => fail(line, "not UTF-8 text".into()),
            _ => fail(line, one_line(&e.to_string())),
        }
    };
    let mut reader = csv::ReaderBuilder::new().has_headers(true).from_reader(bytes);
    let columns: Vec<String> = reader.headers().map_err(csv_error)?.iter().map(str::to_string).collect();
    if columns.is_empty() || columns.iter().any(String::is_empty) {
        return Err(fail(1, "the header row names every column ({{row.NAME}} reads one): a column has no name".into()));
    }
    if let Some(twice) = columns.iter().enumerate().find(|(i, c)| columns[..*i].contains(c)) {
        return Err(fail(1, format!("column '{}' is named twice in the header row", twice.1)));
    }
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(csv_error)?;
        if rows.len() == MAX_TARGETS {
            let line = record.position().map_or(0, |p| p.line());
            return Err(fail(line, format!("more than {MAX_TARGETS} rows, the limit of a feeder")));
        }
        rows.push(record.iter().map(str::to_string).collect::<Vec<_>>().into());
    }
    if rows.is_empty() {
        return Err(fail(0, "no rows after the header row: a feeder needs at least one".into()));
    }
    Ok((columns, rows))
}

#[cfg(test)]
mod tests {
    use super::super::testing::parse_in;

    #[test]
    fn feeder_errors_name_the_csv_file_and_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let csv = dir.path().join("users.csv");
        let text = "[feeder.users]\nfile = \"users.csv\"\n[flow.a]\nfeeder = \"users\"\n[[flow.a.step]]\nname = \"s\"\nurl = \"http://h:1/{{row.user}}\"\n";
        let table = [
            (
                &b"user,caption\nann,a\nbob\n"[..],
                format!("{}:3: a row of 1 fields where the header row has 2", csv.display()),
            ),
            (b"user,user\nann,a\n", format!("{}:1: column 'user' is named twice", csv.display())),
            (b"user\n", format!("{}: no rows after the header row", csv.display())),
            (b"user,\nann,a\n", format!("{}:1: the header row names every column", csv.display())),
            (b"user,caption\nann,\xff\n", format!("{}:2: not UTF-8 text", csv.display())),
            (
                b"usr,caption\nann,a\n",
                "s.toml:7: url: '{{row.user}}': feeder users has no column user (did you mean usr?)".into(),
            ),
        ];
        for (rows, want) in table {
            std::fs::write(&csv, rows).unwrap();
            let e = parse_in(dir.path(), text).unwrap_err().to_string();
            assert!(e.starts_with(&want), "{:?}\nwant: {want}\ngot:  {e}", String::from_utf8_lossy(rows));
        }
        // A line break in a cell a header reads is refused when the file is read.
        std::fs::write(&csv, "user\nann\n\"evil\r\nX-Injected: 1\"\n").unwrap();
        let in_header = text.replace(
            "url = \"http://h:1/{{row.user}}\"",
            "url = \"http://h:1/\"\nheaders = { X-User = \"{{row.user}}\" }",
        );
        let e = parse_in(dir.path(), &in_header).unwrap_err().to_string();
        assert!(e.starts_with("s.toml:8: headers.X-User: {{row.user}} of feeder users holds a control character (a line break?) in its row 2"), "{e}");
        assert!(parse_in(dir.path(), text).is_ok(), "in a path it is percent-encoded");
        // A long list of what there is is cut short.
        let wide: Vec<String> = (0..30).map(|i| format!("col{i}")).collect();
        std::fs::write(&csv, format!("{}\n{}\n", wide.join(","), wide.join(","))).unwrap();
        let e = parse_in(dir.path(), text).unwrap_err().to_string();
        assert!(e.ends_with("has no column user (col0, col1, col2, col3, col4, col5, col6, col7, col8, col9, col10, col11, col12, col13, col14, col15, col16, col17, col18, col19, and 10 more)"), "{e}");
        std::fs::remove_file(&csv).unwrap();
        let e = parse_in(dir.path(), text).unwrap_err().to_string();
        assert!(e.starts_with("s.toml:2: file: cannot read "), "{e}");
        let e = parse_in(dir.path(), &text.replace("[flow.a]", "order = \"random\"\non-end = \"stop\"\n[flow.a]"))
            .unwrap_err();
        assert!(e.to_string().starts_with("s.toml:4: on-end: goes with order = \"sequential\""), "{e}");
        let e = parse_in(dir.path(), &text.replace("[flow.a]", "order = \"shuffle\"\n[flow.a]")).unwrap_err();
        assert!(
            e.to_string().starts_with(
                "s.toml:3: order: unknown variant `shuffle`, expected one of `sequential`, `random`, `per-worker`"
            ),
            "{e}"
        );
    }

    #[test]
    fn a_feeder_of_a_thousand_rows_hands_each_out_once_per_pass() {
        let dir = tempfile::tempdir().unwrap();
        let rows: String = (0..1000).map(|i| format!("{i},u{i}\n")).collect();
        std::fs::write(dir.path().join("ids.csv"), format!("id,user\n{rows}")).unwrap();
        let text = "[feeder.ids]\nfile = \"ids.csv\"\non-end = \"stop\"\n[flow.a]\nfeeder = \"ids\"\n[[flow.a.step]]\nname = \"s\"\nurl = \"http://h:1/{{row.id}}\"\n";
        let (s, _) = parse_in(dir.path(), text).unwrap();
        assert_eq!(
            (s.feeders[0].columns.clone(), s.feeders[0].rows.len()),
            (vec!["id".to_string(), "user".into()], 1000)
        );
        let mut seen: Vec<String> =
            (0..1000).map(|i| s.start_flow(0, i % 7, i, 1).unwrap().row.unwrap()[0].clone()).collect();
        seen.sort_by_key(|id| id.parse::<u32>().unwrap());
        assert_eq!(seen, (0..1000).map(|i| i.to_string()).collect::<Vec<_>>());
        assert!(s.start_flow(0, 0, 1000, 1).is_none(), "on-end = \"stop\": no row after the last");
    }
}
