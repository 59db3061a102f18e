//! Secrets kept out of everything barrage writes and prints. [`Redaction`] is the one place
//! that takes them out of header values, URLs, `run` flags and free text (error messages,
//! `--at` commands); [`create()`] and [`write()`] the one way barrage writes an output file:
//! a file that may hold request data is kept from other users, and no file is written
//! through a link planted where others can write ([`follows_link`]). The requests sent are never touched: redaction applies to the
//! copies made for output, where the run's descriptive data is built (the results file's
//! header and examples, the request log's URLs, the summary every report renders from, an
//! experiment's manifest and listing, the live views' run info, error messages).
//!
//! # What is secret
//! - a header whose name contains one of [`SECRET_WORDS`] (ASCII case ignored):
//!   `Authorization`, `Proxy-Authorization`, `Cookie`, `Set-Cookie`, `X-Api-Key`,
//!   `X-Auth-Token`, `X-Session-Id`…; and a name `--redact-header` adds (exactly);
//! - a query (or fragment) parameter named likewise: `?token=`, `?api_key=`, `?sessionid=`;
//! - the password of a URL's user info (`user:password@`; the user name stays);
//! - (elsewhere: a flow's state conceals what it captured, `barrage_plan`'s
//!   `FlowState::conceal`, and an experiment's listing any custom header's value,
//!   [`Redaction::header_flag`]).
//!
//! The value becomes [`REDACTED`] and the name stays, so a reader still knows what was sent.
//! A value that starts with a registered HTTP authentication scheme keeps that word
//! (`Bearer <redacted>`, `Basic <redacted>`): the scheme says how requests authenticated,
//! which changes the server's work per request, and it is a fixed word of the IANA registry,
//! never part of a credential. Any other first word goes with the rest.
//!
//! ```
//! use barrage_metrics::secrets::Redaction;
//!
//! let r = Redaction::default();
//! assert_eq!(r.header_value("Authorization", "Bearer abc"), "Bearer <redacted>");
//! assert_eq!(r.header_value("Accept", "text/html"), "text/html");
//! assert_eq!(r.url("http://u:pw@host/a?token=x&page=2"), "http://u:<redacted>@host/a?token=<redacted>&page=2");
//! assert_eq!(Redaction::off().url("http://u:pw@host/"), "http://u:pw@host/");
//! ```

use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

/// What a secret value is replaced with.
pub const REDACTED: &str = "<redacted>";

/// A header or parameter whose name contains one of these words (ASCII case ignored) has a
/// secret value. `auth` covers `Authorization` and `Proxy-Authorization`; `cookie` covers
/// `Cookie` and `Set-Cookie`.
pub const SECRET_WORDS: [&str; 10] =
    ["auth", "cookie", "token", "secret", "key", "password", "passwd", "session", "credential", "signature"];

/// Standard request headers whose values are protocol words (media types, encodings,
/// validators, ranges), never credentials: the only ones a listing of flags shows the value
/// of ([`Redaction::header_flag`]).
pub const PLAIN_HEADERS: [&str; 19] = [
    "Accept",
    "Accept-Charset",
    "Accept-Encoding",
    "Accept-Language",
    "Cache-Control",
    "Connection",
    "Content-Encoding",
    "Content-Language",
    "Content-Type",
    "Expect",
    "Host",
    "If-Match",
    "If-Modified-Since",
    "If-None-Match",
    "If-Range",
    "If-Unmodified-Since",
    "Pragma",
    "Range",
    "User-Agent",
];

/// Authentication schemes of the IANA registry (and two common others) kept in front of a
/// redacted credential.
const AUTH_SCHEMES: [&str; 16] = [
    "Basic",
    "Bearer",
    "Concealed",
    "Digest",
    "DPoP",
    "GNAP",
    "HOBA",
    "Mutual",
    "Negotiate",
    "OAuth",
    "PrivateToken",
    "SCRAM-SHA-1",
    "SCRAM-SHA-256",
    "vapid",
    "AWS4-HMAC-SHA256",
    "NTLM",
];

/// How secrets are kept out of a run's outputs: on by default; `--no-redact` turns it off,
/// `--redact-header NAME` adds names. Recorded in the results file's settings, so a report
/// of the file knows (and says) whether it may hold secrets.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Redaction {
    /// Whether secrets are redacted (`false`: `--no-redact`).
    pub enabled: bool,
    /// Header and parameter names redacted besides those with [`SECRET_WORDS`], lowercase.
    pub names: Vec<String>,
}

impl Default for Redaction {
    fn default() -> Self {
        Redaction { enabled: true, names: Vec::new() }
    }
}

