//! The servers a testbed runs: for each kind, its config files and command line.
//!
//! Everything here is a pure function of a [`Front`]: no process is started and no file is
//! written; the supervisor does that. Each server has a module of its own; what they share
//! (what a front or a store is asked to be, the [`Launch`] they answer with) is here.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

mod caddy;
mod haproxy;
mod hitch;
mod memcached;
mod nginx;
mod redis;
mod squid;
mod varnish;

pub use caddy::caddy;
pub use haproxy::haproxy;
pub use hitch::{hitch, Hitch};
pub use memcached::memcached;
pub use nginx::{nginx, nginx_cache};
pub use redis::{redis, Eviction};
pub use squid::{squid, squid_access_log};
pub use varnish::{varnish, VarnishPorts};

/// Idle connections to the origins a balancer keeps for later requests (nginx's
/// `keepalive`, Caddy's `keepalive_idle_conns_per_host`; 32 in both by default). A pool
/// smaller than the load's concurrency makes the balancer close the connection of every
/// request beyond it and open a new one for the next: measured against one origin on one
/// core, nginx fell from over 25,600 req/s to 12,000-15,000 once a burst took its
/// concurrency past 32, and stayed there, so two capacity searches found different figures.
/// The pool covers barrage's default 256 connections and more.
const ORIGIN_POOL: usize = 1024;

/// How a balancer picks the origin of the next request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Balance {
    /// In turn.
    RoundRobin,
    /// The origin with the fewest open requests.
    LeastConn,
    /// By a hash of the client address (sticky).
    IpHash,
    /// By a consistent hash of the request's URI (path and query): each URL always goes
    /// to one origin, and only 1/N of them move when an origin is added or removed.
    UriHash,
}

impl Balance {
    /// Its command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Balance::RoundRobin => "roundrobin",
            Balance::LeastConn => "leastconn",
            Balance::IpHash => "iphash",
            Balance::UriHash => "uri-hash",
        }
    }
}

impl std::str::FromStr for Balance {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        [Balance::RoundRobin, Balance::LeastConn, Balance::IpHash, Balance::UriHash]
            .into_iter()
            .find(|b| b.name() == s)
            .ok_or_else(|| format!("unknown balancing '{s}': expected roundrobin, leastconn, iphash or uri-hash"))
    }
}

/// The testbed's certificate (generated once per testbed), as files.
#[derive(Clone, Debug)]
pub struct TlsFiles {
    /// The leaf certificate for localhost, 127.0.0.1 and ::1 (PEM).
    pub cert: PathBuf,
    /// Its private key (PEM, PKCS#8).
    pub key: PathBuf,
    /// Certificate then key in one file (as haproxy wants it).
    pub combined: PathBuf,
}

/// An origin behind a front.
#[derive(Clone, Debug)]
pub struct Origin {
    /// Its testbed name (`origin-1`), which balancers report as the backend.
    pub name: String,
    /// Its plain-HTTP address.
    pub addr: SocketAddr,
    /// Its share of the requests a balancer spreads, against the others' (`--weights`);
    /// `None`: equal.
    pub weight: Option<u32>,
}

/// What one front (balancer or cache) is asked to be.
#[derive(Clone, Debug)]
pub struct Front<'a> {
    /// Testbed name of this process (`nginx-lb`, `varnish`...).
    pub name: &'a str,
    /// A directory of its own (absolute, exists, empty): configs, pid files, temp files.
    pub dir: &'a Path,
    /// Plain-HTTP listen address.
    pub listen: SocketAddr,
    /// HTTPS listen address and certificate, when the front terminates TLS.
    pub tls: Option<(SocketAddr, &'a TlsFiles)>,
    /// The origins: balancers spread over all, caches use the first.
    pub origins: &'a [Origin],
    /// How a balancer spreads requests.
    pub balance: Balance,
    /// A cache's size (`--memory`); `None`: its default here (64 MB; nginx-cache 1 GB of disk).
    pub memory: Option<u64>,
}

/// How to start one server process.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Launch {
    /// The program, as found on PATH or in /usr/sbin.
    pub program: &'static str,
    /// Its arguments.
    pub args: Vec<String>,
    /// Files to write before starting it: (path, contents).
    pub files: Vec<(PathBuf, String)>,
    /// The Debian package that provides `program`.
    pub package: &'static str,
    /// Runs `as root` drops to this user, which must own `dir` (squid: `proxy`).
    pub owner: Option<&'static str>,
    /// Path prefixes of files the server leaves outside `dir` when it does not exit cleanly
    /// (killed, crashed): after it exits, remove every file whose path starts with one of
    /// them. Squid's shared-memory segments in `/dev/shm` are the only case.
    pub leftovers: Vec<PathBuf>,
    /// Environment variables set for it (Caddy: its home and data directories).
    pub env: Vec<(String, String)>,
    /// It serves HTTP/3 on the UDP port of its TLS address too.
    pub quic: bool,
    /// Its own logs (access logs, error logs), besides its output (`DIR/output.log`).
    pub logs: Vec<PathBuf>,
    /// Programs (with their arguments) the supervisor starts beside it, in its process
    /// group, so that they end with it: Varnish's access log writer, `varnishncsa`.
    pub companions: Vec<Vec<String>>,
}

