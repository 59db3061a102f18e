//! The origin seen from outside: real sockets on 127.0.0.1:0, hyper clients.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use barrage_server::{LatencyDist, RunningServer, ServeConfig, ServeError, SizeDist, Stall};
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, Version};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};

/// Every test finishes within this, or fails.
const TEST_LIMIT: Duration = Duration::from_secs(20);

type HttpClient = Client<HttpConnector, Full<Bytes>>;

fn bounded<F: Future>(test: F) -> F::Output {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async { tokio::time::timeout(TEST_LIMIT, test).await.expect("test timed out") })
}

fn start(config: ServeConfig) -> RunningServer {
    RunningServer::start(ServeConfig { threads: 2, ..config }).expect("server starts")
}

fn client() -> HttpClient {
    Client::builder(TokioExecutor::new()).build_http()
}

/// Sends a request and returns the response with its whole body.
async fn send(client: &HttpClient, method: Method, url: String, body: &'static str) -> Response<Bytes> {
    let req = Request::builder().method(method).uri(url).body(Full::from(body)).unwrap();
    let resp = client.request(req).await.expect("request succeeds");
    let (parts, body) = resp.into_parts();
    Response::from_parts(parts, body.collect().await.unwrap().to_bytes())
}

async fn get(client: &HttpClient, url: String) -> Response<Bytes> {
    send(client, Method::GET, url, "").await
}

fn header<'a>(resp: &'a Response<Bytes>, name: &str) -> Option<&'a str> {
    resp.headers().get(name).map(|v| v.to_str().unwrap())
}

