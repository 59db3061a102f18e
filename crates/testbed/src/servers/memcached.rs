//! memcached, the key-value cache: all on its command line, no config file.

use super::{Launch, Store};

/// memcached in the foreground: `memcached -U 0 -l IP -p PORT -u nobody -m MB -v`, TCP only
/// (`-U 0`: no UDP port), `s.memory` for items (whole megabytes, default 64), default
/// connection limit (1024), errors and warnings (`-v`) to its output, `DIR/output.log`.
///
/// memcached refuses to run as root without `-u`: `-u nobody` makes it drop to `nobody`
/// (it writes no files, so it needs nothing in `dir`); when not started as root, memcached
/// ignores `-u`. SIGTERM stops it at once.
///
/// No TLS: memcached could serve it (`-Z`), but barrage has no memcache-over-TLS target to
/// load it with, so [`crate::Options::check`] refuses `--tls` and `s.tls` is ignored.
pub fn memcached(s: &Store) -> Launch {
    let mb = s.memory.map_or(64, |b| b.div_ceil(1 << 20).max(1)).to_string();
    let (ip, port) = (s.listen.ip().to_string(), s.listen.port().to_string());
    let args = ["-U", "0", "-l", &ip, "-p", &port, "-u", "nobody", "-m", &mb, "-v"].map(String::from).to_vec();
    let logs = vec![s.dir.join("output.log")];
    Launch { program: "memcached", args, package: "memcached", logs, ..Launch::default() }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    #[test]
    fn memcached_is_tcp_only_on_loopback_and_drops_root() {
        let launch = memcached(&Store { name: "memcached-1", ..store() });
        assert_eq!((launch.program, launch.package, launch.owner), ("memcached", "memcached", None));
        assert!(launch.files.is_empty() && launch.leftovers.is_empty());
        assert_eq!(args(&launch), ["-U", "0", "-l", "127.0.0.1", "-p", "6400", "-u", "nobody", "-m", "64", "-v"]);
        assert_eq!(launch.logs, [PathBuf::from(format!("{DIR}/output.log"))]);
    }
}
