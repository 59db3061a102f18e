//! What the request flags mean for every target of a run: the targets of URLs,
//! `--targets` or `--urls`, the method of `-X`, and the body (`--body`, `--body-size`,
//! `--form`) and headers (`-H`) the flags give them. Apart from `targets`, which reads
//! files, because this is where flags and files meet: a file's own body wins.

use crate::body::FormField;
use crate::plan::{Headers, Target};
use crate::units::Header;
use bytes::Bytes;

/// The request flags of a run, as the command line gives them.
#[derive(Clone, Debug, Default)]
pub struct RequestFlags {
    /// The run's URLs.
    pub urls: Vec<String>,
    /// `--targets FILE`.
    pub targets_file: Option<String>,
    /// `--urls FILE`.
    pub urls_file: Option<String>,
    /// `-X`.
    pub method: Option<String>,
    /// `-H`, repeated.
    pub headers: Vec<Header>,
    /// `--body TEXT|@FILE`.
    pub body: Option<String>,
    /// `--body-size`.
    pub body_size: Option<u64>,
    /// `--body-pattern`.
    pub body_pattern: Option<String>,
    /// `--body-unique`.
    pub body_unique: bool,
    /// `--form`, repeated.
    pub form: Vec<FormField>,
    /// `--seed`: of generated bodies too.
    pub seed: u64,
}

impl RequestFlags {
    /// The targets from the command line, `--targets` or `--urls`, with the method of `-X`.
    pub fn targets(&self) -> Result<Vec<Target>, String> {
        let method = &self.method()?;
        if let Some(path) = &self.targets_file {
            return crate::targets::read_targets(path).map_err(|e| format!("--targets {e}"));
        }
        if let Some(path) = &self.urls_file {
            return crate::targets::read_urls(path, method).map_err(|e| format!("--urls {e}"));
        }
        self.urls.iter().map(|u| Target::new(method.clone(), u)).collect()
    }

    /// `targets` with the flags' body and headers: flags add to what a target file says; a
    /// file's own body wins, and the flags' body goes only where a body belongs (see
    /// [`takes_body`]), and must go somewhere.
    pub fn apply(&self, mut targets: Vec<Target>) -> Result<Vec<Target>, String> {
        let body = self.body()?;
        let mut headers = http::HeaderMap::new();
        for h in &self.headers {
            headers.append(h.0.clone(), h.1.clone());
        }
        let from_file = self.targets_file.is_some();
        let mut given = 0;
        let mut with_flags = FlagHeaders::new(&headers);
        for t in &mut targets {
            let content_type = match body.as_ref().filter(|_| takes_body(t, from_file)) {
                Some(body) => {
                    body.apply(t);
                    given += 1;
                    body.content_type.as_ref()
                }
                None => None,
            };
            t.headers = with_flags.of(&t.headers, content_type);
        }
        if let (Some(body), Some(path), 0) = (&body, &self.targets_file, given) {
            return Err(format!(
                "{} given, but no target in --targets {path} takes a body: it goes to POST, PUT and PATCH targets without a body of their own",
                body.flag
            ));
        }
        Ok(targets)
    }

    /// `-X`, or as curl: GET, POST when a body or form is given.
    fn method(&self) -> Result<http::Method, String> {
        let has_body = self.body.is_some() || self.body_size.is_some() || !self.form.is_empty();
        match &self.method {
            Some(m) => http::Method::from_bytes(m.as_bytes())
                .map_err(|_| format!("invalid -X '{m}': expected a method such as GET, POST, PUT")),
            None if has_body => Ok(http::Method::POST),
            None => Ok(http::Method::GET),
        }
    }

    /// The body from --body, --body-size or --form, if one is given.
    fn body(&self) -> Result<Option<FlagBody>, String> {
        if !self.form.is_empty() {
            let (bytes, content_type) = crate::body::multipart(&self.form)?;
            let content_type = Some(http::HeaderValue::from_str(&content_type).map_err(|e| e.to_string())?);
            return Ok(Some(FlagBody { flag: "--form", bytes, unique_len: None, content_type }));
        }
        if let Some(size) = self.body_size {
            let src =
                crate::BodySource::generated(size as usize, self.body_pattern.as_deref(), self.body_unique, self.seed);
            return Ok(Some(FlagBody {
                flag: "--body-size",
                bytes: src.bytes,
                unique_len: src.unique_len,
                content_type: None,
            }));
        }
        let Some(body) = self.body.as_deref() else { return Ok(None) };
        let bytes = match body.strip_prefix('@') {
            Some(path) => crate::body::read_body_file(path.as_ref()).map_err(|e| format!("--body @{path}: {e}"))?,
            None => Bytes::copy_from_slice(body.as_bytes()),
        };
        Ok(Some(FlagBody { flag: "--body", bytes, unique_len: None, content_type: None }))
    }
}