#[test]
fn bytes_status_and_counting() {
    let server = start(ServeConfig::default());
    let url = server.url();
    bounded(async {
        let client = client();
        let resp = get(&client, format!("{url}/bytes/1k")).await;
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(header(&resp, "content-length"), Some("1024"));
        assert_eq!(resp.body().len(), 1024);
        assert!(header(&resp, "date").is_some());

        let big = get(&client, format!("{url}/bytes/3m")).await;
        assert_eq!(big.body().len(), 3 << 20);

        let head = send(&client, Method::HEAD, format!("{url}/bytes/1k"), "").await;
        assert_eq!(header(&head, "content-length"), Some("1024"));
        assert!(head.body().is_empty());

        let resp = get(&client, format!("{url}/status/503")).await;
        assert_eq!(resp.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(get(&client, format!("{url}/status/42")).await.status(), StatusCode::BAD_REQUEST);
        assert_eq!(get(&client, format!("{url}/bytes/2g")).await.status(), StatusCode::BAD_REQUEST);
        assert_eq!(get(&client, format!("{url}/delay/1")).await.status(), StatusCode::OK);

        assert_eq!(server.requests(), 7);
        let stats = get(&client, format!("{url}/_barrage/stats")).await;
        assert_eq!(stats.body(), "{\"requests\": 7, \"albums\": {\"created\": 0, \"read\": 0, \"not_found\": 0, \"rejected\": 0, \"failed\": 0}}\n");
        assert_eq!(server.requests(), 7, "stats requests are not counted");
    });
}

#[test]
fn objects_are_deterministic() {
    let server = start(ServeConfig { object_size: SizeDist::Uniform(1, 64 << 10), ..Default::default() });
    let url = server.url();
    bounded(async {
        let client = client();
        let first = get(&client, format!("{url}/obj/7")).await;
        let again = get(&client, format!("{url}/obj/7")).await;
        let other = get(&client, format!("{url}/obj/8")).await;
        let etag = header(&first, "etag").expect("objects have an ETag");
        assert_eq!(header(&again, "etag"), Some(etag));
        assert_eq!(first.body(), again.body());
        assert_ne!(header(&other, "etag"), Some(etag));
        assert_ne!(first.body(), other.body());

        let req = Request::get(format!("{url}/obj/7")).header("if-none-match", etag).body(Full::default()).unwrap();
        let revalidated = client.request(req).await.unwrap();
        assert_eq!(revalidated.status(), StatusCode::NOT_MODIFIED);
    });
}

#[test]
fn store_put_get_delete() {
    let server = start(ServeConfig::default());
    let url = server.url();
    bounded(async {
        let client = client();
        assert_eq!(get(&client, format!("{url}/")).await.body(), "ok\n");
        assert_eq!(get(&client, format!("{url}/things/a")).await.status(), StatusCode::NOT_FOUND);

        let put = send(&client, Method::PUT, format!("{url}/things/a"), "hello").await;
        assert_eq!(put.status(), StatusCode::CREATED);
        assert_eq!(get(&client, format!("{url}/things/a")).await.body(), "hello");

        let post = send(&client, Method::POST, format!("{url}/things/a"), "again").await;
        assert_eq!(post.status(), StatusCode::OK);
        assert_eq!(get(&client, format!("{url}/things/a")).await.body(), "again");

        let delete = send(&client, Method::DELETE, format!("{url}/things/a"), "").await;
        assert_eq!(delete.status(), StatusCode::NO_CONTENT);
        let delete = send(&client, Method::DELETE, format!("{url}/things/a"), "").await;
        assert_eq!(delete.status(), StatusCode::NOT_FOUND);

        let put_builtin = send(&client, Method::PUT, format!("{url}/bytes/1"), "x").await;
        assert_eq!(put_builtin.status(), StatusCode::METHOD_NOT_ALLOWED);
    });
}

#[test]
fn configured_headers_latency_and_errors() {
    let server = start(ServeConfig {
        name: Some("origin-1".into()),
        cache_control: Some("max-age=60".into()),
        latency: Some(LatencyDist::Fixed(Duration::from_millis(20))),
        ..Default::default()
    });
    let plain = start(ServeConfig::default());
    let failing = start(ServeConfig { error_rate: 1.0, ..Default::default() });
    bounded(async {
        let client = client();
        let started = Instant::now();
        let resp = get(&client, format!("{}/bytes/10", server.url())).await;
        let took = started.elapsed();
        assert!(took >= Duration::from_millis(20), "{took:?}");
        // The origin reports the delay it applied, by its own clock: within what the client
        // saw (give or take a histogram bucket, 16-32 µs here).
        let stats: serde_json::Value =
            serde_json::from_slice(get(&client, format!("{}/_barrage/stats", server.url())).await.body()).unwrap();
        let delay = &stats["delay_us"];
        assert_eq!(delay["count"], 1, "{stats}");
        let p50 = delay["p50"].as_u64().unwrap();
        assert!(p50 >= 20_000 && p50 <= took.as_micros() as u64 + 100, "{stats} within {took:?}");
        assert_eq!(header(&resp, "x-served-by"), Some("origin-1"));
        assert_eq!(header(&resp, "cache-control"), Some("max-age=60"));

        let resp = get(&client, format!("{}/bytes/10", plain.url())).await;
        assert_eq!(header(&resp, "x-served-by"), None);
        assert_eq!(header(&resp, "cache-control"), None);

        for _ in 0..5 {
            let resp = get(&client, format!("{}/", failing.url())).await;
            assert_eq!(resp.status(), StatusCode::INTERNAL_SERVER_ERROR);
        }
    });
}

#[test]
fn bad_configuration_is_reported() {
    let err = RunningServer::start(ServeConfig { error_rate: 1.5, ..Default::default() }).unwrap_err();
    assert!(matches!(err, ServeError::Config { field: "error_rate", .. }), "{err}");
    let err = RunningServer::start(ServeConfig { name: Some("a\nb".into()), ..Default::default() }).unwrap_err();
    assert!(matches!(err, ServeError::Config { field: "name", .. }), "{err}");

    let err = RunningServer::start(ServeConfig { max_concurrency: Some(0), ..Default::default() }).unwrap_err();
    assert!(matches!(err, ServeError::Config { field: "max_concurrency", .. }), "{err}");

    let taken = start(ServeConfig::default());
    let err = RunningServer::start(ServeConfig { listen: taken.addr(), ..Default::default() }).unwrap_err();
    assert!(matches!(err, ServeError::Bind { .. }), "{err}");
}

#[test]
fn h2c_prior_knowledge() {
    let server = start(ServeConfig::default());
    bounded(async {
        let tcp = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
        let (mut sender, conn) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp)).await.unwrap();
        tokio::spawn(conn);
        let req = Request::get(format!("{}/bytes/100", server.url())).body(Full::<Bytes>::default()).unwrap();
        let resp = sender.send_request(req).await.unwrap();
        assert_eq!(resp.version(), Version::HTTP_2);
        assert_eq!(resp.headers()["content-length"], "100");
        assert_eq!(resp.into_body().collect().await.unwrap().to_bytes().len(), 100);
    });
}

