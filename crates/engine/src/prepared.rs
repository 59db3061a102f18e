//! The prepared request: a target made ready to send once per run (its HTTP/1.1 head and
//! HTTP/2 header block encoded, its headers and endpoint worked out, what targets have alike
//! shared), and the one path builder the three encoders share. Below the slot and the
//! attempt, which send what is prepared here; uses the conn and http floors.

use crate::conn::Endpoint;
use crate::http::h1_encode;
use crate::http::h2::template as h2_encode;
use barrage_metrics::secrets::Redaction;
use barrage_plan::{IdTemplate, Plan, Target};
use bytes::Bytes;
use http::header::{HeaderName, HeaderValue, AUTHORIZATION, CONNECTION, HOST};
use http::{HeaderMap, Method, Uri};
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// A target made ready to send: its HTTP/1.1 head and HTTP/2 header block encoded, the
/// absolute URI for HTTP/3, headers with Host, its endpoint. What it has alike with other
/// targets (its headers, most of its head) it shares with them: a run holds a million.
pub struct Prepared {
    pub(crate) method: Method,
    /// The HTTP/1.1 request head, encoded once.
    h1: h1_encode::Template,
    /// The HTTP/2 request header block, encoded once, for a run that speaks HTTP/2.
    h2: Option<Box<h2_encode::Template>>,
    /// Absolute form, for HTTP/3 (`:scheme` and `:authority` come from it) and a flow's
    /// steps (an unfilled path, the log's URL of a filled one); `None` for other runs.
    full_uri: Option<Box<Uri>>,
    /// Its headers, for the runs that send them as maps per request (a flow's steps, and
    /// HTTP/3); `None` for others, which send them encoded in `h1` and `h2`.
    head: Option<Arc<Head>>,
    body: barrage_plan::BodySource,
    /// A URL template's path-and-query around `{id}`, filled per request.
    pub(crate) template: Option<Box<IdTemplate>>,
    /// The name, for the request log and the figures by name.
    pub(crate) name: Option<Arc<str>>,
    /// The URL as given (a template keeps `{id}`), redacted, for the request log and the
    /// client spans: only when there is one of them.
    pub(crate) url_text: Option<Box<str>>,
    /// Index into the run's endpoints.
    pub endpoint: usize,
}

/// The headers a target sends, with Host and what its URL implies: the same for the
/// targets of one authority given the same headers (a list's million, usually).
struct Head {
    headers: HeaderMap,
    /// `headers` as HTTP/2 and HTTP/3 send them: without Host (the authority is a
    /// pseudo-header) and connection headers (forbidden), made once rather than per request.
    h2_headers: HeaderMap,
}

/// The most heads, and encoded parts of heads, kept to share while preparing: the targets
/// beyond a run's first this many distinct ones (a header of its own each) have their own.
const SHARED_HEADS: usize = 4096;

/// What the targets of a run have alike, each made once and shared while they are
/// prepared: heads, encoded parts of requests, endpoints. Looked up by what the
/// plan's targets hold, borrowed.
struct Alike<'a> {
    plan: &'a Plan,
    /// Heads by the target's headers (the map the plan's targets share) and authority.
    heads: HashMap<(*const HeaderMap, &'a str), Arc<Head>>,
    /// The run sends the header maps per request (see [`Prepared::head`]).
    keeps_heads: bool,
    /// Encoded parts of requests, by their bytes.
    bytes: HashSet<Arc<[u8]>>,
    /// Indexes of endpoints by host, port and TLS.
    endpoint_of: HashMap<(&'a str, u16, bool), usize>,
    endpoints: Vec<Endpoint>,
}

/// The keys a group's figures go under: its own (flows) and each of its flow's steps'
/// (by step index), made once per run so no request formats one.
pub struct GroupKeys {
    /// The group's name.
    pub group: Box<[u8]>,
    /// Its steps' keys: the step's name, or `group/step` when there are several groups.
    pub steps: Vec<Box<[u8]>>,
}

/// The keys of every group of the plan's scenario (none without one).
pub fn group_keys(plan: &Plan) -> Vec<GroupKeys> {
    let Some(s) = &plan.scenario else { return Vec::new() };
    let keys = |g: usize| GroupKeys {
        group: s.groups[g].name.as_bytes().into(),
        steps: s.flows[s.groups[g].flow].steps.iter().map(|step| s.step_key(g, step).into_bytes().into()).collect(),
    };
    (0..s.groups.len()).map(keys).collect()
}

/// A request to send: a prepared target, with its template's id and its number in the
/// run's stream, or a flow's step with what its variables filled.
pub(crate) struct Outgoing<'a> {
    pub target: &'a Prepared,
    /// A template's id.
    pub id: u64,
    /// The request's number in the run's stream (a unique body's window).
    pub number: u64,
    /// A flow's step: its filled path, headers and body.
    pub filled: Option<&'a Filled>,
    /// `--trace-context`: its `traceparent` and `tracestate`.
    pub trace: Option<crate::trace::TraceHeaders<'a>>,
}

