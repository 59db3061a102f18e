//! Trace context in the reports: the template that turns a trace id into a link to a
//! tracing UI (`--trace-url`, Jaeger's `http://localhost:16686/trace/{trace_id}`), and the
//! HTML page's section on what was sampled and the run's slowest sampled requests.
//!
//! The template is user input that ends up in a page's `href`s, so it is checked before
//! anything runs ([`TraceUrl`]'s `FromStr`): an http(s) URL, with `{trace_id}`, of characters
//! a URL may hold as they are. What is filled in is hex digits only, and the page escapes the
//! result all the same.
//!
//! ```
//! use barrage_report::TraceUrl;
//! let t: TraceUrl = "http://localhost:16686/trace/{trace_id}".parse().unwrap();
//! let id = "4bf92f3577b34da6e6e321c1ac7d8fc0";
//! assert_eq!(t.url(id, "6d31fb1a12141687").unwrap(), format!("http://localhost:16686/trace/{id}"));
//! assert!("http://x/\"><script>{trace_id}".parse::<TraceUrl>().is_err());
//! ```

use crate::html::esc;
use barrage_metrics::summary::{ExemplarRow, RunSummary};
use barrage_metrics::units::fmt_us;
use std::fmt::Write;
use std::str::FromStr;

/// What stands for the trace id in a template.
const TRACE_ID: &str = "{trace_id}";
/// What stands for the client span's id (the server span's parent).
const SPAN_ID: &str = "{span_id}";

/// A checked trace URL template: an http(s) URL containing `{trace_id}` and optionally
/// `{span_id}`, which [`TraceUrl::url`] replaces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceUrl(String);

impl FromStr for TraceUrl {
    type Err = String;

    /// Refuses, saying why: another scheme (a `javascript:` link would run in the page),
    /// no `{trace_id}`, no host, another `{placeholder}`, and any character a URL cannot
    /// hold unencoded (spaces, quotes, `<`, `>`: what could end an attribute or a tag).
    fn from_str(s: &str) -> Result<Self, String> {
        let lower = s.to_ascii_lowercase();
        let Some(rest) = ["http://", "https://"].iter().find_map(|p| lower.strip_prefix(p)) else {
            return Err(format!("'{s}' is not an http:// or https:// URL"));
        };
        if !s.contains(TRACE_ID) {
            return Err(format!("'{s}' has no {TRACE_ID} to replace (e.g. http://localhost:16686/trace/{TRACE_ID})"));
        }
        if rest.split(['/', '?', '#']).next().unwrap_or_default().is_empty() {
            return Err(format!("'{s}' has no host"));
        }
        let bare = s.replace(TRACE_ID, "").replace(SPAN_ID, "");
        if let Some(c) = bare.chars().find(|c| !allowed(*c)) {
            let what = if matches!(c, '{' | '}') {
                format!("'{c}': the only placeholders are {TRACE_ID} and {SPAN_ID}")
            } else {
                format!("{c:?}, which a URL holds only percent-encoded")
            };
            return Err(format!("'{s}' contains {what}"));
        }
        Ok(TraceUrl(s.to_string()))
    }
}

/// A character a URL may hold as it is (RFC 3986's unreserved, reserved and `%`).
fn allowed(c: char) -> bool {
    c.is_ascii_alphanumeric() || "-._~:/?#[]@!$&'()*+,;=%".contains(c)
}

impl TraceUrl {
    /// The template as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The template filled with these ids; `None` unless both are hex digits (as a run's
    /// are), so nothing else can reach a link.
    pub fn url(&self, trace_id: &str, span_id: &str) -> Option<String> {
        let hex = |id: &str| !id.is_empty() && id.chars().all(|c| c.is_ascii_hexdigit());
        (hex(trace_id) && hex(span_id)).then(|| self.0.replace(TRACE_ID, trace_id).replace(SPAN_ID, span_id))
    }
}