#[test]
fn tls_negotiates_h2_with_the_written_ca() {
    let server = start(ServeConfig { tls: true, ..Default::default() });
    let ca_path = server.ca_path().expect("TLS servers report their CA").to_path_buf();
    assert!(server.url().starts_with("https://127.0.0.1:"), "{}", server.url());
    // Not a name another user could have guessed and planted a link at (PID and port alone),
    // and a file of its own.
    let port = server.url().rsplit(':').next().unwrap().to_string();
    let guessable = format!("barrage-serve-ca-{}-{port}.pem", std::process::id());
    assert_ne!(ca_path.file_name().unwrap().to_string_lossy(), guessable);
    let meta = std::fs::symlink_metadata(&ca_path).unwrap();
    assert!(meta.is_file(), "{}", ca_path.display());
    bounded(async {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(CertificateDer::from_pem_file(&ca_path).unwrap()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        let connector = tokio_rustls::TlsConnector::from(Arc::new(config));

        let tcp = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
        let name = ServerName::try_from("127.0.0.1").unwrap();
        let tls = connector.connect(name, tcp).await.expect("the CA verifies the server");
        assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));

        let (mut sender, conn) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls)).await.unwrap();
        tokio::spawn(conn);
        let req = Request::get(format!("{}/bytes/1k", server.url())).body(Full::<Bytes>::default()).unwrap();
        let resp = sender.send_request(req).await.unwrap();
        assert_eq!(resp.version(), Version::HTTP_2);
        assert_eq!(resp.into_body().collect().await.unwrap().to_bytes().len(), 1024);
    });
    server.shutdown();
    assert!(!ca_path.exists(), "a CA written to the temp dir is removed at shutdown");
}

