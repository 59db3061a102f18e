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

/// A clap error's message without its usage and tips, on one line: clap spreads some over
/// lines ("...not provided:\n  --log <FILE>"), and the flags it names are on the later ones.
pub fn clap_error(e: &clap::Error) -> String {
    if let Some(line) = secret_flag_error(e) {
        return line;
    }
    let text = e.render().to_string();
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .filter(|l| !l.is_empty() && !l.starts_with("tip:"))
        .collect();
    lines.join(" ").trim_start_matches("error: ").to_string()
}

/// Flags whose value may be a credential, so that an invalid one is never quoted:
/// `-H 'Authorization SECRET'` (a colon forgotten) says "-H: …", never the value, which
/// clap's own "invalid value '…'" would quote.
const SECRET_FLAGS: [(&str, &str); 1] = [("--header", "-H")];

/// The message of a secret flag's invalid value: the flag and why, from barrage's own
/// parser (which quotes no value either).
fn secret_flag_error(e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue};
    let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg) else { return None };
    let (_, short) = SECRET_FLAGS.iter().find(|(long, _)| arg.split_whitespace().next() == Some(long))?;
    let why = std::error::Error::source(e).map_or_else(|| "invalid value".to_string(), |s| s.to_string());
    Some(format!("{short}: {why}"))
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
}