/// What one key-value server (redis-server, memcached) is asked to be.
#[derive(Clone, Debug)]
pub struct Store<'a> {
    /// Testbed name of this process (`redis-1`, `memcached-2`).
    pub name: &'a str,
    /// A directory of its own (absolute): its config and working files.
    pub dir: &'a Path,
    /// Where it listens (plain TCP).
    pub listen: SocketAddr,
    /// TLS listen address and certificate, when it also serves TLS (redis-server only).
    pub tls: Option<(SocketAddr, &'a TlsFiles)>,
    /// Its memory for data (`--memory`): redis-server's `maxmemory`, memcached's `-m`.
    pub memory: Option<u64>,
    /// What redis-server does at `maxmemory` (`--eviction`).
    pub eviction: Option<Eviction>,
}

// ---------------------------------------------------------------------------------------
// Helpers

/// 16 hex digits unique to `dir` (64-bit FNV-1a of the path), for names a server makes
/// outside it. FNV rather than std's hasher: the value must not change between builds, so
/// that leftovers of an earlier run can be recognised.
fn dir_id(dir: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let hash = dir
        .as_os_str()
        .as_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3));
    format!("{hash:016x}")
}

/// A path in double quotes, for nginx, HAProxy and Redis (which accept spaces inside them).
fn quoted(path: &Path) -> String {
    format!("\"{}\"", path.display())
}

/// `s` with regular-expression metacharacters escaped (for `127.0.0.1:80`, `[::1]:80`).
fn regex_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for ch in s.chars() {
        if "\\.^$|?*+()[]{}".contains(ch) {
            out.push('\\');
        }
        out.push(ch);
    }
    out
}

/// What the tests of every server share: a front, its origins, the testbed certificate, and
/// readers of a launch.
#[cfg(test)]
mod testing {
    pub(super) use super::{Balance, Front, Launch, Origin, Store, TlsFiles};
    pub(super) use std::path::{Path, PathBuf};

    pub(super) const DIR: &str = "/tmp/tb-1/front";

    pub(super) fn origins() -> Vec<Origin> {
        vec![
            Origin { name: "origin-1".to_string(), addr: "127.0.0.1:9001".parse().unwrap(), weight: None },
            Origin { name: "origin-2".to_string(), addr: "127.0.0.1:9002".parse().unwrap(), weight: None },
        ]
    }

    pub(super) fn tls_files() -> TlsFiles {
        TlsFiles {
            cert: PathBuf::from("/tmp/tb-1/tls/cert.pem"),
            key: PathBuf::from("/tmp/tb-1/tls/key.pem"),
            combined: PathBuf::from("/tmp/tb-1/tls/combined.pem"),
        }
    }

    pub(super) fn front<'a>(origins: &'a [Origin], tls: Option<&'a TlsFiles>, balance: Balance) -> Front<'a> {
        Front {
            name: "front",
            dir: Path::new(DIR),
            listen: "127.0.0.1:8080".parse().unwrap(),
            tls: tls.map(|files| ("127.0.0.1:8443".parse().unwrap(), files)),
            origins,
            balance,
            memory: None,
        }
    }

    /// The one file of a launch, checking its path.
    pub(super) fn text<'a>(launch: &'a Launch, file: &str) -> &'a str {
        assert_eq!(launch.files.len(), 1);
        assert_eq!(launch.files[0].0, Path::new(DIR).join(file));
        &launch.files[0].1
    }

    /// The config's directives: lines without comments, trimmed, blank lines dropped.
    pub(super) fn directives(text: &str) -> Vec<&str> {
        text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).collect()
    }

    /// Where `line` is among the directives; panics if it is not there.
    pub(super) fn position(text: &str, line: &str) -> usize {
        directives(text).iter().position(|l| *l == line).unwrap_or_else(|| panic!("no line `{line}` in:\n{text}"))
    }

    pub(super) fn args(launch: &Launch) -> Vec<&str> {
        launch.args.iter().map(String::as_str).collect()
    }

    /// The text of the launch's file `name` in DIR.
    pub(super) fn file<'a>(launch: &'a Launch, name: &str) -> &'a str {
        let path = Path::new(DIR).join(name);
        &launch.files.iter().find(|(p, _)| *p == path).unwrap_or_else(|| panic!("no {name}: {:?}", launch.files)).1
    }
    pub(super) fn store() -> Store<'static> {
        Store {
            name: "redis-1",
            dir: Path::new(DIR),
            listen: "127.0.0.1:6400".parse().unwrap(),
            tls: None,
            memory: None,
            eviction: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dir_id_is_fnv1a_64() {
        // Reference values of 64-bit FNV-1a.
        assert_eq!(dir_id(Path::new("")), "cbf29ce484222325");
        assert_eq!(dir_id(Path::new("a")), "af63dc4c8601ec8c");
        assert_eq!(dir_id(Path::new("foobar")), "85944171f73967e8");
    }

    #[test]
    fn regex_escape_escapes_addresses() {
        assert_eq!(regex_escape("127.0.0.1:80"), r"127\.0\.0\.1:80");
        assert_eq!(regex_escape("[::1]:80"), r"\[::1\]:80");
    }
}
