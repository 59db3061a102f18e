//! Target files: Vegeta's text format, JSON lines, and plain URL lists, read into
//! [`Target`]s. Every error names the file and line.
//!
//! Text format (Vegeta's, plus a `# name:` comment naming the next target):
//! ```text
//! # name: put-object
//! PUT http://127.0.0.1:8080/obj/1
//! Content-Type: application/octet-stream
//! @body.bin
//!
//! GET http://127.0.0.1:8080/obj/1
//! ```
//! A body file (`@path`) is relative to the target file's folder (to the working directory
//! for stdin). JSON lines follow Vegeta's JSON format, `body` in base64:
//! `{"method":"GET","url":"http://h/p","header":{"Accept":["*/*"]},"body":"aGk=","name":"get"}`.

use crate::limits::{MAX_BODY, MAX_TARGETS, MAX_TARGETS_FILE};
use crate::plan::{Headers, Target};
use crate::units::Header;
use barrage_metrics::limits::fmt_limit;
use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A target file that cannot be used; the message says where and why.
#[derive(Debug, thiserror::Error)]
#[error("{file}:{line}: {message}")]
pub struct TargetError {
    /// The file (`-` for stdin).
    pub file: String,
    /// 1-based line (0 when the file could not be read at all).
    pub line: usize,
    /// What is wrong and what would be valid.
    pub message: String,
}

/// Reads `--targets FILE` (or `-` for stdin): JSON lines when the first non-blank line starts
/// with `{`, Vegeta's text format otherwise.
pub fn read_targets(path: &str) -> Result<Vec<Target>, TargetError> {
    let (text, base) = read(path)?;
    let first = text.lines().map(str::trim).find(|l| !l.is_empty() && !l.starts_with('#'));
    let targets = if first.is_some_and(|l| l.starts_with('{')) {
        parse_json_lines(&text, path)?
    } else {
        parse_text(&text, path, &base)?
    };
    if targets.is_empty() {
        return Err(TargetError { file: path.into(), line: 0, message: "no targets in the file".into() });
    }
    Ok(targets)
}

/// Reads `--urls FILE`: one URL per line; blank lines and `#` comments are skipped.
pub fn read_urls(path: &str, method: &Method) -> Result<Vec<Target>, TargetError> {
    let (text, _) = read(path)?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let err = |message| TargetError { file: path.into(), line: i + 1, message };
        push(&mut out, Target::new(method.clone(), line).map_err(err)?).map_err(err)?;
    }
    if out.is_empty() {
        return Err(TargetError { file: path.into(), line: 0, message: "no URLs in the file".into() });
    }
    Ok(out)
}