impl Redaction {
    /// Redaction by the built-in rules and these extra names.
    pub fn with_names<S: AsRef<str>>(names: impl IntoIterator<Item = S>) -> Redaction {
        let names = names.into_iter().map(|n| n.as_ref().trim().to_ascii_lowercase()).collect();
        Redaction { enabled: true, names }
    }

    /// No redaction (`--no-redact`): outputs hold secrets as given.
    pub fn off() -> Redaction {
        Redaction { enabled: false, names: Vec::new() }
    }

    /// The policy of several runs shown as one (merged files): redacted unless every one
    /// was written without, with every run's extra names.
    pub fn strictest<'a>(all: impl IntoIterator<Item = &'a Redaction>) -> Redaction {
        let mut all = all.into_iter().peekable();
        if all.peek().is_none() {
            return Redaction::default();
        }
        let mut merged = Redaction::off();
        for r in all.filter(|r| r.enabled) {
            merged.enabled = true;
            for n in &r.names {
                if !merged.names.contains(n) {
                    merged.names.push(n.clone());
                }
            }
        }
        merged
    }

    /// The policy a run's settings JSON records under `redaction`; the default (on) when
    /// it records none, as files written before redaction existed.
    pub fn of_settings(settings: &serde_json::Value) -> Redaction {
        settings.get("redaction").and_then(|r| serde_json::from_value(r.clone()).ok()).unwrap_or_default()
    }

    /// Whether a header or query parameter of this name has a secret value.
    pub fn is_secret(&self, name: &str) -> bool {
        let name = name.trim();
        SECRET_WORDS.iter().any(|w| contains_ignore_case(name, w))
            || self.names.iter().any(|n| n.eq_ignore_ascii_case(name))
    }

    /// A header's value as it may be shown.
    pub fn header_value<'a>(&self, name: &str, value: &'a str) -> Cow<'a, str> {
        if !self.enabled || value.trim().is_empty() || !self.is_secret(name) {
            return Cow::Borrowed(value);
        }
        let scheme = value.trim_start().split_once(' ').map(|(s, _)| s);
        match scheme.filter(|s| AUTH_SCHEMES.iter().any(|a| a.eq_ignore_ascii_case(s))) {
            Some(scheme) => Cow::Owned(format!("{scheme} {REDACTED}")),
            None => Cow::Owned(REDACTED.into()),
        }
    }

    /// A `Name: value` header line as it may be shown. A line without `:` is no header, but
    /// as likely a credential whose colon was forgotten (`Authorization SECRET`): redacted
    /// whole.
    pub fn header_line<'a>(&self, line: &'a str) -> Cow<'a, str> {
        self.header_line_by(line, |name, value| self.header_value(name, value))
    }

    /// A header flag's `Name: value` as a listing of flags shows it (an experiment's
    /// `--dry-run` and `experiment.json`, which repeat the flags as given): the value of any
    /// header but a [`PLAIN_HEADERS`] one is redacted, since a custom header (`X-Tenant-Key`
    /// misspelled, `X-Signed`) carries a credential as often as not and no rule can tell.
    pub fn header_flag<'a>(&self, line: &'a str) -> Cow<'a, str> {
        self.header_line_by(line, |name, value| {
            let plain = PLAIN_HEADERS.iter().any(|p| p.eq_ignore_ascii_case(name.trim()));
            if !self.enabled || plain || value.trim().is_empty() || self.is_secret(name) {
                self.header_value(name, value)
            } else {
                Cow::Owned(REDACTED.into())
            }
        })
    }

    /// A header line with its value shown as `shown` says; a line without `:` redacted.
    fn header_line_by<'a>(&self, line: &'a str, shown: impl Fn(&str, &'a str) -> Cow<'a, str>) -> Cow<'a, str> {
        let Some((name, value)) = line.split_once(':') else {
            return if self.enabled { Cow::Owned(REDACTED.into()) } else { Cow::Borrowed(line) };
        };
        let rest = value.trim_start();
        match shown(name, rest) {
            Cow::Borrowed(_) => Cow::Borrowed(line),
            Cow::Owned(v) => Cow::Owned(format!("{name}:{}{v}", &value[..value.len() - rest.len()])),
        }
    }

    /// A URL as it may be shown: the user info's password and secret query (and fragment)
    /// parameters redacted; the rest as written.
    pub fn url<'a>(&self, url: &'a str) -> Cow<'a, str> {
        if !self.enabled {
            return Cow::Borrowed(url);
        }
        let after_scheme = url.find("://").map_or(0, |i| i + 3);
        let authority_end = match after_scheme {
            0 => 0,
            a => url[a..].find(['/', '?', '#']).map_or(url.len(), |i| i + a),
        };
        let mut out = String::with_capacity(url.len() + REDACTED.len());
        out.push_str(&url[..after_scheme]);
        let authority = &url[after_scheme..authority_end];
        match authority.rsplit_once('@').and_then(|(info, host)| Some((info.split_once(':')?, host))) {
            Some(((user, password), host)) if !password.is_empty() => {
                out.extend([user, ":", REDACTED, "@", host]);
            }
            _ => out.push_str(authority),
        }
        let rest = &url[authority_end..];
        let (before_fragment, fragment) = rest.split_once('#').map_or((rest, None), |(b, f)| (b, Some(f)));
        match before_fragment.split_once('?') {
            Some((path, query)) => {
                out.extend([path, "?"]);
                self.params(query, &mut out);
            }
            None => out.push_str(before_fragment),
        }
        if let Some(fragment) = fragment {
            out.push('#');
            self.params(fragment, &mut out);
        }
        if out == url {
            Cow::Borrowed(url)
        } else {
            Cow::Owned(out)
        }
    }

    /// `a=1&token=x` with secret parameters' values redacted, onto `out`.
    fn params(&self, query: &str, out: &mut String) {
        for (i, param) in query.split('&').enumerate() {
            if i > 0 {
                out.push('&');
            }
            match param.split_once('=') {
                Some((name, value)) if !value.is_empty() && self.is_secret(name) => out.extend([name, "=", REDACTED]),
                _ => out.push_str(param),
            }
        }
    }

    /// Free text (an error message, a command line, a command's output) as it may be shown:
    /// every URL in it as [`Redaction::url`] shows it, and every `Name: value` header whose
    /// name starts a line or follows a space or a quote as [`Redaction::header_value`] shows
    /// it (the value runs to the closing quote, or to the end of the line).
    pub fn text<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if !self.enabled {
            return Cow::Borrowed(text);
        }
        match self.urls_in(text) {
            Cow::Borrowed(_) => self.headers_in(text),
            Cow::Owned(urls) => Cow::Owned(self.headers_in(&urls).into_owned()),
        }
    }

    /// `run` flags (an experiment case's) as they may be shown: a header flag as
    /// [`Redaction::header_flag`] shows it, anything else as text (URLs).
    pub fn args(&self, args: &[String]) -> Vec<String> {
        let (mut header_next, mut var_next) = (false, false);
        args.iter()
            .map(|a| {
                let shown = if header_next {
                    self.header_flag(a).into_owned()
                } else if var_next {
                    self.var(a)
                } else if let Some(h) = a.strip_prefix("--header=") {
                    format!("--header={}", self.header_flag(h))
                } else if let Some(h) = a.strip_prefix("-H").filter(|h| !h.is_empty()) {
                    format!("-H{}", self.header_flag(h))
                } else if let Some(v) = a.strip_prefix("--var=") {
                    format!("--var={}", self.var(v))
                } else {
                    self.text(a).into_owned()
                };
                header_next = a == "-H" || a == "--header";
                var_next = a == "--var";
                shown
            })
            .collect()
    }

    /// A scenario's `--var NAME=VALUE` as shown: the value of a secret-named variable
    /// (`api-token`) redacted, as a header of that name would be.
    fn var(&self, assignment: &str) -> String {
        match assignment.split_once('=') {
            Some((name, _)) if self.enabled && self.is_secret(name) => format!("{name}={REDACTED}"),
            _ => self.text(assignment).into_owned(),
        }
    }

    /// The start of a response body as it may be quoted (a failed check's example): at most
    /// `most` characters, and whether there is more. A JSON body is written compact as it
    /// is read, the value of each secret-named field (`"token"`, `"session_id"`) redacted
    /// and its strings as [`Redaction::text`] shows them, and read no further than what is
    /// shown: quoting a body of any size costs what is quoted. Any other body (or one that
    /// stops being JSON within what is shown) is quoted as text, redacted over more than
    /// is shown, so that a secret the cut falls in is redacted whole.
    pub fn body(&self, body: &[u8], most: usize) -> (String, bool) {
        if self.enabled {
            if let Some(quoted) = Quote::json(self, body, most) {
                return quoted;
            }
        }
        let read = &body[..body.len().min(most.saturating_mul(4).saturating_add(TEXT_MARGIN))];
        let text = String::from_utf8_lossy(read);
        let (head, more) = cut(&self.text(&text), most);
        (head, more || read.len() < body.len())
    }

    /// Every string in `value` as [`Redaction::text`] shows it.
    pub fn json(&self, value: &mut serde_json::Value) {
        use serde_json::Value;
        match value {
            Value::String(s) => {
                if let Cow::Owned(t) = self.text(s) {
                    *s = t;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.json(v)),
            Value::Object(map) => map.values_mut().for_each(|v| self.json(v)),
            _ => {}
        }
    }

    /// Each `scheme://…` in `text` through [`Redaction::url`]; a URL ends at white space,
    /// a control character, a quote or an angle bracket, without the punctuation of the
    /// sentence around it (`(URL):`).
    fn urls_in<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let bytes = text.as_bytes();
        let mut out = String::new();
        let (mut copied, mut from) = (0, 0);
        while let Some(at) = text[from..].find("://").map(|i| i + from) {
            let mut start = at;
            while start > copied && (bytes[start - 1].is_ascii_alphanumeric() || b"+-.".contains(&bytes[start - 1])) {
                start -= 1;
            }
            let end = text[at..]
                .find(|c: char| c.is_whitespace() || c.is_control() || "\"'`<>".contains(c))
                .map_or(text.len(), |i| i + at);
            let end = at + text[at..end].trim_end_matches([')', ']', ',', '.', ';', ':']).len();
            from = end.max(at + 3);
            if start == at {
                continue;
            }
            if let Cow::Owned(url) = self.url(&text[start..end]) {
                out.push_str(&text[copied..start]);
                out.push_str(&url);
                copied = end;
            }
        }
        if copied == 0 {
            return Cow::Borrowed(text);
        }
        out.push_str(&text[copied..]);
        Cow::Owned(out)
    }

    /// Each secret `Name: value` in `text` through [`Redaction::header_value`].
    fn headers_in<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let bytes = text.as_bytes();
        let token = |b: u8| b.is_ascii_alphanumeric() || b == b'-' || b == b'_';
        let mut out = String::new();
        let (mut copied, mut i) = (0, 0);
        while i < bytes.len() {
            let before = (i > 0).then(|| bytes[i - 1]);
            let starts = before.is_none_or(|b| b.is_ascii_whitespace() || b == b'\'' || b == b'"');
            if !starts || !token(bytes[i]) {
                i += 1;
                continue;
            }
            let name_end = (i..bytes.len()).find(|&j| !token(bytes[j])).unwrap_or(bytes.len());
            let is_header = text[name_end..].starts_with(": ") || text[name_end..].starts_with(":\t");
            if !is_header || !self.is_secret(&text[i..name_end]) {
                i = name_end.max(i + 1);
                continue;
            }
            let value_start = name_end + 1 + (text[name_end + 1..].len() - text[name_end + 1..].trim_start().len());
            let value_end = match before {
                Some(q @ (b'\'' | b'"')) => text[value_start..].find(q as char),
                _ => text[value_start..].find(['\n', '\r']),
            }
            .map_or(text.len(), |j| j + value_start);
            let name = &text[i..name_end];
            if let Cow::Owned(v) = self.header_value(name, &text[value_start..value_end]) {
                out.push_str(&text[copied..value_start]);
                out.push_str(&v);
                copied = value_end;
            }
            i = value_end.max(i + 1);
        }
        if copied == 0 {
            return Cow::Borrowed(text);
        }
        out.push_str(&text[copied..]);
        Cow::Owned(out)
    }
}