#[test]
fn stall_pauses_every_request_once() {
    let stall = Duration::from_millis(300);
    let server = start(ServeConfig { stall: Some(Stall { after_requests: 3, duration: stall }), ..Default::default() });
    let url = server.url();
    bounded(async {
        let client = client();
        for _ in 0..2 {
            let started = Instant::now();
            get(&client, format!("{url}/")).await;
            assert!(started.elapsed() < stall, "before the stall: {:?}", started.elapsed());
        }
        // The third request triggers the pause; a fourth sent while it lasts waits too.
        let trigger_sent = Instant::now();
        let trigger = tokio::spawn({
            let (client, url) = (client.clone(), url.clone());
            async move { get(&client, format!("{url}/")).await.status() }
        });
        while server.requests() < 3 {
            // Polling the counter, not sleeping in place of synchronisation.
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        assert_eq!(get(&client, format!("{url}/")).await.status(), StatusCode::OK);
        assert!(trigger_sent.elapsed() >= stall, "during the stall: {:?}", trigger_sent.elapsed());
        assert_eq!(trigger.await.unwrap(), StatusCode::OK);
        assert!(trigger_sent.elapsed() >= stall);

        let started = Instant::now();
        get(&client, format!("{url}/")).await;
        assert!(started.elapsed() < stall, "after the stall: {:?}", started.elapsed());
        assert_eq!(server.requests(), 5);
    });
}

#[test]
fn explicit_ca_path_is_kept() {
    let path = std::env::temp_dir().join(format!("barrage-server-test-ca-{}.pem", std::process::id()));
    let server = start(ServeConfig { tls: true, ca_out: Some(path.clone()), ..Default::default() });
    assert_eq!(server.ca_path(), Some(path.as_path()));
    server.shutdown();
    let pem = std::fs::read_to_string(&path).unwrap();
    assert!(pem.starts_with("-----BEGIN CERTIFICATE-----"));
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    use std::io::{Read, Write};
    let server = start(ServeConfig::default());
    let mut conn = std::net::TcpStream::connect(server.addr()).unwrap();
    conn.set_read_timeout(Some(TEST_LIMIT)).unwrap();
    let requests = "GET /bytes/3 HTTP/1.1\r\nHost: x\r\n\r\n\
                    GET /status/404 HTTP/1.1\r\nHost: x\r\n\r\n\
                    GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    conn.write_all(requests.as_bytes()).unwrap();
    let mut replies = Vec::new();
    conn.read_to_end(&mut replies).unwrap();
    let replies = String::from_utf8_lossy(&replies);
    // Bodies do not end in a newline, so find status lines by their prefix, not by line.
    let statuses: Vec<&str> = replies.match_indices("HTTP/1.1 ").map(|(at, _)| &replies[at..at + 12]).collect();
    assert_eq!(statuses, ["HTTP/1.1 200", "HTTP/1.1 404", "HTTP/1.1 200"]);
    assert!(replies.ends_with("\r\n\r\nok\n"));
    assert_eq!(server.requests(), 3);
}

/// Sends `n` GETs of `path` at once, each on its own connection, and returns how long the
/// last one took to come back.
async fn concurrent_gets(client: &HttpClient, url: &str, path: &str, n: usize) -> Duration {
    let started = Instant::now();
    let requests: Vec<_> = (0..n)
        .map(|_| {
            let (client, url) = (client.clone(), format!("{url}{path}"));
            tokio::spawn(async move { get(&client, url).await.status() })
        })
        .collect();
    for request in requests {
        assert_eq!(request.await.unwrap(), StatusCode::OK);
    }
    started.elapsed()
}

#[test]
fn max_concurrency_queues_requests() {
    let latency = Some(LatencyDist::Fixed(Duration::from_millis(50)));
    let limited = start(ServeConfig { latency, max_concurrency: Some(2), ..Default::default() });
    let unlimited = start(ServeConfig { latency, ..Default::default() });
    bounded(async {
        let client = client();
        // 2 at a time: three rounds of 50 ms, whichever server thread each request reaches.
        let took = concurrent_gets(&client, &limited.url(), "/", 6).await;
        assert!(took >= Duration::from_millis(140), "6 requests, 2 at a time: {took:?}");
        assert!(took < Duration::from_millis(400), "6 requests, 2 at a time: {took:?}");
        assert_eq!(limited.requests(), 6);

        let took = concurrent_gets(&client, &unlimited.url(), "/", 6).await;
        assert!(took < Duration::from_millis(120), "6 requests, no limit: {took:?}");
    });
}

#[test]
fn stats_do_not_queue_behind_max_concurrency() {
    let slow = Duration::from_millis(1000);
    let server = start(ServeConfig { max_concurrency: Some(2), ..Default::default() });
    let url = server.url();
    bounded(async {
        let client = client();
        let spawn_get = |path: String| {
            let (client, url) = (client.clone(), url.clone());
            tokio::spawn(async move { get(&client, format!("{url}{path}")).await.status() })
        };
        let slow_sent = Instant::now();
        let holders: Vec<_> = (0..2).map(|_| spawn_get(format!("/delay/{}", slow.as_millis()))).collect();
        while server.requests() < 2 {
            // Polling the counter, not sleeping in place of synchronisation.
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        // Both permits are taken: this one queues until a slow request is done.
        let queued = spawn_get("/".to_string());
        while server.requests() < 3 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }

        let asked = Instant::now();
        let stats = get(&client, format!("{url}/_barrage/stats")).await;
        let answered_in = asked.elapsed();
        assert!(!queued.is_finished(), "the probe came back while a request was still queued");
        assert!(answered_in < Duration::from_millis(300), "stats waited: {answered_in:?}");
        assert_eq!(stats.status(), StatusCode::OK);
        // The queued request is counted on arrival; the probe is not counted.
        assert_eq!(stats.body(), "{\"requests\": 3, \"albums\": {\"created\": 0, \"read\": 0, \"not_found\": 0, \"rejected\": 0, \"failed\": 0}, \"shape\": \"latency=0,size=1024,errors=0%,capacity=2\"}\n");

        assert_eq!(queued.await.unwrap(), StatusCode::OK);
        assert!(slow_sent.elapsed() >= slow, "the queued request waited for a turn: {:?}", slow_sent.elapsed());
        for holder in holders {
            assert_eq!(holder.await.unwrap(), StatusCode::OK);
        }
        assert_eq!(server.requests(), 3);
    });
}

/// A QUIC client (quinn) trusting `ca_path`, offering h3, which keeps sessions and would
/// send early data (0-RTT): what barrage never does, to show the origin would let it.
fn quic_client(ca_path: &std::path::Path) -> (quinn::Endpoint, quinn::ClientConfig) {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from_pem_file(ca_path).unwrap()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"h3".to_vec()];
    tls.enable_early_data = true;
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls).unwrap();
    let endpoint = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    (endpoint, quinn::ClientConfig::new(Arc::new(crypto)))
}

