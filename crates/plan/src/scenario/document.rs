//! The scenario file being read, and errors in its terms: the line of a key, a name
//! checked, and the hints (did you mean…?) every message shares.

use super::{Res, ScenarioError};
use std::fmt;
use std::ops::Range;
use std::path::Path;

/// The scenario file being read: its name and text, for messages; its folder, for the
/// files it names.
pub(super) struct Doc<'a> {
    pub(super) file: &'a str,
    pub(super) text: &'a str,
    pub(super) base: &'a Path,
}

impl Doc<'_> {
    pub(super) fn line(&self, at: &Range<usize>) -> usize {
        self.text[..at.start.min(self.text.len())].matches('\n').count() + 1
    }

    /// `FILE:LINE: KEY: what`.
    pub(super) fn fail(&self, at: Range<usize>, key: &str, what: impl fmt::Display) -> ScenarioError {
        ScenarioError::new(self.file, self.line(&at), &format!("{key}: {what}"))
    }

    pub(super) fn whole(&self, what: impl fmt::Display) -> ScenarioError {
        ScenarioError::new(self.file, 0, &what.to_string())
    }

    /// A TOML or type error, on one line, with the key of the line it points at (serde
    /// names the field only when it is unknown or missing).
    pub(super) fn serde_error(&self, e: &toml::de::Error) -> ScenarioError {
        let message = one_line(e.message());
        let Some(at) = e.span() else { return self.whole(message) };
        let line = self.line(&at);
        let key = self.text.lines().nth(line - 1).and_then(key_of_line);
        let message = match key {
            Some(key) if !message.starts_with("unknown field") => format!("{key}: {message}"),
            _ => message,
        };
        ScenarioError::new(self.file, line, &message)
    }
}

/// The key a line of TOML sets, or the table it opens.
pub(super) fn key_of_line(line: &str) -> Option<String> {
    let line = line.trim();
    if line.starts_with('[') {
        return Some(line.trim_matches(|c| c == '[' || c == ']').trim().to_string());
    }
    line.split_once('=').map(|(k, _)| k.trim().to_string()).filter(|k| !k.is_empty())
}

/// A message that spans lines (a regex's, with its caret drawing) on one.
pub(super) fn one_line(message: &str) -> String {
    let lines: Vec<&str> = message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.chars().all(|c| c == '^' || c == ' ' || c == '|'))
        .collect();
    lines.join(": ")
}

/// A name of the file (flow, step, feeder, group, variable): letters, digits, `_.-`.
pub(super) fn check_name(doc: &Doc, at: Range<usize>, key: &str, name: &str) -> Res<()> {
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')) {
        return Err(doc.fail(at, key, format!("'{name}' is not a name: use letters, digits, '_', '.' and '-'")));
    }
    Ok(())
}

/// The closest of `known` to `name`, if one is close enough to be a slip.
pub(super) fn closest<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let lower = name.to_lowercase();
    known
        .into_iter()
        .map(|k| (strsim::damerau_levenshtein(&lower, &k.to_lowercase()), k))
        .filter(|(d, k)| *d <= 2.min(k.len() / 2).max(1) || k.eq_ignore_ascii_case(name))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// `(did you mean X?)`, or the list of what there is.
pub(super) fn hint<'a>(name: &str, known: impl IntoIterator<Item = &'a str> + Clone) -> String {
    match closest(name, known.clone()) {
        Some(k) => format!(" (did you mean {k}?)"),
        None => match known.into_iter().collect::<Vec<_>>() {
            none if none.is_empty() => " (there are none)".into(),
            all => format!(" ({})", list(&all)),
        },
    }
}

/// Names for a message: the first few, so a feeder of a thousand columns keeps it short.
pub(super) fn list(names: &[&str]) -> String {
    const SHOWN: usize = 20;
    match names.len() > SHOWN {
        true => format!("{}, and {} more", names[..SHOWN].join(", "), names.len() - SHOWN),
        false => names.join(", "),
    }
}