/// How much more of a body that is not JSON is redacted than is quoted of it: a URL or a
/// header line the cut falls in ends well within it.
const TEXT_MARGIN: usize = 64 << 10;

/// The first `most` characters of `text`, and whether there are more.
fn cut(text: &str, most: usize) -> (String, bool) {
    let mut chars = text.chars();
    let head: String = chars.by_ref().take(most).collect();
    (head, chars.next().is_some())
}

/// A JSON body quoted as it is read ([`Redaction::body`]): written compact, redacted, and
/// no further than `most` characters.
struct Quote<'r> {
    redaction: &'r Redaction,
    out: String,
    chars: usize,
    most: usize,
}

impl Quote<'_> {
    /// The quote of `body` cut at `most` characters, and whether there is more; `None` when
    /// it is not JSON as far as it is quoted.
    fn json(redaction: &Redaction, body: &[u8], most: usize) -> Option<(String, bool)> {
        use serde::de::DeserializeSeed;
        let mut q = Quote { redaction, out: String::new(), chars: 0, most };
        let mut de = serde_json::Deserializer::from_slice(body);
        let read = QuoteValue { q: &mut q, before: "" }.deserialize(&mut de).and_then(|()| de.end());
        match (read, q.chars > most) {
            (_, true) => Some((cut(&q.out, most).0, true)),
            (Ok(()), false) => Some((q.out, false)),
            (Err(_), false) => None,
        }
    }

    /// Writes `s`; an error, which ends the read, once more than `most` characters are.
    fn push<E: serde::de::Error>(&mut self, s: &str) -> Result<(), E> {
        self.out.push_str(s);
        self.chars += s.chars().count();
        match self.chars > self.most {
            true => Err(E::custom("quoted as far as shown")),
            false => Ok(()),
        }
    }

    /// `s` as a JSON string, as far as it can be shown.
    fn push_string<E: serde::de::Error>(&mut self, before: &str, s: &str) -> Result<(), E> {
        let head: String = s.chars().take(self.most + 1).collect();
        let quoted = serde_json::to_string(&head).expect("a string serialises");
        self.push(before)?;
        self.push(&quoted)
    }
}