type H3Sender = h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>;

/// An HTTP/3 client on `conn`, its connection driven by a task of its own.
async fn h3_client(conn: quinn::Connection) -> H3Sender {
    let (mut driver, sender) = h3::client::new(h3_quinn::Connection::new(conn)).await.unwrap();
    tokio::spawn(async move { std::future::poll_fn(|cx| driver.poll_close(cx)).await });
    sender
}

/// One HTTP/3 request: the response and its whole body.
async fn h3_send(sender: &mut H3Sender, method: Method, url: &str, body: &'static str) -> Response<Bytes> {
    let mut stream = sender.send_request(Request::builder().method(method).uri(url).body(()).unwrap()).await.unwrap();
    if !body.is_empty() {
        stream.send_data(Bytes::from_static(body.as_bytes())).await.unwrap();
    }
    stream.finish().await.unwrap();
    let head = stream.recv_response().await.unwrap();
    let mut data = Vec::new();
    while let Some(mut chunk) = stream.recv_data().await.unwrap() {
        use bytes::Buf;
        data.extend_from_slice(&chunk.copy_to_bytes(chunk.remaining()));
    }
    let (parts, ()) = head.into_parts();
    Response::from_parts(parts, Bytes::from(data))
}

#[test]
fn http3_serves_the_same_routes_and_counts_and_would_let_a_client_resume() {
    let server = start(ServeConfig { tls: true, http3: true, ..Default::default() });
    assert!(server.http3());
    let (ca, addr, url) = (server.ca_path().unwrap().to_path_buf(), server.addr(), server.url());
    bounded(async {
        let (endpoint, config) = quic_client(&ca);
        let connect = || async { endpoint.connect_with(config.clone(), addr, "127.0.0.1").unwrap().await.unwrap() };
        let conn = connect().await;
        let mut h3 = h3_client(conn.clone()).await;
        let resp = h3_send(&mut h3, Method::GET, &format!("{url}/bytes/1k"), "").await;
        assert_eq!((resp.status(), resp.body().len()), (StatusCode::OK, 1024));
        assert_eq!(resp.version(), Version::HTTP_3);
        // Clients that come over TCP learn where HTTP/3 is; the header rides on every answer.
        assert_eq!(header(&resp, "alt-svc"), Some(&*format!("h3=\":{}\"; ma=86400", addr.port())));
        // Request bodies arrive whole: stored, then read back over a second connection.
        let put = h3_send(&mut h3, Method::PUT, &format!("{url}/kept"), "over QUIC").await;
        assert_eq!(put.status(), StatusCode::CREATED);
        let mut second = h3_client(connect().await).await;
        assert_eq!(h3_send(&mut second, Method::GET, &format!("{url}/kept"), "").await.body(), "over QUIC");
        assert_eq!(server.requests(), 3, "HTTP/3 requests count with the others");
        // Each answer came after the origin's handshake (and its count).
        let stats = h3_send(&mut second, Method::GET, &format!("{url}/_barrage/stats"), "").await;
        let stats: serde_json::Value = serde_json::from_slice(stats.body()).unwrap();
        // This client keeps its sessions: its second connection resumed the first's.
        assert_eq!(stats["handshakes"], serde_json::json!({"tls": 0, "quic": 2, "resumed": 1}), "{stats}");
        // It may send early data too: the origin accepts it, and counts the resumption.
        conn.close(0u32.into(), b"done");
        let resumed = endpoint.connect_with(config.clone(), addr, "127.0.0.1").unwrap();
        let (conn3, early) = resumed.into_0rtt().unwrap_or_else(|_| panic!("the session allows 0-RTT"));
        // Answered once the origin's handshake is done (and counted): it serves no request
        // before.
        let mut third = h3_client(conn3.clone()).await;
        assert_eq!(h3_send(&mut third, Method::GET, &format!("{url}/"), "").await.status(), StatusCode::OK);
        assert!(early.await, "the origin accepts 0-RTT");
        conn3.close(0u32.into(), b"done");
        assert_eq!(server.handshakes().unwrap(), barrage_server::Handshakes { tls: 0, quic: 3, resumed: 2 });
    });
}