/// Whether the flags' body goes to `t`. Without a target file every target has the
/// method of the flags, so it takes the body (as curl, even with `-X GET`). From a target
/// file, only a target whose method carries a body (POST, PUT, PATCH) and that has no body
/// of its own takes it: the file's GETs stay plain GETs (Vegeta's `-body` would give them
/// the body too, which no server expects of a GET).
fn takes_body(t: &Target, from_file: bool) -> bool {
    use http::Method;
    !from_file || (t.body.is_empty() && matches!(t.method, Method::POST | Method::PUT | Method::PATCH))
}

/// The body the flags give: from --body, --body-size or --form.
struct FlagBody {
    /// The flag it came from, for messages.
    flag: &'static str,
    bytes: Bytes,
    unique_len: Option<usize>,
    /// A form's `multipart/form-data; boundary=…`.
    content_type: Option<http::HeaderValue>,
}

impl FlagBody {
    /// Gives `t` this body (its form's Content-Type goes with the flags' headers).
    fn apply(&self, t: &mut Target) {
        t.body = self.bytes.clone();
        t.body_unique_len = self.unique_len;
    }
}

/// Targets' headers with the flags' added, made once for each map the targets share: a
/// million targets of a list keep sharing one map (a map each took 660 bytes a target).
struct FlagHeaders<'a> {
    flags: &'a http::HeaderMap,
    /// The headers made from each shared map (held, so its address stays its own), with
    /// a form's Content-Type or without.
    made: std::collections::HashMap<(*const http::HeaderMap, bool), (Headers, Headers)>,
}

impl<'a> FlagHeaders<'a> {
    fn new(flags: &'a http::HeaderMap) -> FlagHeaders<'a> {
        FlagHeaders { flags, made: Default::default() }
    }

    /// `own` with the flags' headers after it, and a form's `content_type` (replacing the
    /// target's own: the boundary must match the body) unless `-H Content-Type` was given.
    fn of(&mut self, own: &Headers, content_type: Option<&http::HeaderValue>) -> Headers {
        let key = (&**own as *const http::HeaderMap, content_type.is_some());
        let flags = self.flags;
        let (_, made) = self.made.entry(key).or_insert_with(|| {
            let mut headers = own.clone();
            for (k, v) in flags {
                headers.append(k.clone(), v.clone());
            }
            if let (Some(ct), false) = (content_type, flags.contains_key(http::header::CONTENT_TYPE)) {
                headers.insert(http::header::CONTENT_TYPE, ct.clone());
            }
            (own.clone(), headers)
        });
        made.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(method: http::Method, body: &'static [u8]) -> Target {
        let mut t = Target::new(method, "http://h/").unwrap();
        t.body = Bytes::from_static(body);
        t
    }

    /// The flags' method, and where their body goes: every target of URLs; from a file,
    /// only its POST, PUT and PATCH targets without a body of their own.
    #[test]
    fn the_flags_body_goes_where_a_body_belongs() {
        let urls = RequestFlags { urls: vec!["http://h/".into()], ..Default::default() };
        let with_body = RequestFlags { body: Some("x".into()), ..urls.clone() };
        assert_eq!(urls.targets().unwrap()[0].method, http::Method::GET);
        assert_eq!(with_body.targets().unwrap()[0].method, http::Method::POST);
        let bad = RequestFlags { method: Some("G T".into()), ..urls.clone() };
        assert!(bad.targets().unwrap_err().starts_with("invalid -X 'G T'"));
        let get_with_x = RequestFlags { method: Some("GET".into()), ..with_body.clone() };
        assert_eq!(&get_with_x.apply(get_with_x.targets().unwrap()).unwrap()[0].body[..], b"x");
        // From a file: (method, its own body, what it sends)
        let from_file = RequestFlags { targets_file: Some("t.txt".into()), ..with_body.clone() };
        for (method, own, sent) in [
            (http::Method::POST, &b""[..], &b"x"[..]),
            (http::Method::PUT, b"", b"x"),
            (http::Method::POST, b"mine", b"mine"),
            (http::Method::GET, b"", b""),
        ] {
            let t = from_file.apply(vec![target(method.clone(), own), target(http::Method::PATCH, b"")]).unwrap();
            assert_eq!(&t[0].body[..], sent, "{method} {own:?}");
        }
        let e = from_file.apply(vec![target(http::Method::GET, b"")]).unwrap_err();
        assert!(e.starts_with("--body given, but no target in --targets t.txt takes a body"), "{e}");
    }

    /// The flags' headers follow a target's own, once per map the targets share.
    #[test]
    fn the_flags_headers_follow_a_targets_own_and_stay_shared() {
        let flags = RequestFlags { headers: vec!["X-A: 1".parse().unwrap()], ..Default::default() };
        let t = flags.apply(vec![target(http::Method::GET, b""), target(http::Method::GET, b"")]).unwrap();
        assert_eq!(t[0].headers.get("x-a").unwrap(), "1");
        assert!(t[0].headers.same(&t[1].headers), "one map for both");
    }
}
