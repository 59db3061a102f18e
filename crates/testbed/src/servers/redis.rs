//! redis-server, the key-value store: its config file, its eviction policies and its TLS
//! port.

use super::{quoted, Launch, Store, TlsFiles};
use std::fmt::Write as _;
use std::net::SocketAddr;

/// What redis-server does when its data reaches `maxmemory` (`maxmemory-policy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Eviction {
    /// Refuse writes.
    NoEviction,
    /// Evict the least recently used key.
    AllKeysLru,
    /// Evict the least frequently used key.
    AllKeysLfu,
    /// Evict a random key.
    AllKeysRandom,
    /// Evict the least recently used key of those with an expiry.
    VolatileLru,
    /// Evict the least frequently used key of those with an expiry.
    VolatileLfu,
    /// Evict a random key of those with an expiry.
    VolatileRandom,
    /// Evict the key of those with an expiry that expires soonest.
    VolatileTtl,
}

impl Eviction {
    /// Every policy, as Redis names it (and `--eviction` takes it).
    pub const NAMES: [&'static str; 8] = [
        "noeviction",
        "allkeys-lru",
        "allkeys-lfu",
        "allkeys-random",
        "volatile-lru",
        "volatile-lfu",
        "volatile-random",
        "volatile-ttl",
    ];

    /// Redis's name.
    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

impl std::str::FromStr for Eviction {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        use Eviction::*;
        let all =
            [NoEviction, AllKeysLru, AllKeysLfu, AllKeysRandom, VolatileLru, VolatileLfu, VolatileRandom, VolatileTtl];
        all.into_iter()
            .find(|e| e.name() == s)
            .ok_or_else(|| format!("unknown eviction policy '{s}': expected one of {}", Self::NAMES.join(", ")))
    }
}

/// redis-server in the foreground with its config in `DIR/redis.conf`: loopback only, no
/// persistence (`save ""`, `appendonly no`, so a restarted instance starts empty and a stop
/// writes nothing), logging to `DIR/redis.log`, `maxmemory` and `maxmemory-policy` as
/// `s.memory` and `s.eviction` say (Redis's defaults otherwise: no limit, `noeviction`), and `DEBUG` allowed from loopback clients
/// (`enable-debug-command local`, refused by default since Redis 7) so that tests can
/// inject a known server-side delay with `DEBUG SLEEP`. SIGTERM shuts it down at once.
///
/// With `s.tls` it also serves TLS on a second port (`tls-port`) with the testbed
/// certificate, the same commands and data as the plain port, and asks clients for no
/// certificate of their own (`tls-auth-clients no`: Redis requires one by default).
pub fn redis(s: &Store) -> Launch {
    let conf = s.dir.join("redis.conf");
    let mut text = format!(
        "\
# redis-server for the barrage testbed: {name}, a key-value store.
bind {ip}
port {port}
# Foreground: the supervisor owns the process (and writes its pid file).
daemonize no
# No persistence: nothing is written on a schedule or at shutdown; a restart starts empty.
save \"\"
appendonly no
# Where a dump would go, inside the testbed directory rather than the current one.
dir {dir}
# Its log, a file of its own.
logfile {log}
# DEBUG SLEEP from loopback clients: a known server-side delay for tests.
enable-debug-command local
# It listens on loopback only; protected mode would also refuse clients from 127.0.0.N other
# than 127.0.0.1 (load generators bound to their own loopback address with --bind).
protected-mode no
",
        name = s.name,
        ip = s.listen.ip(),
        port = s.listen.port(),
        dir = quoted(s.dir),
        log = quoted(&s.dir.join("redis.log")),
    );
    if let Some(bytes) = s.memory {
        let _ = writeln!(text, "# Memory for data; what happens beyond it is maxmemory-policy's.\nmaxmemory {bytes}");
    }
    if let Some(policy) = s.eviction {
        let _ = writeln!(text, "maxmemory-policy {}", policy.name());
    }
    if let Some((addr, files)) = s.tls {
        text += &redis_tls(addr, files);
    }
    Launch {
        program: "redis-server",
        args: vec![conf.display().to_string()],
        files: vec![(conf, text)],
        package: "redis-server",
        logs: vec![s.dir.join("redis.log")],
        ..Launch::default()
    }
}

/// The TLS lines of `redis.conf`: a second port on the plain one's address.
fn redis_tls(addr: SocketAddr, files: &TlsFiles) -> String {
    format!(
        "\
# TLS on a second port, the same server behind it. Redis binds every port to the `bind`
# addresses: the TLS listener's address is the plain one's.
tls-port {port}
# The leaf then the CA (Redis loads the file as a chain), and the leaf's key.
tls-cert-file {cert}
tls-key-file {key}
# No client certificates: Redis asks for one by default, and would then also need
# tls-ca-cert-file to check them.
tls-auth-clients no
",
        port = addr.port(),
        cert = quoted(&files.cert),
        key = quoted(&files.key),
    )
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    #[test]
    fn redis_runs_in_the_foreground_on_loopback_without_persistence() {
        let launch = redis(&store());
        assert_eq!((launch.program, launch.package, launch.owner), ("redis-server", "redis-server", None));
        let conf = format!("{DIR}/redis.conf");
        assert_eq!(args(&launch), [conf.as_str()]);
        let text = text(&launch, "redis.conf");
        for line in [
            "bind 127.0.0.1",
            "port 6400",
            "daemonize no",
            "save \"\"",
            "appendonly no",
            &format!("dir \"{DIR}\""),
            &format!("logfile \"{DIR}/redis.log\""),
            "enable-debug-command local",
        ] {
            position(text, line);
        }
    }

    #[test]
    fn redis_serves_tls_on_a_second_port_without_client_certificates() {
        let plain = text(&redis(&store()), "redis.conf").to_string();
        assert!(!plain.contains("tls"), "{plain}");
        let files = tls_files();
        let launch = redis(&Store { tls: Some(("127.0.0.1:6443".parse().unwrap(), &files)), ..store() });
        let text = text(&launch, "redis.conf");
        // The plain port stays, and the TLS lines only add to the plain config.
        assert!(text.starts_with(&plain), "{text}");
        let port = position(text, "port 6400");
        let tls = position(text, "tls-port 6443");
        assert!(port < tls);
        assert_eq!(position(text, "tls-cert-file \"/tmp/tb-1/tls/cert.pem\""), tls + 1);
        assert_eq!(position(text, "tls-key-file \"/tmp/tb-1/tls/key.pem\""), tls + 2);
        assert_eq!(position(text, "tls-auth-clients no"), tls + 3);
        assert_eq!(directives(text).len(), tls + 4, "nothing after the TLS lines");
    }
}