/// What a flow's variables filled in a step's request.
#[derive(Default)]
pub(crate) struct Filled {
    /// The path and query, percent-encoded where needed.
    pub path: Option<String>,
    /// Headers added to the target's.
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// The body, instead of the target's.
    pub body: Option<Bytes>,
}

/// Prepares the plan's targets; returns them and the distinct endpoints they use. With a
/// request log, each keeps its URL as `log` (the log's redaction) shows it.
pub fn prepare(plan: &Plan, log: Option<&Redaction>) -> (Arc<[Prepared]>, Vec<Endpoint>) {
    let mut alike = Alike {
        plan,
        heads: HashMap::new(),
        keeps_heads: matches!(plan.protocol, barrage_plan::Protocol::Http3 { .. }) || plan.scenario.is_some(),
        bytes: HashSet::new(),
        endpoint_of: HashMap::new(),
        endpoints: Vec::new(),
    };
    let prepared = plan.targets.iter().map(|t| alike.prepare(t, log)).collect();
    (prepared, alike.endpoints)
}

impl<'a> Alike<'a> {
    fn prepare(&mut self, t: &'a Target, log: Option<&Redaction>) -> Prepared {
        let (full_uri, user_info) = split_user_info(&t.url);
        let head = self.head(t, &full_uri, user_info);
        let path = origin_form(&full_uri);
        let template = t.id_template.clone().map(|mut tpl| {
            if !tpl.prefix.starts_with('/') {
                tpl.prefix.insert(0, '/');
            }
            tpl
        });
        let body = barrage_plan::BodySource { bytes: t.body.clone(), unique_len: t.body_unique_len };
        let h1_path = match &template {
            Some(tpl) => (tpl.prefix.as_str(), Some(tpl.suffix.as_str())),
            None => (&*path, None),
        };
        let rest = self.bytes(h1_encode::Template::rest(&head.headers, body.len()));
        let h1 = h1_encode::Template::new(&t.method, h1_path, rest);
        let h2 = matches!(self.plan.protocol, barrage_plan::Protocol::Http2 { .. }).then(|| {
            let pseudo = self.bytes(h2_encode::Template::pseudo_headers(&t.method, &full_uri));
            let after = self.bytes(h2_encode::Template::fields(&head.h2_headers));
            Box::new(h2_encode::Template::new(pseudo, template.is_none().then_some(&*path), after))
        });
        Prepared {
            method: t.method.clone(),
            h1,
            h2,
            full_uri: self.keeps_heads.then(|| Box::new(full_uri.clone().into_owned())),
            head: self.keeps_heads.then_some(head),
            body,
            template,
            name: t.name.clone(),
            url_text: log.map(|redaction| redaction.url(&t.url_text()).into()),
            endpoint: self.endpoint(&t.url),
        }
    }

    /// The head of target `t` (`url` without user info; `user_info` its URL's).
    fn head(&mut self, t: &'a Target, url: &Uri, user_info: Option<&str>) -> Arc<Head> {
        let key = (&*t.headers as *const HeaderMap, t.url.authority().map_or("", |a| a.as_str()));
        if let Some(shared) = self.heads.get(&key) {
            return shared.clone();
        }
        let head = Arc::new(self.make_head(t, url, user_info));
        if self.heads.len() < SHARED_HEADS {
            self.heads.insert(key, head.clone());
        }
        head
    }