/// Quotes one value, after `before` (the comma that separates it from the one before).
struct QuoteValue<'q, 'r> {
    q: &'q mut Quote<'r>,
    before: &'static str,
}

impl<'de> serde::de::DeserializeSeed<'de> for QuoteValue<'_, '_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for QuoteValue<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<(), E> {
        self.scalar(&v.to_string())
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<(), E> {
        self.scalar(&v.to_string())
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<(), E> {
        self.scalar(&v.to_string())
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<(), E> {
        self.scalar(&serde_json::Number::from_f64(v).map_or("null".to_string(), |n| n.to_string()))
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        self.scalar("null")
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<(), E> {
        let shown = self.q.redaction.text(v);
        self.q.push_string(self.before, &shown)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.q.push(self.before)?;
        self.q.push("[")?;
        let mut before = "";
        while seq.next_element_seed(QuoteValue { q: &mut *self.q, before })?.is_some() {
            before = ",";
        }
        self.q.push("]")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.q.push(self.before)?;
        self.q.push("{")?;
        let mut before = "";
        while let Some(secret) = map.next_key_seed(QuoteKey { q: &mut *self.q, before })? {
            match secret {
                true => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                    self.q.push(&format!("\"{REDACTED}\""))?;
                }
                false => map.next_value_seed(QuoteValue { q: &mut *self.q, before: "" })?,
            }
            before = ",";
        }
        self.q.push("}")
    }
}

impl QuoteValue<'_, '_> {
    fn scalar<E: serde::de::Error>(self, text: &str) -> Result<(), E> {
        self.q.push(self.before)?;
        self.q.push(text)
    }
}

/// Quotes an object's key and its colon; says whether its value is secret.
struct QuoteKey<'q, 'r> {
    q: &'q mut Quote<'r>,
    before: &'static str,
}

impl<'de> serde::de::DeserializeSeed<'de> for QuoteKey<'_, '_> {
    type Value = bool;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_str(self)
    }
}

impl serde::de::Visitor<'_> for QuoteKey<'_, '_> {
    type Value = bool;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a name")
    }

    fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<bool, E> {
        self.q.push_string(self.before, key)?;
        self.q.push(":")?;
        Ok(self.q.redaction.is_secret(key))
    }
}