/// The text of a target file or URL list, at most [`MAX_TARGETS_FILE`] bytes.
fn read(path: &str) -> Result<(String, PathBuf), TargetError> {
    use barrage_metrics::limits::{read_capped, read_capped_from};
    let err = |e: std::io::Error| {
        let message = match e.kind() {
            std::io::ErrorKind::FileTooLarge => e.to_string(),
            _ => format!("cannot read: {e}"),
        };
        TargetError { file: path.into(), line: 0, message }
    };
    let (bytes, base) = match path {
        "-" => (read_capped_from(std::io::stdin(), None, MAX_TARGETS_FILE), PathBuf::from(".")),
        _ => (
            read_capped(Path::new(path), MAX_TARGETS_FILE),
            Path::new(path).parent().map(Path::to_path_buf).unwrap_or_default(),
        ),
    };
    let text = String::from_utf8(bytes.map_err(err)?)
        .map_err(|_| err(std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text")))?;
    Ok((text, base))
}

/// Adds a target to those of a file, at most [`MAX_TARGETS`] of them.
fn push(out: &mut Vec<Target>, t: Target) -> Result<(), String> {
    if out.len() >= MAX_TARGETS {
        return Err(format!("more than {MAX_TARGETS} targets, the limit of a file"));
    }
    out.push(t);
    Ok(())
}

/// A header line of a target file.
type HeaderLine = (HeaderName, HeaderValue);

/// What the targets of one file share, held once: each set of header lines (a million
/// targets of one upload list give the same few), each name and each body file (read once,
/// however many targets send it).
#[derive(Default)]
struct Interner {
    headers: HashMap<Vec<HeaderLine>, Headers>,
    names: HashMap<String, Arc<str>>,
    bodies: HashMap<PathBuf, Bytes>,
    /// The bytes of the body files read: held at once, so bounded together.
    body_bytes: u64,
}

impl Interner {
    /// The most sets of header lines, and names, kept to share: the targets beyond a file's
    /// first this many distinct ones have their own.
    const KEPT: usize = 1024;

    /// The headers of `lines`, shared with the targets before that had the same.
    fn headers(&mut self, lines: Vec<HeaderLine>) -> Headers {
        if let Some(shared) = self.headers.get(&lines) {
            return shared.clone();
        }
        // Sized to the lines: a map that grows by itself takes room for 6 (660 bytes).
        let mut map = HeaderMap::with_capacity(lines.len());
        if self.headers.len() >= Self::KEPT {
            // Moved, not cloned: a clone of each value would take a buffer of its own.
            map.extend(lines);
            return Headers::from(map);
        }
        map.extend(lines.iter().cloned());
        let headers = Headers::from(map);
        self.headers.insert(lines, headers.clone());
        headers
    }

    /// The name `name`, shared with the targets before that had it.
    fn name(&mut self, name: &str) -> Arc<str> {
        if let Some(shared) = self.names.get(name) {
            return shared.clone();
        }
        let shared: Arc<str> = name.into();
        if self.names.len() < Self::KEPT {
            self.names.insert(name.to_string(), shared.clone());
        }
        shared
    }

    /// Adds target `t`, read with its header `lines`, to `out`.
    fn finish(&mut self, (mut t, lines): (Target, Vec<HeaderLine>), out: &mut Vec<Target>) -> Result<(), String> {
        t.headers = self.headers(lines);
        push(out, t)
    }

    /// The body file at `path`, read the first time a target names it.
    fn body(&mut self, path: PathBuf) -> Result<Bytes, String> {
        if let Some(body) = self.bodies.get(&path) {
            return Ok(body.clone());
        }
        let body = crate::body::read_body_file(&path).map_err(|e| format!("body file: {e}"))?;
        self.body_bytes += body.len() as u64;
        if self.body_bytes > MAX_BODY {
            return Err(format!("the body files are over {} in all", fmt_limit(MAX_BODY)));
        }
        self.bodies.insert(path, body.clone());
        Ok(body)
    }
}

/// Parses Vegeta's text format.
pub fn parse_text(text: &str, file: &str, base: &Path) -> Result<Vec<Target>, TargetError> {
    let mut out = Vec::new();
    // The target being read, and its header lines so far.
    let mut current: Option<(Target, Vec<HeaderLine>)> = None;
    let mut name: Option<String> = None;
    let mut interner = Interner::default();
    for (i, raw) in text.lines().enumerate() {
        let err = |message: String| TargetError { file: file.into(), line: i + 1, message };
        let line = raw.trim();
        if line.is_empty() {
            if let Some(t) = current.take() {
                interner.finish(t, &mut out).map_err(err)?;
            }
            continue;
        }
        if let Some(comment) = line.strip_prefix('#') {
            if let Some(n) = comment.trim().strip_prefix("name:") {
                name = Some(n.trim().to_string());
            }
            continue;
        }
        match &mut current {
            None => {
                let (method, url) = line
                    .split_once(char::is_whitespace)
                    .ok_or_else(|| err(format!("expected 'METHOD URL', found '{line}'")))?;
                let method =
                    Method::from_bytes(method.as_bytes()).map_err(|_| err(format!("invalid method '{method}'")))?;
                let mut t = Target::new(method, url.trim()).map_err(err)?;
                t.name = name.take().map(|n| interner.name(&n));
                current = Some((t, Vec::new()));
            }
            Some((t, lines)) => match line.strip_prefix('@') {
                Some(body) => t.body = interner.body(base.join(body)).map_err(err)?,
                None => lines.push(header(line).map_err(err)?),
            },
        }
    }
    if let Some(t) = current {
        let line = text.lines().count();
        interner.finish(t, &mut out).map_err(|message| TargetError { file: file.into(), line, message })?;
    }
    Ok(out)
}

/// A header line, parsed as `-H` is: the error never quotes the line (it may be a credential).
fn header(line: &str) -> Result<HeaderLine, String> {
    let Header(name, value) =
        line.parse().map_err(|e| format!("expected a header or '@body-file' after the request line: {e}"))?;
    Ok((name, value))
}

/// Parses Vegeta's JSON-lines format (with an optional `name`).
pub fn parse_json_lines(text: &str, file: &str) -> Result<Vec<Target>, TargetError> {
    let mut out = Vec::new();
    let mut interner = Interner::default();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let err = |message: String| TargetError { file: file.into(), line: i + 1, message };
        let v: serde_json::Value = serde_json::from_str(line).map_err(|e| err(format!("not JSON: {e}")))?;
        push(&mut out, json_target(&v, &mut interner).map_err(err)?).map_err(err)?;
    }
    Ok(out)
}

fn json_target(v: &serde_json::Value, interner: &mut Interner) -> Result<Target, String> {
    let field = |k: &str| v.get(k).and_then(|x| x.as_str());
    let url = field("url").ok_or("missing \"url\"")?;
    let method = field("method").unwrap_or("GET");
    let method = Method::from_bytes(method.as_bytes()).map_err(|_| format!("invalid method '{method}'"))?;
    let mut t = Target::new(method, url)?;
    t.name = field("name").map(|n| interner.name(n));
    if let Some(b64) = field("body") {
        use base64::Engine;
        let body = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|e| format!("\"body\" is not base64: {e}"))?;
        t.body = Bytes::from(body);
    }
    if let Some(headers) = v.get("header").and_then(|h| h.as_object()) {
        let mut lines = Vec::new();
        for (k, values) in headers {
            let values: Vec<&str> = match values {
                serde_json::Value::Array(a) => a.iter().filter_map(|x| x.as_str()).collect(),
                serde_json::Value::String(s) => vec![s.as_str()],
                _ => return Err(format!("header '{k}' must be a string or a list of strings")),
            };
            for value in values {
                lines.push(header(&format!("{k}: {value}"))?);
            }
        }
        t.headers = interner.headers(lines);
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vegeta_text_format_with_names_headers_and_bodies() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("b.json"), b"{\"a\":1}").unwrap();
        let text = "# name: put-object\nPUT http://127.0.0.1:1/obj/1\nContent-Type: application/json\n@b.json\n\n\nGET http://127.0.0.1:1/obj/1\nX-A: 1\nX-A: 2\n";
        let t = parse_text(text, "t.txt", dir.path()).unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!((t[0].method.as_str(), t[0].name.as_deref()), ("PUT", Some("put-object")));
        assert_eq!(&t[0].body[..], b"{\"a\":1}");
        assert_eq!(t[0].headers["content-type"], "application/json");
        assert_eq!(t[1].name, None);
        assert_eq!(t[1].headers.get_all("x-a").iter().count(), 2);
    }

    /// The targets of a list hold the headers and body files they have alike once: a map
    /// each took 660 bytes for one header, and each target read its body file again.
    #[test]
    fn targets_share_the_headers_and_body_files_they_have_alike() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("b.bin"), b"body").unwrap();
        let put = |i, ct| format!("PUT http://h/{i}\nContent-Type: {ct}\n@b.bin\n\n");
        let text = [put(1, "a"), "GET http://h/2\n\n".into(), put(3, "a"), put(4, "b")].concat();
        let t = parse_text(&text, "t.txt", dir.path()).unwrap();
        assert!(t[0].headers.same(&t[2].headers) && !t[0].headers.same(&t[3].headers));
        assert_eq!((t[3].headers["content-type"].as_bytes(), t[1].headers.len()), (&b"b"[..], 0));
        assert_eq!((t[0].body.as_ptr(), &t[3].body[..]), (t[2].body.as_ptr(), &b"body"[..]));
        let line = |i| format!("{{\"method\":\"PUT\",\"url\":\"http://h/{i}\",\"header\":{{\"K\":[\"v\"]}}}}\n");
        let t = parse_json_lines(&[line(1), line(2)].concat(), "t.jsonl").unwrap();
        assert!(t[0].headers.same(&t[1].headers));
    }

    #[test]
    fn errors_name_file_and_line() {
        let table = [
            ("GET\n", "t.txt:1: expected 'METHOD URL'"),
            ("GET http://h/\nno header here\n", "t.txt:2: expected a header"),
            ("GET http://h/\n@missing.bin\n", "t.txt:2: body file"),
            ("\n\nGET ftp://h/\n", "t.txt:3: invalid URL"),
            ("G(T http://h/\n", "t.txt:1: invalid method"),
        ];
        for (text, want) in table {
            // Relative to a directory the test made and left empty: `missing.bin` is missing.
            let dir = tempfile::tempdir().unwrap();
            let e = parse_text(text, "t.txt", dir.path()).unwrap_err().to_string();
            assert!(e.starts_with(want), "{text:?}: {e}");
        }
    }

    #[test]
    fn files_and_their_targets_are_bounded() {
        let many = "GET http://h/\n\n".repeat(MAX_TARGETS + 1);
        let e = parse_text(&many, "t.txt", Path::new(".")).unwrap_err().to_string();
        assert!(e.contains(&format!("more than {MAX_TARGETS} targets")), "{e}");
        let e = read_targets("/dev/zero").unwrap_err().to_string();
        assert_eq!(e, "/dev/zero:0: over the 256 MiB limit");
    }

    #[test]
    fn json_lines() {
        let text = "{\"method\":\"POST\",\"url\":\"http://h/x\",\"header\":{\"K\":[\"v\"]},\"body\":\"aGVsbG8=\",\"name\":\"p\"}\n{\"url\":\"http://h/y\"}\n";
        let t = parse_json_lines(text, "t.jsonl").unwrap();
        assert_eq!((t[0].method.as_str(), &t[0].body[..], t[0].name.as_deref()), ("POST", &b"hello"[..], Some("p")));
        assert_eq!(t[0].headers["k"], "v");
        assert_eq!(t[1].method, Method::GET);
        let e = parse_json_lines("{\"url\":\"http://h/\"}\n{\"method\":\"GET\"}\n", "t.jsonl").unwrap_err();
        assert_eq!(e.to_string(), "t.jsonl:2: missing \"url\"");
        assert!(parse_json_lines("{nope", "t.jsonl").unwrap_err().to_string().starts_with("t.jsonl:1: not JSON"));
    }

    #[test]
    fn url_lists_skip_comments() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("urls.txt");
        std::fs::write(&p, "# origins\nhttp://127.0.0.1:1/a\n\nhttp://127.0.0.1:2/b\nnot a url\n").unwrap();
        let e = read_urls(p.to_str().unwrap(), &Method::GET).unwrap_err();
        assert_eq!(e.line, 5);
        std::fs::write(&p, "http://127.0.0.1:1/a\nhttp://127.0.0.1:2/b\n").unwrap();
        assert_eq!(read_urls(p.to_str().unwrap(), &Method::GET).unwrap().len(), 2);
    }
}
