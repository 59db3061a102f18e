//! The collector's live page (`GET /`): the run so far, as the caller renders it (the HTML
//! report of the copies), rendered when a browser asks and kept a while, so that a page
//! left open costs the collector a bounded share of its time however long the run.

use bytes::Bytes;
use http::{Response, StatusCode};
use http_body_util::Full;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Renders the page of the run in these copies (the second list: those of streams judged
/// lost, ended without a footer); `None` when they hold nothing to show yet.
pub type Render = Arc<dyn Fn(&[PathBuf], &[PathBuf]) -> Option<String> + Send + Sync>;

/// A page is rendered again at most this often...
const FRESH: Duration = Duration::from_secs(2);
/// ...and at most for a fifth of the time: a render reads every copy whole, which takes
/// longer as the run goes on.
const SHARE: u32 = 5;
/// Before the first data: a page that asks again.
const WAITING: &str = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta http-equiv=\"refresh\" content=\"2\"><title>barrage collect</title></head>\
<body><p>Waiting for the shards' first data.</p></body></html>\n";

/// The renderer and its last page.
pub(crate) struct Page {
    render: Render,
    last: tokio::sync::Mutex<Option<Rendered>>,
}

struct Rendered {
    at: Instant,
    took: Duration,
    html: Bytes,
}

impl Page {
    pub(crate) fn new(render: Render) -> Page {
        Page { render, last: tokio::sync::Mutex::new(None) }
    }

    /// The page of `files`, rendered again if the last one is stale. Rendering runs on the
    /// blocking pool: the shards' data posts are served meanwhile.
    pub(crate) async fn get(&self, files: Vec<PathBuf>, lost: Vec<PathBuf>) -> Response<Full<Bytes>> {
        let mut last = self.last.lock().await;
        if last.as_ref().is_none_or(|l| l.at.elapsed() >= FRESH.max(l.took * SHARE)) {
            let render = Arc::clone(&self.render);
            let began = Instant::now();
            if let Ok(Some(html)) = tokio::task::spawn_blocking(move || render(&files, &lost)).await {
                *last = Some(Rendered { at: Instant::now(), took: began.elapsed(), html: Bytes::from(html) });
            }
        }
        let (status, body) = match last.as_ref() {
            Some(l) => (StatusCode::OK, l.html.clone()),
            None => (StatusCode::SERVICE_UNAVAILABLE, Bytes::from_static(WAITING.as_bytes())),
        };
        Response::builder()
            .status(status)
            .header(http::header::CONTENT_TYPE, "text/html; charset=utf-8")
            .header(http::header::CACHE_CONTROL, "no-store")
            .body(Full::new(body))
            .expect("a valid response")
    }
}