/// The "Trace context" section of a run's page, as the text report's lines: the share
/// sampled, the requests sampled, the bytes added to each, and the run's slowest sampled
/// requests, their trace ids linked through `links` (or shown as text to copy); empty
/// without trace context.
pub(crate) fn html_section(s: &RunSummary, links: Option<&TraceUrl>) -> String {
    let Some(t) = &s.trace_context else { return String::new() };
    let mut out = String::from("<section id=\"trace-context\"><h2>Trace context</h2>\n");
    let _ = writeln!(
        out,
        "<p>{:.2}% of requests sampled ({} requests); traceparent and tracestate added {} B to each request.</p>",
        t.sample * 100.0,
        crate::sections::thousands(t.requests_sampled),
        t.header_bytes_per_request
    );
    if t.slowest.is_empty() {
        out.push_str("<p class=\"hint\">No sampled request finished.</p></section>\n");
        return out;
    }
    out.push_str(
        "<div class=\"table-wrap\"><table class=\"data traces\">\n<caption>The slowest sampled requests</caption>\n\
         <thead><tr><th scope=\"col\">latency</th><th scope=\"col\">trace id</th>\
         <th scope=\"col\">span id</th><th scope=\"col\">ended</th></tr></thead>\n<tbody>\n",
    );
    for e in &t.slowest {
        let _ = writeln!(
            out,
            "<tr><td class=\"num\">{}</td><td>{}</td><td><code>{}</code></td><td class=\"num\">{:.1} s</td></tr>",
            esc(&fmt_us(e.latency_us as f64)),
            trace_cell(e, links),
            esc(&e.span_id),
            e.ended_s
        );
    }
    out.push_str("</tbody>\n</table></div>");
    let hint = match links {
        Some(t) => format!("Trace ids link to {}.", esc(t.as_str())),
        None => "Give --trace-url TEMPLATE (or BARRAGE_TRACE_URL) to make trace ids links to a tracing UI.".into(),
    };
    let _ = writeln!(
        out,
        "<p class=\"hint\">Ringed p99 points of the latency chart list their interval's slowest. {hint}</p></section>"
    );
    out
}

/// A trace id as a link through `links`, or as text to copy.
fn trace_cell(e: &ExemplarRow, links: Option<&TraceUrl>) -> String {
    match links.and_then(|t| t.url(&e.trace_id, &e.span_id)) {
        Some(url) => format!("<a class=\"trace-id\" href=\"{}\">{}</a>", esc(&url), esc(&e.trace_id)),
        None => format!("<code class=\"trace-id\">{}</code>", esc(&e.trace_id)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_are_checked() {
        let ok = [
            "http://localhost:16686/trace/{trace_id}",
            "HTTPS://tempo.example/explore?trace={trace_id}&span={span_id}",
            "https://ui.example:8443/t/{trace_id}#x",
        ];
        for t in ok {
            assert_eq!(t.parse::<TraceUrl>().unwrap().as_str(), t);
        }
        let bad = [
            ("javascript:alert(1)//{trace_id}", "not an http:// or https:// URL"),
            ("ftp://x/{trace_id}", "not an http:// or https:// URL"),
            ("http://localhost:16686/trace/", "has no {trace_id}"),
            ("http:///{trace_id}", "has no host"),
            ("http://x/\"><script>alert(1)</script>{trace_id}", "'\"', which a URL holds only percent-encoded"),
            ("http://x/{trace_id} y", "' ', which a URL holds only percent-encoded"),
            ("http://x/<{trace_id}", "'<', which"),
            ("http://x/{trace}/{trace_id}", "the only placeholders are {trace_id} and {span_id}"),
        ];
        for (t, why) in bad {
            let e = t.parse::<TraceUrl>().unwrap_err();
            assert!(e.contains(why), "{t}: {e}");
        }
    }

    #[test]
    fn only_hex_ids_are_filled_in() {
        let t: TraceUrl = "http://x/{trace_id}?s={span_id}".parse().unwrap();
        assert_eq!(t.url("ab12", "cd").unwrap(), "http://x/ab12?s=cd");
        assert_eq!(t.url("ab\"><", "cd"), None);
        assert_eq!(t.url("", "cd"), None);
    }
}