#[test]
fn http3_needs_tls() {
    let e = RunningServer::start(ServeConfig { http3: true, ..Default::default() }).unwrap_err();
    assert_eq!(e.to_string(), "invalid http3: HTTP/3 runs over QUIC, which is always encrypted: serve TLS too");
}

/// Capacity 1 with a queue of 1: of four requests at once, one is served, one waits its
/// turn, two are answered 503 at once and counted; a new shape swapped in while they wait
/// lifts the bound for the requests after it.
#[test]
fn a_full_queue_answers_503_at_once_and_a_new_shape_takes_over_live() {
    let server = start(ServeConfig { max_concurrency: Some(1), max_queue: Some(1), ..Default::default() });
    let url = server.url();
    bounded(async {
        let client = client();
        let spawn_get = |path: &str| {
            let (client, url) = (client.clone(), format!("{url}{path}"));
            tokio::spawn(async move {
                let sent = Instant::now();
                let status = get(&client, url).await.status();
                (status, sent.elapsed())
            })
        };
        let served = spawn_get("/delay/600");
        while server.requests() < 1 {
            // Polling the counter, not sleeping in place of synchronisation.
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let queued = spawn_get("/delay/1");
        while server.requests() < 2 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        for _ in 0..2 {
            let (status, took) = spawn_get("/").await.unwrap();
            assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
            assert!(took < Duration::from_millis(300), "answered at once: {took:?}");
        }
        let stats = get(&client, format!("{url}/_barrage/stats")).await;
        let json: serde_json::Value = serde_json::from_slice(stats.body()).unwrap();
        assert_eq!(json["queue_full"].as_u64(), Some(2), "{json}");
        assert_eq!(json["shape"], "latency=0,size=1024,errors=0%,capacity=1+1");
        // No capacity from now on: a request arriving now is served at once.
        server.set_shape(barrage_server::Shape::default()).unwrap();
        let (status, took) = spawn_get("/").await.unwrap();
        assert_eq!(status, StatusCode::OK);
        assert!(took < Duration::from_millis(300), "not queued behind the old capacity: {took:?}");
        assert_eq!(served.await.unwrap().0, StatusCode::OK);
        assert_eq!(queued.await.unwrap().0, StatusCode::OK, "the queued request finished under the old shape");
    });
}