    /// The head of target `t`, made: its headers with Host and what its URL (`url`, without
    /// its `user_info`) and the plan imply.
    fn make_head(&self, t: &Target, url: &Uri, user_info: Option<&str>) -> Head {
        let plan = self.plan;
        let mut headers = (*t.headers).clone();
        if !headers.contains_key(HOST) {
            if let Some(auth) = url.authority() {
                headers.insert(HOST, HeaderValue::from_str(auth.as_str()).expect("an authority is a valid header"));
            }
        }
        if let (Some(credentials), false) = (user_info, headers.contains_key(AUTHORIZATION)) {
            // As curl and Go's net/http (so Vegeta) do: the URL's user and password
            // authenticate by Basic unless an Authorization header says otherwise.
            headers.insert(AUTHORIZATION, basic_auth(credentials));
        }
        if let barrage_plan::Protocol::Http1 { keepalive: false } = plan.protocol {
            // Let the server close first so TIME_WAIT piles up on its side, not ours.
            headers.insert(CONNECTION, HeaderValue::from_static("close"));
        }
        // Built anew, not cloned and trimmed: an empty map then holds no allocation, so
        // cloning it per request costs none.
        let h2_headers: HeaderMap = headers
            .iter()
            .filter(|(name, _)| *name != HOST && *name != CONNECTION)
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect();
        Head { headers, h2_headers }
    }

    /// `bytes`, shared with the targets before that encoded the same (while they are few:
    /// a head of its own for each target would only fill the set).
    fn bytes(&mut self, bytes: Vec<u8>) -> Arc<[u8]> {
        if let Some(shared) = self.bytes.get(&bytes[..]) {
            return shared.clone();
        }
        let shared: Arc<[u8]> = bytes.into();
        if self.bytes.len() < SHARED_HEADS {
            self.bytes.insert(shared.clone());
        }
        shared
    }

    /// The index of `url`'s endpoint among the run's.
    fn endpoint(&mut self, url: &'a Uri) -> usize {
        let tls = url.scheme_str() == Some("https");
        let host = url.host().unwrap_or("").trim_start_matches('[').trim_end_matches(']');
        let port = url.port_u16().unwrap_or(if tls { 443 } else { 80 });
        let (plan, endpoints) = (self.plan, &mut self.endpoints);
        *self.endpoint_of.entry((host, port, tls)).or_insert_with(|| {
            endpoints.push(Endpoint::of(url, plan));
            endpoints.len() - 1
        })
    }
}

/// The path and query of `url` as a request line has them: `http://host?x=1` has the query
/// but no path, so its request target is `/?x=1`.
fn origin_form(url: &Uri) -> Cow<'_, str> {
    let path = url.path_and_query().map_or("/", |p| p.as_str());
    if path.starts_with('/') {
        Cow::Borrowed(path)
    } else {
        Cow::Owned(format!("/{path}"))
    }
}

/// `url` without its user info (never sent in `Host` or HTTP/2's `:authority`), and that
/// user info (`user:password`, still percent-encoded) when there is one. Borrowed when
/// there is none: a clone would make each of a million URLs' buffers shared, 32 bytes more.
fn split_user_info(url: &Uri) -> (Cow<'_, Uri>, Option<&str>) {
    let Some((user_info, host)) = url.authority().and_then(|a| a.as_str().rsplit_once('@')) else {
        return (Cow::Borrowed(url), None);
    };
    let mut parts = url.clone().into_parts();
    parts.authority = Some(host.parse().expect("the host part of a valid authority is valid"));
    (Cow::Owned(Uri::from_parts(parts).expect("valid parts")), Some(user_info))
}

/// `Authorization: Basic …` for a URL's `user:password` (percent-decoded, as curl does).
fn basic_auth(user_info: &str) -> HeaderValue {
    use base64::Engine;
    let (user, password) = user_info.split_once(':').unwrap_or((user_info, ""));
    let decode = |s: &str| percent_encoding::percent_decode_str(s).collect::<Vec<u8>>();
    let mut credentials = decode(user);
    credentials.push(b':');
    credentials.extend(decode(password));
    let encoded = base64::engine::general_purpose::STANDARD.encode(credentials);
    let mut value = HeaderValue::from_str(&format!("Basic {encoded}")).expect("base64 is a valid header value");
    value.set_sensitive(true);
    value
}

impl Prepared {
    /// The absolute URI, which an HTTP/3 run's and a flow's targets keep.
    pub(crate) fn full_uri(&self) -> &Uri {
        self.full_uri.as_deref().expect("an HTTP/3 run's and a flow's targets keep their URI")
    }