fn contains_ignore_case(haystack: &str, needle: &str) -> bool {
    haystack.as_bytes().windows(needle.len()).any(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
}

/// Creates (or truncates) a file barrage writes in place, as it streams (a results file,
/// the request log). A `private` one (it may hold request data or secrets) is the user's
/// alone, 0600, even when it existed before with a wider mode; any other is created 0644
/// (as the umask allows) and an existing one keeps its mode. Only a regular file's mode is
/// changed: `-o /dev/null` or a FIFO is written as it is. A symbolic link at `path` is
/// followed only as [`follows_link`] allows, and never one planted after that check.
pub fn create(path: &Path, private: bool) -> io::Result<File> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let nofollow = if follows_link(path)? { 0 } else { libc::O_NOFOLLOW };
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(if private { 0o600 } else { 0o644 })
        .custom_flags(nofollow)
        .open(path)?;
    if private && file.metadata()?.is_file() {
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(file)
}

/// Writes a whole file barrage makes (a report, a manifest, a certificate) with the modes
/// [`create()`] gives: into a new file created exclusively beside `path` under a random
/// name, then renamed over `path`. A reader never sees half a report, and what is at `path`
/// is replaced, never written through. A device or FIFO (`--html /dev/stdout`), a link
/// [`follows_link`] allows, and a file in a directory barrage cannot create files in are
/// written in place.
pub fn write(path: &Path, contents: impl AsRef<[u8]>, private: bool) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let existing = std::fs::symlink_metadata(path).ok();
    if follows_link(path)? || existing.as_ref().is_some_and(|m| !m.is_file()) {
        return create(path, private)?.write_all(contents.as_ref());
    }
    // An existing report keeps its mode; a new one is 0644 as the umask allows.
    let kept = existing.filter(|_| !private).map(|m| m.permissions().mode() & 0o7777);
    let mode = kept.unwrap_or(if private { 0o600 } else { 0o644 });
    let made = tempfile::Builder::new()
        .prefix(".barrage-")
        .permissions(std::fs::Permissions::from_mode(mode))
        .tempfile_in(parent(path));
    let mut temp = match made {
        Ok(temp) => temp,
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied && kept.is_some() => {
            return create(path, private)?.write_all(contents.as_ref());
        }
        Err(e) => return Err(e),
    };
    temp.write_all(contents.as_ref())?;
    if let Some(mode) = kept {
        temp.as_file().set_permissions(std::fs::Permissions::from_mode(mode))?;
    }
    temp.persist(path).map(drop).map_err(|e| e.error)
}

