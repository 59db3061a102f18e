//! The testbed's key-value servers: redis and memcached instances answering, stopping and
//! starting by name, and redis over TLS with the testbed's certificate.

use super::{alive, Testbed};
use crate::util::barrage;
use std::path::Path;
use std::process::Output;

/// Whether `addr` answers `ping` with `pong` at once, over a plain std TcpStream.
fn kv_answers(addr: std::net::SocketAddr, ping: &[u8], pong: &[u8]) -> bool {
    use std::io::{Read, Write};
    let Ok(mut conn) = std::net::TcpStream::connect(addr) else { return false };
    conn.set_read_timeout(Some(std::time::Duration::from_secs(2))).unwrap();
    let mut reply = vec![0u8; pong.len()];
    conn.write_all(ping).is_ok() && conn.read_exact(&mut reply).is_ok() && reply == pong
}

/// `up TOPOLOGY --backends N`: every instance answers its ping and `status` lists its URL;
/// `stop VICTIM` refuses connections there while the others answer; `start VICTIM` answers
/// on the same port again; `down` leaves none of the processes the state listed.
fn key_value_instances_stop_start_and_go_down(topology: &str, n: usize, victim: &str, ping: &[u8], pong: &[u8]) {
    let Some(bed) = Testbed::up(topology, &["--backends", &n.to_string()]) else { return };
    let names: Vec<String> = (1..=n).map(|i| format!("{topology}-{i}")).collect();
    let listed: Vec<&str> = bed.state.servers.iter().map(|s| s.spec.name.as_str()).collect();
    assert_eq!(listed, names, "{n} instances and nothing else");
    let addr = |name: &str| bed.state.server(name).unwrap().spec.listen;
    let status = String::from_utf8(bed.command(&["status"]).stdout).unwrap();
    for name in &names {
        assert!(kv_answers(addr(name), ping, pong), "{name} answers");
        let scheme = if topology == "redis" { "redis" } else { "memcache" };
        let line = status.lines().find(|l| l.starts_with(name.as_str())).unwrap_or_else(|| panic!("{status}"));
        assert!(line.contains(&format!("{scheme}://{}", addr(name))) && line.ends_with("running"), "{status}");
    }
    let out = bed.command(&["stop", victim]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let refused = std::net::TcpStream::connect(addr(victim)).map_err(|e| e.kind());
    assert_eq!(refused.err(), Some(std::io::ErrorKind::ConnectionRefused), "{victim} is stopped");
    assert!(names.iter().filter(|n| *n != victim).all(|n| kv_answers(addr(n), ping, pong)), "the others answer");
    let out = bed.command(&["start", victim]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(kv_answers(addr(victim), ping, pong), "{victim} answers on the same port again");
    let pids = bed.pids();
    assert_eq!(pids.len(), n, "{pids:?}");
    let dir = bed.dir().to_path_buf();
    drop(bed);
    for pid in pids {
        assert!(!alive(pid), "server {pid} still runs after down");
    }
    assert!(!dir.exists(), "state removed: {}", dir.display());
}

#[test]
fn redis_instances_answer_ping_stop_start_by_name_and_go_down() {
    key_value_instances_stop_start_and_go_down("redis", 2, "redis-2", b"PING\r\n", b"+PONG\r\n");
}

#[test]
fn memcached_instances_answer_version_stop_start_by_name_and_go_down() {
    key_value_instances_stop_start_and_go_down("memcached", 3, "memcached-2", b"version\r\n", b"VERSION ");
}

/// `INFO commandstats` of the redis-server at `addr`, over plain TCP: each command's
/// `calls`, by name (`set`, `get`).
fn redis_calls(addr: std::net::SocketAddr) -> std::collections::HashMap<String, u64> {
    use std::io::{BufRead, Read, Write};
    let mut conn = std::net::TcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
    conn.write_all(b"*2\r\n$4\r\nINFO\r\n$12\r\ncommandstats\r\n").unwrap();
    // A bulk string: `$LEN\r\n`, LEN bytes, `\r\n`.
    let mut reader = std::io::BufReader::new(conn);
    let mut head = String::new();
    reader.read_line(&mut head).unwrap();
    let len: usize = head.trim().strip_prefix('$').and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("{head}"));
    let mut body = vec![0u8; len];
    reader.read_exact(&mut body).unwrap();
    // `cmdstat_set:calls=1000,usec=…,…`
    String::from_utf8(body)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let (name, stats) = l.strip_prefix("cmdstat_")?.split_once(':')?;
            let calls = stats.split(',').find_map(|kv| kv.strip_prefix("calls="))?.parse().ok()?;
            Some((name.to_string(), calls))
        })
        .collect()
}