    /// The header maps, which an HTTP/3 run's and a flow's targets keep.
    fn head(&self) -> &Head {
        self.head.as_deref().expect("an HTTP/3 run's and a flow's targets keep their headers")
    }

    /// Whether the request is a HEAD (its response has no body).
    pub(crate) fn is_head(&self) -> bool {
        self.method == Method::HEAD
    }

    /// Encodes the HTTP/1.1 request `out` asks for into `head`: the target's head with a
    /// template's id (or the head of a flow's step, with what its variables filled), and a
    /// small body behind it. Returns the body to write after `head`: a large one, from its
    /// shared buffer.
    pub(crate) fn h1_request<'a>(&'a self, out: &Outgoing<'a>, head: &mut Vec<u8>) -> &'a [u8] {
        let body: &[u8] = match out.filled.and_then(|f| f.body.as_ref()) {
            Some(filled) => filled,
            None => self.body.window(out.number),
        };
        match out.filled {
            Some(filled) => {
                let path = match (&filled.path, &self.template) {
                    (Some(path), _) => Cow::Borrowed(path.as_str()),
                    (None, Some(tpl)) => Cow::Owned(format!("{}{}{}", tpl.prefix, out.id, tpl.suffix)),
                    (None, None) => origin_form(self.full_uri()),
                };
                let headers = &self.head().headers;
                h1_encode::encode_head(head, &self.method, &path, headers, &filled.headers, body.len());
            }
            None => self.h1.write(out.id, head),
        }
        if let Some(trace) = &out.trace {
            crate::trace::put_h1(trace, head);
        }
        if h1_encode::copies_body(body.len()) {
            head.extend_from_slice(body);
            return &[];
        }
        body
    }

    /// The body `out` sends over HTTP/2 or HTTP/3 (a reference-counted slice of the run's, never a
    /// copy).
    pub(crate) fn body(&self, out: &Outgoing<'_>) -> Bytes {
        match out.filled.and_then(|f| f.body.clone()) {
            Some(filled) => filled,
            None => self.body.body(out.number),
        }
    }

    /// Appends the HTTP/2 header block `out` asks for: the target's, with a template's id
    /// in its path (or a flow's filled path and headers).
    pub(crate) fn h2_block(&self, out: &Outgoing<'_>, block: &mut Vec<u8>) {
        let mut digits = itoa::Buffer::new();
        let filled_path = out.filled.and_then(|f| f.path.as_deref());
        let id_path;
        let path: Option<&[&[u8]]> = match (filled_path, &self.template) {
            (Some(path), _) => {
                id_path = [path.as_bytes(), &[], &[]];
                Some(&id_path[..1])
            }
            (None, Some(tpl)) => {
                id_path = [tpl.prefix.as_bytes(), digits.format(out.id).as_bytes(), tpl.suffix.as_bytes()];
                Some(&id_path)
            }
            (None, None) => None,
        };
        let extra = out.filled.map(|f| &f.headers[..]).unwrap_or_default();
        let h2 = self.h2.as_ref().expect("a run that speaks HTTP/2 prepares its targets for it");
        h2.write(path, extra.iter().map(|(n, v)| (n, v)), block);
        if let Some(trace) = &out.trace {
            crate::trace::put_h2(trace, block);
        }
    }