/// Whether barrage may write through `path` when it is a symbolic link: when its directory
/// is writable by its owner alone (`-o /dev/stdout`, a link the user made in a directory of
/// theirs). A link in a directory others can write (`/tmp`, a shared results directory) is
/// an error: with `fs.protected_symlinks=0` anyone there could have planted it to have
/// barrage overwrite, and chmod, a file of the user's. `false` when `path` is no link.
pub fn follows_link(path: &Path) -> io::Result<bool> {
    use std::os::unix::fs::PermissionsExt;
    if !std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Ok(false);
    }
    let dir = parent(path);
    let mode = std::fs::metadata(dir)?.permissions().mode();
    if mode & 0o022 != 0 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "a symbolic link in a directory others can write ({}, mode {:o}), which barrage does not follow: write to where it points, or elsewhere",
                dir.display(),
                mode & 0o7777
            ),
        ));
    }
    Ok(true)
}

/// The directory `path` is in (`.` for a bare name).
fn parent(path: &Path) -> &Path {
    path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_named_as_secrets_lose_their_values() {
        let r = Redaction::with_names(["X-Custom"]);
        for (name, value, shown) in [
            ("Authorization", "Bearer S3CRET", "Bearer <redacted>"),
            ("authorization", "basic dXNlcjpwdw==", "basic <redacted>"),
            ("Authorization", "S3CRET", "<redacted>"),
            ("Authorization", "S3CRET more", "<redacted>"),
            ("Proxy-Authorization", "Digest username=\"u\", response=\"x\"", "Digest <redacted>"),
            ("Cookie", "sid=S3CRET; theme=dark", "<redacted>"),
            ("Set-Cookie", "sid=S3CRET", "<redacted>"),
            ("X-Api-Key", "S3CRET", "<redacted>"),
            ("X-AUTH-TOKEN", "S3CRET", "<redacted>"),
            ("X-Session-Id", "S3CRET", "<redacted>"),
            ("X-Client-Secret", "S3CRET", "<redacted>"),
            ("X-Password", "S3CRET", "<redacted>"),
            ("x-custom", "S3CRET", "<redacted>"),
            ("Accept", "text/html", "text/html"),
            ("X-Customer", "42", "42"),
            ("Authorization", "", ""),
        ] {
            assert_eq!(r.header_value(name, value), shown, "{name}: {value}");
        }
        assert_eq!(r.header_line("Cookie:  sid=1"), "Cookie:  <redacted>");
        assert_eq!(r.header_line("Accept: */*"), "Accept: */*");
        assert_eq!(r.header_line("Authorization S3CRET"), "<redacted>", "no header: a colon forgotten?");
        assert_eq!(Redaction::off().header_line("no colon"), "no colon");
        assert_eq!(Redaction::off().header_value("Authorization", "Bearer x"), "Bearer x");
    }

    #[test]
    fn urls_keep_all_but_passwords_and_secret_parameters() {
        let r = Redaction::with_names(["sig"]);
        for (url, shown) in [
            (
                "http://user:S3CRET@127.0.0.1:8080/path?token=S3CRET&x=1",
                "http://user:<redacted>@127.0.0.1:8080/path?token=<redacted>&x=1",
            ),
            (
                "https://host/a?api_key=S3CRET&Session=S3CRET&page=2",
                "https://host/a?api_key=<redacted>&Session=<redacted>&page=2",
            ),
            ("https://host/cb#access_token=S3CRET&state=1", "https://host/cb#access_token=<redacted>&state=1"),
            ("http://host/p?sig=S3CRET&token=", "http://host/p?sig=<redacted>&token="),
            ("http://user@host/", "http://user@host/"),
            ("http://user:@host/", "http://user:@host/"),
            ("http://host/obj/{id}?v=1", "http://host/obj/{id}?v=1"),
            ("http://host/users/@me?flag", "http://host/users/@me?flag"),
            ("/path?password=S3CRET", "/path?password=<redacted>"),
        ] {
            assert_eq!(r.url(url), shown, "{url}");
        }
        let shown = r.url("http://u:S3CRET@h/?token=S3CRET").into_owned();
        assert_eq!(r.url(&shown), shown, "redacting twice changes nothing");
    }

    #[test]
    fn free_text_loses_urls_and_header_values() {
        let r = Redaction::default();
        for (text, shown) in [
            (
                "error sending request for url (http://u:S3CRET@h:1/?token=S3CRET): connection refused",
                "error sending request for url (http://u:<redacted>@h:1/?token=<redacted>): connection refused",
            ),
            ("invalid URL 'http://u:S3CRET@/x': no host", "invalid URL 'http://u:<redacted>@/x': no host"),
            (
                "invalid value 'X-Api-Key: S3CRET\u{1}' for '--header <'NAME: VALUE'>': bad value",
                "invalid value 'X-Api-Key: <redacted>' for '--header <'NAME: VALUE'>': bad value",
            ),
            ("> Authorization: Bearer S3CRET\n< HTTP/1.1 200", "> Authorization: Bearer <redacted>\n< HTTP/1.1 200"),
            ("curl -H \"Cookie: a=S3CRET\" x", "curl -H \"Cookie: <redacted>\" x"),
            ("Authorization: S3CRET", "Authorization: <redacted>"),
            ("connecting to host:443 took longer than 2s", "connecting to host:443 took longer than 2s"),
            ("x-api-key:no-space stays (not a header line)", "x-api-key:no-space stays (not a header line)"),
        ] {
            assert_eq!(r.text(text), shown, "{text}");
        }
        assert!(matches!(r.text("plain words"), Cow::Borrowed(_)));
        assert_eq!(Redaction::off().text("http://u:p@h/"), "http://u:p@h/");
    }

    #[test]
    fn bodies_lose_secret_fields_and_url_secrets() {
        let r = Redaction::default();
        let body = r#"{"user":"ann","access_token":"S3CRET","nested":[{"Session-Id":7}],"next":"http://u:S3CRET@h/"}"#;
        let (shown, more) = r.body(body.as_bytes(), 1000);
        assert!(!shown.contains("S3CRET") && !shown.contains(":7") && !more, "{shown}");
        assert!(shown.contains(r#""user":"ann""#) && shown.contains(r#""access_token":"<redacted>""#), "{shown}");
        let text = "not json: http://u:S3CRET@h/";
        assert_eq!(r.body(text.as_bytes(), 1000), ("not json: http://u:<redacted>@h/".into(), false));
        assert_eq!(Redaction::off().body(body.as_bytes(), 1000), (body.into(), false));
    }

    /// A failed check's example quotes 120 characters of answers of up to 16 MiB: quoting
    /// one read it whole into a tree (a GiB for small objects), then cut it.
    #[test]
    fn a_body_is_quoted_as_far_as_it_is_shown() {
        let r = Redaction::default();
        let big = format!("[{}0]", r#"{"a":{"b":0}},"#.repeat(1 << 20));
        let started = std::time::Instant::now();
        let (shown, more) = r.body(big.as_bytes(), 20);
        assert_eq!((shown.as_str(), more), (r#"[{"a":{"b":0}},{"a":"#, true));
        assert!(started.elapsed() < std::time::Duration::from_secs(1), "{:?}", started.elapsed());
        // A secret field is redacted whole where the cut falls in it, and in a body that is
        // JSON only as far as it is shown (an answer cut at the most kept of it).
        let body = r#"{"user":"ann","token":"S3CRET-S3CRET","next":"#;
        for most in [8, 20, 30, 40] {
            let (shown, _) = r.body(body.as_bytes(), most);
            assert!(!shown.contains("S3C") && shown.len() <= most + 2, "{most}: {shown}");
        }
        assert_eq!(r.body(body.as_bytes(), 30).0, r#"{"user":"ann","token":"<redact"#);
        let (text, more) = r.body(b"not json http://u:S3CRET@h/ and more", 24);
        assert_eq!((text.as_str(), more), ("not json http://u:<redac", true));
        // A long string is quoted as far as it is shown; a URL in it loses its password.
        let long = format!("[\"http://u:S3CRET@h/{}\"]", "x".repeat(1 << 20));
        let (shown, more) = r.body(long.as_bytes(), 40);
        assert_eq!((shown.as_str(), more), (r#"["http://u:<redacted>@h/xxxxxxxxxxxxxxxx"#, true));
    }

    #[test]
    fn flags_lose_header_values_and_url_secrets() {
        let r = Redaction::default();
        let flags = [
            "--header",
            "Authorization: Bearer S3CRET",
            "-H",
            "Accept: */*",
            "--header=Cookie: S3CRET",
            "-HX-Api-Key: S3CRET",
            "-H",
            "X-Tenant: S3CRET",
            "-H",
            "Authorization S3CRET",
            "--header=content-type: application/json",
            "--rate",
            "10",
            "--var",
            "api-token=S3CRET",
            "--var=base=http://h:1",
            "http://u:S3CRET@h/?token=S3CRET",
        ]
        .map(String::from);
        assert_eq!(
            r.args(&flags),
            [
                "--header",
                "Authorization: Bearer <redacted>",
                "-H",
                "Accept: */*",
                "--header=Cookie: <redacted>",
                "-HX-Api-Key: <redacted>",
                "-H",
                "X-Tenant: <redacted>",
                "-H",
                "<redacted>",
                "--header=content-type: application/json",
                "--rate",
                "10",
                "--var",
                "api-token=<redacted>",
                "--var=base=http://h:1",
                "http://u:<redacted>@h/?token=<redacted>",
            ]
        );
    }

    #[test]
    fn merged_runs_are_redacted_unless_none_was() {
        let (on, off, named) = (Redaction::default(), Redaction::off(), Redaction::with_names(["X-A"]));
        assert_eq!(Redaction::strictest([&off, &off]), off);
        assert_eq!(Redaction::strictest([&off, &named]), named);
        assert_eq!(Redaction::strictest([&on, &named]), named);
        assert_eq!(Redaction::strictest([]), on);
        let settings = serde_json::json!({ "redaction": { "enabled": false, "names": [] } });
        assert_eq!(Redaction::of_settings(&settings), off);
        assert_eq!(Redaction::of_settings(&serde_json::json!({})), on, "older files: redacted when shown");
    }

    #[test]
    fn private_files_are_the_users_alone_even_when_they_existed() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"old").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        write(&p, b"new", true).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!((mode(&p), std::fs::read(&p).unwrap()), (0o600, b"new".to_vec()));
        let shared = dir.path().join("g");
        write(&shared, b"x", false).unwrap();
        assert_eq!(mode(&shared) & 0o600, 0o600);
        assert_eq!(mode(&shared) & 0o133, 0, "never more than 0644");
        write(Path::new("/dev/null"), b"x", true).unwrap();
        assert_eq!(mode(Path::new("/dev/null")), 0o666, "a device keeps its mode");
        // A report replaced keeps its mode, and nothing is left beside it.
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o640)).unwrap();
        write(&shared, b"y", false).unwrap();
        assert_eq!((mode(&shared), std::fs::read(&shared).unwrap()), (0o640, b"y".to_vec()));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2, "f and g alone");
    }

    #[test]
    fn a_link_is_followed_only_in_a_directory_no_one_else_can_write() {
        use std::os::unix::fs::{symlink, PermissionsExt};
        let dir = tempfile::tempdir().unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o644)).unwrap();
        let shared = dir.path().join("shared");
        std::fs::create_dir(&shared).unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
        for (i, private) in [true, false].into_iter().enumerate() {
            let link = shared.join(format!("planted{i}"));
            symlink(&victim, &link).unwrap();
            let e = create(&link, private).unwrap_err();
            assert!(e.to_string().contains("a symbolic link in a directory others can write"), "{e}");
            assert!(write(&link, b"x", private).is_err());
            assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        }
        assert_eq!((std::fs::read(&victim).unwrap(), mode(&victim)), (b"precious".to_vec(), 0o644));
        // The user's own directory: their link is theirs to follow.
        let own = dir.path().join("own");
        std::fs::create_dir(&own).unwrap();
        std::fs::set_permissions(&own, std::fs::Permissions::from_mode(0o700)).unwrap();
        symlink(&victim, own.join("link")).unwrap();
        write(&own.join("link"), b"mine", true).unwrap();
        assert_eq!((std::fs::read(&victim).unwrap(), mode(&victim)), (b"mine".to_vec(), 0o600));
        assert!(!follows_link(&victim).unwrap(), "no link");
    }
}
