//! Error messages as they reach the terminal: one line, whatever the input they echo.
//!
//! A message quotes what was wrong ('…'), and what was wrong may be hostile: a 100 KB flag
//! value, escape sequences that repaint the terminal, line breaks that forge a second
//! message. Every message is printed through [`one_line`].

/// The most characters of one quoted input kept in a message.
pub const MAX_ECHO: usize = 200;

/// The most characters of a whole message, for inputs echoed without quotes (paths).
pub const MAX_MESSAGE: usize = 2000;

/// `message` on one line: control characters escaped (`\n`, `\u{1b}`), each quoted input
/// ('…') cut to [`MAX_ECHO`] characters and the whole to [`MAX_MESSAGE`], each cut marked
/// with "…".
pub fn one_line(message: &str) -> String {
    let mut out = String::with_capacity(message.len().min(MAX_MESSAGE + 8));
    for (i, part) in quoted_parts(message).into_iter().enumerate() {
        // Odd parts are inside quotes.
        let keep = if i % 2 == 1 { MAX_ECHO } else { usize::MAX };
        escape_into(&mut out, part, keep);
    }
    cut(&out, MAX_MESSAGE)
}

/// What a command's failures say for its exit code, in one line: `the WHAT is not a
/// result: WHY` for a lone one (`of` ≤ 1), `N of OF WHATs are not a result: FIRST; and M
/// more` for several (each failure a `label: reason` line, or a lone run's reason); `None`
/// without any.
pub fn not_a_result(failures: &[String], of: usize, what: &str) -> Option<String> {
    let (first, rest) = failures.split_first()?;
    let head = if of <= 1 {
        format!("the {what} is not a result")
    } else {
        format!("{} of {of} {what}s are not a result", failures.len())
    };
    let more = if rest.is_empty() { String::new() } else { format!("; and {} more", rest.len()) };
    Some(format!("{head}: {first}{more}"))
}

/// The message split at the quotes around inputs: text, input, text, input, … A quote
/// opens only after a space, a start of line or an opening bracket, and closes only before
/// the end, a space or punctuation, so the apostrophe of "doesn't" is no quote.
fn quoted_parts(message: &str) -> Vec<&str> {
    let bytes = message.as_bytes();
    let mut parts = Vec::new();
    let (mut from, mut open) = (0, None);
    for (at, &b) in bytes.iter().enumerate() {
        if b != b'\'' {
            continue;
        }
        match open {
            None if at == 0 || matches!(bytes[at - 1], b' ' | b'(' | b'[' | b'=' | b'\t') => {
                parts.push(&message[from..=at]);
                (from, open) = (at + 1, Some(at));
            }
            Some(_)
                if bytes.get(at + 1).is_none_or(|n| matches!(n, b' ' | b':' | b',' | b';' | b')' | b']' | b'.')) =>
            {
                parts.push(&message[from..at]);
                (from, open) = (at, None);
            }
            _ => {}
        }
    }
    // After an unclosed quote the rest is one input, cut as one.
    parts.push(&message[from..]);
    parts
}

/// Appends `text` with control characters escaped, cut after `keep` characters.
fn escape_into(out: &mut String, text: &str, keep: usize) {
    for (n, c) in text.chars().enumerate() {
        if n == keep {
            out.push('…');
            return;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
}

fn cut(text: &str, keep: usize) -> String {
    match text.char_indices().nth(keep) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_one_line_and_inputs_are_cut() {
        let table = [
            ("invalid rate 'x': expected 1000", "invalid rate 'x': expected 1000"),
            ("invalid URL 'http://a\r\nX: 1': no host", "invalid URL 'http://a\\r\\nX: 1': no host"),
            ("bad '\u{1b}[31mred'", "bad '\\u{1b}[31mred'"),
            ("it doesn't parse 'a'", "it doesn't parse 'a'"),
            ("tab\there", "tab\\there"),
            ("unclosed 'abc", "unclosed 'abc"),
        ];
        for (message, want) in table {
            assert_eq!(one_line(message), want);
        }
        let long = format!("invalid value '{}' for '--duration <DURATION>': expected 30s", "9".repeat(100_000));
        let line = one_line(&long);
        assert_eq!(
            line,
            format!("invalid value '{}…' for '--duration <DURATION>': expected 30s", "9".repeat(MAX_ECHO))
        );
        let unquoted = format!("cannot read {}: no such file", "d/".repeat(50_000));
        assert_eq!(one_line(&unquoted).chars().count(), MAX_MESSAGE + 1);
    }

    #[test]
    fn failures_are_said_in_one_line() {
        assert_eq!(not_a_result(&[], 3, "run"), None);
        assert_eq!(not_a_result(&["refused".into()], 1, "run").unwrap(), "the run is not a result: refused");
        let two = ["a: refused".to_string(), "b: refused".into()];
        assert_eq!(not_a_result(&two, 4, "case").unwrap(), "2 of 4 cases are not a result: a: refused; and 1 more");
    }
}
