//! The shard's side of the wire: one HTTP/1.1 request at a time to the collector, each
//! bounded in time, on a runtime of the caller's thread (a shard's reporter or its start).

use bytes::Bytes;
use http::{Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::{connect::HttpConnector, Client as Hyper};
use std::time::Duration;

/// The longest one exchange with the collector may take.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(10);
/// The most bytes of an answer the shard reads.
const ANSWER_BYTES: usize = 64 << 10;

/// Why an exchange with the collector failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// `--report-to` is not an http:// URL with a host.
    #[error("--report-to {0}: {1}")]
    Url(String, String),
    /// The collector could not be reached, or did not answer in time.
    #[error("the collector at {0}: {1}")]
    Unreachable(String, String),
    /// It answered, and said no (a shard it does not take), or is not a collector.
    #[error("the collector at {0} refused: {1}")]
    Refused(String, String),
}

/// A client of one collector.
pub struct Client {
    runtime: tokio::runtime::Runtime,
    hyper: Hyper<HttpConnector, Full<Bytes>>,
    base: String,
}

impl Client {
    /// A client of the collector at `url` (`http://host:port/`).
    pub fn new(url: &str) -> Result<Client, ClientError> {
        let uri: Uri = url.parse().map_err(|e| ClientError::Url(url.into(), format!("{e}")))?;
        if uri.scheme_str() != Some("http") || uri.host().is_none() {
            return Err(ClientError::Url(url.into(), "give the collector's http://HOST:PORT/".into()));
        }
        // The collector takes no credentials, and a URL is printed in messages: none in it.
        if uri.authority().is_some_and(|a| a.as_str().contains('@')) {
            return Err(ClientError::Url(
                "(redacted)".into(),
                "the collector takes no user or password in its URL".into(),
            ));
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| ClientError::Unreachable(url.into(), e.to_string()))?;
        let hyper = {
            let _in = runtime.enter();
            Hyper::builder(hyper_util::rt::TokioExecutor::new()).build_http()
        };
        Ok(Client { runtime, hyper, base: url.trim_end_matches('/').to_string() })
    }

    /// The collector's URL, as given.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// One request; its status and body.
    pub fn send(&self, method: Method, path: &str, body: Bytes) -> Result<(StatusCode, Bytes), ClientError> {
        let unreachable = |e: String| ClientError::Unreachable(self.base.clone(), e);
        let request = Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base))
            .body(Full::new(body))
            .map_err(|e| unreachable(e.to_string()))?;
        self.runtime.block_on(async {
            let exchange = async {
                let answer = self.hyper.request(request).await.map_err(|e| unreachable(cause(&e)))?;
                let status = answer.status();
                let body = Limited::new(answer.into_body(), ANSWER_BYTES)
                    .collect()
                    .await
                    .map_err(|e| unreachable(e.to_string()))?
                    .to_bytes();
                Ok((status, body))
            };
            tokio::time::timeout(EXCHANGE_TIMEOUT, exchange)
                .await
                .unwrap_or_else(|_| Err(unreachable(format!("no answer in {EXCHANGE_TIMEOUT:?}"))))
        })
    }

    /// A GET answered with JSON (`None` for 204).
    pub fn get<T: serde::de::DeserializeOwned>(&self, path: &str) -> Result<Option<T>, ClientError> {
        let (status, body) = self.send(Method::GET, path, Bytes::new())?;
        self.json(status, &body)
    }

    /// A POST of JSON answered with JSON.
    pub fn post<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
        value: &impl serde::Serialize,
    ) -> Result<Option<T>, ClientError> {
        let body = serde_json::to_vec(value).expect("our own values encode");
        let (status, body) = self.send(Method::POST, path, body.into())?;
        self.json(status, &body)
    }

    /// An answer that is not a success: the collector's `{"error": …}`, or, without one,
    /// what answered is not a collector (a web server's 404 page).
    pub fn refusal(status: StatusCode, body: &[u8], asked: &str) -> String {
        let said: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
        let why = said["error"].as_str().map(str::to_string);
        why.unwrap_or_else(|| format!("it answers {status} to {asked}: not a barrage collector"))
    }

    fn json<T: serde::de::DeserializeOwned>(&self, status: StatusCode, body: &[u8]) -> Result<Option<T>, ClientError> {
        if status == StatusCode::NO_CONTENT {
            return Ok(None);
        }
        if !status.is_success() {
            return Err(ClientError::Refused(self.base.clone(), Client::refusal(status, body, "a shard's request")));
        }
        serde_json::from_slice(body).map(Some).map_err(|_| {
            ClientError::Refused(
                self.base.clone(),
                format!("it answers {status} without a collector's JSON: not a barrage collector"),
            )
        })
    }
}

/// The innermost cause of a failed request ("Connection refused (os error 111)"): hyper's
/// own message ("client error (Connect)") names none.
fn cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut inner = e;
    while let Some(next) = inner.source() {
        inner = next;
    }
    inner.to_string()
}
