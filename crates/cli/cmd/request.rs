//! What each request of a run carries from the flags: the targets of URLs, `--targets` or
//! `--urls`, their method, and the flags' body and headers given to them.

use crate::args::{RequestArgs, RunArgs};
use barrage_engine::Target;
use barrage_plan::Headers;

/// The targets from the command line, `--targets` or `--urls`, with the method of `-X`.
pub fn targets(a: &RunArgs) -> anyhow::Result<Vec<Target>> {
    let method = &method(&a.request)?;
    if let Some(path) = &a.request.targets {
        return barrage_plan::targets::read_targets(path).map_err(|e| anyhow::anyhow!("--targets {e}"));
    }
    if let Some(path) = &a.request.urls_file {
        return barrage_plan::targets::read_urls(path, method).map_err(|e| anyhow::anyhow!("--urls {e}"));
    }
    a.target.urls.iter().map(|u| Target::new(method.clone(), u).map_err(|e| anyhow::anyhow!(e))).collect()
}

/// `targets` with the flags' body and headers: flags add to what a target file says; a
/// file's own body wins, and the flags' body goes only where a body belongs (see
/// [`takes_body`]), and must go somewhere.
pub fn with_flags(a: &RunArgs, mut targets: Vec<Target>) -> anyhow::Result<Vec<Target>> {
    let r = &a.request;
    let body = request_body(r)?;
    let mut headers = http::HeaderMap::new();
    for h in &r.headers {
        headers.append(h.0.clone(), h.1.clone());
    }
    let from_file = r.targets.is_some();
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
    if let (Some(body), Some(path), 0) = (&body, &r.targets, given) {
        anyhow::bail!(
            "{} given, but no target in --targets {path} takes a body: it goes to POST, PUT and PATCH targets without a body of their own",
            body.flag
        );
    }
    Ok(targets)
}

/// `-X`, or as curl: GET, POST when a body or form is given.
fn method(a: &RequestArgs) -> anyhow::Result<http::Method> {
    let has_body = a.body.is_some() || a.body_size.is_some() || !a.form.is_empty();
    match &a.method {
        Some(m) => http::Method::from_bytes(m.as_bytes())
            .map_err(|_| anyhow::anyhow!("invalid -X '{m}': expected a method such as GET, POST, PUT")),
        None if has_body => Ok(http::Method::POST),
        None => Ok(http::Method::GET),
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
    bytes: bytes::Bytes,
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

/// The body from --body, --body-size or --form, if one is given.
fn request_body(a: &RequestArgs) -> anyhow::Result<Option<FlagBody>> {
    if !a.form.is_empty() {
        let (bytes, content_type) = barrage_plan::body::multipart(&a.form).map_err(anyhow::Error::msg)?;
        let content_type = Some(http::HeaderValue::from_str(&content_type)?);
        return Ok(Some(FlagBody { flag: "--form", bytes, unique_len: None, content_type }));
    }
    if let Some(size) = a.body_size {
        let src = barrage_plan::BodySource::generated(size as usize, a.body_pattern.as_deref(), a.body_unique, a.seed);
        return Ok(Some(FlagBody {
            flag: "--body-size",
            bytes: src.bytes,
            unique_len: src.unique_len,
            content_type: None,
        }));
    }
    let Some(body) = a.body.as_deref() else { return Ok(None) };
    let bytes = match body.strip_prefix('@') {
        Some(path) => {
            barrage_plan::body::read_body_file(path.as_ref()).map_err(|e| anyhow::anyhow!("--body @{path}: {e}"))?
        }
        None => bytes::Bytes::copy_from_slice(body.as_bytes()),
    };
    Ok(Some(FlagBody { flag: "--body", bytes, unique_len: None, content_type: None }))
}