/// `barrage run URL ARGS -o FILE` against a key-value server: its output, and the results
/// file added up.
fn kv_run(dir: &Path, url: &str, args: &[&str]) -> (Output, barrage_metrics::Recorder) {
    let file = dir.join("run.brg");
    let _ = std::fs::remove_file(&file);
    let base = ["-n", "2000", "-c", "4", "--ratio", "1:1", "--key-maximum", "99", "--timeout", "5s"];
    let out = barrage().arg("run").arg(url).args(base).args(args).arg("-o").arg(&file).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(file.exists(), "no results file: {stderr}");
    (out, crate::flows::totals(&file).1)
}

/// SETs and GETs of a run, as barrage counted them (`By name`), each all successful.
fn sets_and_gets(total: &barrage_metrics::Recorder) -> (u64, u64) {
    let named = |name: &str| {
        let k = total.names.iter().find(|k| k.name == name).unwrap_or_else(|| panic!("no {name} in {:?}", total.names));
        assert_eq!(k.failed, 0, "{name}");
        k.requests
    };
    (named("SET"), named("GET"))
}

/// `up redis --tls`: the instance serves `rediss://` beside `redis://` with the testbed's
/// certificate. A run trusting the CA (or `-k`) succeeds, with one handshake measured per
/// connection and redis-server's own counters agreeing; a run trusting neither fails every
/// request with a TLS error, and nothing reaches the server.
#[test]
fn redis_serves_tls_with_the_testbed_certificate() {
    use barrage_metrics::{ErrorKind, Phase};
    let Some(bed) = Testbed::up("redis", &["--tls", "--backends", "1"]) else { return };
    let ca = bed.state.ca.clone().expect("a CA with --tls");
    let spec = &bed.state.server("redis-1").unwrap().spec;
    let tls = spec.tls_listen.expect("a TLS port");
    let url = bed.tls_url("redis-1");
    assert_eq!(url, format!("rediss://{tls}"));
    let status = String::from_utf8(bed.command(&["status"]).stdout).unwrap();
    let rows: Vec<&str> = status.lines().filter(|l| l.starts_with("redis-1 ")).collect();
    assert_eq!(rows.len(), 2, "{status}");
    assert!(rows[0].contains(&format!("redis://{}", spec.listen)) && rows[1].contains(&url), "{status}");
    assert!(status.contains(&format!("--cacert {}", ca.display())), "{status}");
    let before = redis_calls(spec.listen);
    let calls = |name: &str| redis_calls(spec.listen).get(name).copied().unwrap_or(0);
    let out_dir = tempfile::tempdir().unwrap();

    let (out, total) = kv_run(out_dir.path(), &url, &["--cacert", ca.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let c = &total.counts;
    assert_eq!((c.completed, c.ok), (2000, 2000), "every command succeeded: {:?}", c.errors);
    assert_eq!(c.connections, 4, "one connection per client");
    assert_eq!(total.phases[Phase::Tls as usize].len(), 4, "one handshake per connection");
    assert!(total.phases[Phase::Tls as usize].min() > 0);
    assert_eq!((before.get("set"), before.get("get")), (None, None), "nothing was sent before");
    // redis-server counted what barrage did: --ratio 1:1's rounds are exact over the run.
    let (sets, gets) = sets_and_gets(&total);
    assert_eq!((calls("set"), calls("get")), (sets, gets), "redis-server counted them");
    assert_eq!((sets, gets), (1000, 1000));

    let (out, total) = kv_run(out_dir.path(), &url, &["-k"]);
    assert!(out.status.success(), "-k: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!((total.counts.ok, total.counts.connections), (2000, 4));
    assert_eq!(total.phases[Phase::Tls as usize].len(), 4);
    let (more_sets, more_gets) = sets_and_gets(&total);
    assert_eq!((calls("set"), calls("get")), (sets + more_sets, gets + more_gets));
    let (sets, gets) = (calls("set"), calls("get"));

    // Trusting neither the CA nor anything: the system's roots do not know the testbed's CA.
    let (out, total) = kv_run(out_dir.path(), &url, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "not a result: {stderr}");
    let said = "all 2000 requests failed (mostly tls: invalid peer certificate: UnknownIssuer)";
    assert!(stderr.contains(said), "the failure is said: {stderr}");
    let c = &total.counts;
    assert_eq!((c.completed, c.ok, c.connections), (2000, 0, 0), "{c:?}");
    assert_eq!(c.errors[ErrorKind::Tls as usize], 2000, "every request failed on TLS: {:?}", c.errors);
    assert_eq!((calls("set"), calls("get")), (sets, gets), "no command reached redis-server");
}

#[test]
fn memcached_refuses_tls_with_exit_2_and_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let out = barrage().args(["testbed", "up", "memcached", "--tls", "--dir"]).arg(dir.path()).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("the memcached testbed has no TLS: barrage has no memcache-over-TLS target"), "{stderr}");
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none(), "nothing was started or written");
}