    /// The HTTP/3 request `out` asks for, without its body: the absolute URI
    /// (`:scheme` and `:authority` come from it), with what a flow filled in.
    pub(crate) fn h3_head(&self, out: &Outgoing<'_>) -> http::Request<()> {
        let mut req = http::Request::new(());
        *req.method_mut() = self.method.clone();
        *req.version_mut() = http::Version::HTTP_3;
        let path = match (out.filled.and_then(|f| f.path.as_deref()), &self.template) {
            (Some(path), _) => Some(Cow::Borrowed(path)),
            (None, Some(tpl)) => Some(Cow::Owned(format!("{}{}{}", tpl.prefix, out.id, tpl.suffix))),
            (None, None) => None,
        };
        *req.uri_mut() = match path {
            Some(path) => {
                let mut parts = self.full_uri().clone().into_parts();
                parts.path_and_query = Some(path.parse().expect("a template's or a filled path is checked valid"));
                Uri::from_parts(parts).expect("valid parts")
            }
            None => self.full_uri().clone(),
        };
        let mut headers = self.head().h2_headers.clone();
        if let Some(filled) = out.filled {
            for (name, value) in &filled.headers {
                headers.append(name.clone(), value.clone());
            }
        }
        if let Some(trace) = &out.trace {
            crate::trace::put_h3(trace, &mut headers);
        }
        *req.headers_mut() = headers;
        req
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use barrage_plan::{Load, Target};
    use std::time::Duration;

    /// The HTTP/1.1 bytes a target's request goes out as.
    fn sent(t: &Target, out: impl FnOnce(&Prepared) -> (u64, u64, Option<Filled>)) -> String {
        let mut plan = Plan::new(vec![t.clone()], Load::Closed { concurrency: 1, think_time: Duration::ZERO });
        // Keeps the header maps a flow's step sends per request, as an HTTP/3 run does.
        plan.protocol = barrage_plan::Protocol::http3(1);
        let (prepared, _) = prepare(&plan, None);
        let (id, number, filled) = out(&prepared[0]);
        let outgoing = Outgoing { target: &prepared[0], id, number, filled: filled.as_ref(), trace: None };
        let mut head = Vec::new();
        let body = prepared[0].h1_request(&outgoing, &mut head).to_vec();
        head.extend(body);
        String::from_utf8_lossy(&head).into_owned()
    }

    /// The HTTP/2 header block a target's request goes out as, decoded.
    fn h2_sent(t: &Target, id: u64, filled: Option<Filled>) -> Vec<(String, String)> {
        let mut plan = Plan::new(vec![t.clone()], Load::Closed { concurrency: 1, think_time: Duration::ZERO });
        plan.protocol = barrage_plan::Protocol::http2(1);
        let (prepared, _) = prepare(&plan, None);
        let outgoing = Outgoing { target: &prepared[0], id, number: 0, filled: filled.as_ref(), trace: None };
        let mut block = Vec::new();
        prepared[0].h2_block(&outgoing, &mut block);
        crate::http::hpack::decode_list(&block)
    }

    /// A list's targets share what they have alike: their headers, the head after their
    /// path, their endpoint (a map and a head each took over a KiB a target, and finding
    /// the endpoint compared each target with every endpoint before).
    #[test]
    fn targets_share_their_heads_and_endpoints() {
        let mut auth = Target::new(Method::GET, "http://a.test/3").unwrap();
        auth.headers.insert(AUTHORIZATION, HeaderValue::from_static("Bearer x"));
        let targets = vec![
            Target::new(Method::GET, "http://a.test/1").unwrap(),
            Target::new(Method::GET, "http://a.test/2").unwrap(),
            auth,
            Target::new(Method::GET, "http://b.test:81/1").unwrap(),
        ];
        let mut plan = Plan::new(targets, Load::Closed { concurrency: 1, think_time: Duration::ZERO });
        plan.protocol = barrage_plan::Protocol::http3(1);
        let (p, _) = prepare(&plan, None);
        let head = |i: usize| p[i].head.clone().unwrap();
        assert!(Arc::ptr_eq(&head(0), &head(1)) && !Arc::ptr_eq(&head(0), &head(2)));
        assert!(!Arc::ptr_eq(&head(0), &head(3)), "another authority, another Host");
        plan.protocol = barrage_plan::Protocol::http2(1);
        let (p, endpoints) = prepare(&plan, None);
        assert!(p.iter().all(|t| t.head.is_none()), "sent encoded, kept once");
        let h2 = |i: usize| p[i].h2.clone().unwrap().after_path();
        assert!(Arc::ptr_eq(&h2(0), &h2(1)) && !Arc::ptr_eq(&h2(0), &h2(2)));
        assert_eq!(
            endpoints.iter().map(|e| (e.host.as_str(), e.port)).collect::<Vec<_>>(),
            [("a.test", 80), ("b.test", 81)]
        );
        assert_eq!(p.iter().map(|t| t.endpoint).collect::<Vec<_>>(), [0, 0, 0, 1]);
        let sent = |i: usize| {
            let mut head = Vec::new();
            p[i].h1_request(&Outgoing { target: &p[i], id: 0, number: 0, filled: None, trace: None }, &mut head);
            String::from_utf8(head).unwrap()
        };
        assert_eq!(sent(1), "GET /2 HTTP/1.1\r\nhost: a.test\r\n\r\n");
        assert_eq!(sent(2), "GET /3 HTTP/1.1\r\nauthorization: Bearer x\r\nhost: a.test\r\n\r\n");
    }

    #[test]
    fn http2_blocks_are_encoded_from_the_target() {
        let pairs = |p: &[(&str, &str)]| p.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect::<Vec<_>>();
        let mut get = Target::new(Method::GET, "http://user:pw@127.0.0.1:1/a?b=c").unwrap();
        get.headers.insert("connection", HeaderValue::from_static("keep-alive"));
        assert_eq!(
            h2_sent(&get, 0, None),
            pairs(&[
                (":method", "GET"),
                (":scheme", "http"),
                (":authority", "127.0.0.1:1"),
                (":path", "/a?b=c"),
                ("authorization", "Basic dXNlcjpwdw=="),
            ])
        );
        let mut tpl = Target::new(Method::PUT, "https://127.0.0.1:1/obj/{id}?v=2").unwrap();
        tpl.id_template = Some(Box::new(barrage_plan::IdTemplate { prefix: "obj/".into(), suffix: "?v=2".into() }));
        let head = [(":method", "PUT"), (":scheme", "https"), (":authority", "127.0.0.1:1")];
        let with = |path: &str, extra: &[(&str, &str)]| {
            let mut p = pairs(&head);
            p.push((":path".into(), path.into()));
            p.extend(pairs(extra));
            p
        };
        assert_eq!(h2_sent(&tpl, 42, None), with("/obj/42?v=2", &[]));
        let filled = Filled {
            path: Some("/albums/7".into()),
            headers: vec![(http::HeaderName::from_static("x-token"), HeaderValue::from_static("t"))],
            body: None,
        };
        assert_eq!(h2_sent(&tpl, 5, Some(filled)), with("/albums/7", &[("x-token", "t")]));
        assert_eq!(h2_sent(&tpl, 5, Some(Filled::default())), with("/obj/5?v=2", &[]));
    }

    #[test]
    fn http1_requests_are_encoded_from_the_target() {
        let get = Target::new(Method::GET, "http://user:pw@127.0.0.1:1/a?b=c").unwrap();
        assert_eq!(
            sent(&get, |_| (0, 0, None)),
            "GET /a?b=c HTTP/1.1\r\nhost: 127.0.0.1:1\r\nauthorization: Basic dXNlcjpwdw==\r\n\r\n"
        );
        let mut tpl = Target::new(Method::GET, "http://127.0.0.1:1/obj/{id}?v=2").unwrap();
        tpl.id_template = Some(Box::new(barrage_plan::IdTemplate { prefix: "obj/".into(), suffix: "?v=2".into() }));
        assert_eq!(sent(&tpl, |_| (42, 0, None)), "GET /obj/42?v=2 HTTP/1.1\r\nhost: 127.0.0.1:1\r\n\r\n");
        // A unique body: request k's window, behind its length.
        let mut post = Target::new(Method::POST, "http://127.0.0.1:1/up").unwrap();
        post.body = Bytes::from_static(b"0123456789");
        post.body_unique_len = Some(4);
        assert_eq!(
            sent(&post, |_| (0, 3, None)),
            "POST /up HTTP/1.1\r\nhost: 127.0.0.1:1\r\ncontent-length: 4\r\n\r\n3456"
        );
        // A flow's step: what its variables filled, encoded per request.
        let filled = || Filled {
            path: Some("/albums/7".into()),
            headers: vec![(http::HeaderName::from_static("x-token"), HeaderValue::from_static("t"))],
            body: Some(Bytes::from_static(b"{}")),
        };
        assert_eq!(
            sent(&post, |_| (0, 3, Some(filled()))),
            "POST /albums/7 HTTP/1.1\r\nhost: 127.0.0.1:1\r\nx-token: t\r\ncontent-length: 2\r\n\r\n{}"
        );
        assert_eq!(
            sent(&tpl, |_| (5, 0, Some(Filled::default()))),
            "GET /obj/5?v=2 HTTP/1.1\r\nhost: 127.0.0.1:1\r\n\r\n"
        );
    }
}
