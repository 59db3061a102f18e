//! clap's errors as barrage says them: one line, without usage or tips, and never quoting
//! the value of a flag that may carry a credential. The line is then made safe for the
//! terminal by [`barrage_report::message::one_line`].

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
