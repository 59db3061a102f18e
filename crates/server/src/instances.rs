//! `barrage serve`'s origins as the command line asks for them: several instances of one
//! configuration, each on its own port and with its own name, an HTTPS one beside each, and
//! a shape file laid over the configured shape (re-read on SIGHUP). Apart from the server,
//! which serves one configuration and knows nothing of instances or files.

use crate::{Capacity, RunningServer, ServeConfig, ServeError, Shape, ShapeSpec};
use std::net::SocketAddr;
use std::path::Path;

/// The largest shape file read: a line or two.
const SHAPE_FILE_MAX: u64 = 64 << 10;

/// `count` origins of `base`, and beside each an HTTPS one on `tls_listen` when given.
#[derive(Clone, Debug)]
pub struct Instances {
    /// What every instance serves; its `http3` is what was asked for HTTPS.
    pub base: ServeConfig,
    /// How many instances (at least one).
    pub count: usize,
    /// The address of the first instance's HTTPS server, beside its own.
    pub tls_listen: Option<SocketAddr>,
}

impl Instances {
    /// The configurations to start, in order: for each instance, its HTTPS one (with
    /// `tls_listen`), then its own; each with `shape` when a shape file gave one.
    pub fn configs(&self, shape: Option<&Shape>) -> Result<Vec<ServeConfig>, ServeError> {
        let mut configs = Vec::with_capacity(self.count * 2);
        for i in 0..self.count {
            let mut config = self.instance(i)?;
            if let Some(shape) = shape {
                config.latency = shape.latency;
                config.object_size = shape.object_size.clone();
                config.error_rate = shape.error_rate;
                config.max_concurrency = shape.capacity.map(|c| c.concurrency);
                config.max_queue = shape.capacity.and_then(|c| c.queue);
            }
            if let Some(tls_listen) = self.tls_listen {
                let listen = next_port(tls_listen, i, "--tls-listen")?;
                configs.push(ServeConfig { listen, tls: true, http3: self.base.http3, ..config.clone() });
            }
            configs.push(config);
        }
        Ok(configs)
    }

    /// Instance `i`: its own port (the next one after a fixed port, a free one for port 0)
    /// and, with several, its own name (`NAME-1`, `NAME-2`…, default `origin-1`…).
    fn instance(&self, i: usize) -> Result<ServeConfig, ServeError> {
        let base = &self.base;
        let name = match (&base.name, self.count) {
            (name, 1) => name.clone(),
            (Some(name), _) => Some(format!("{name}-{}", i + 1)),
            (None, _) => Some(format!("origin-{}", i + 1)),
        };
        Ok(ServeConfig {
            listen: next_port(base.listen, i, "--listen")?,
            name,
            // Instances share one CA file when one is asked for: the first writes it.
            ca_out: if i == 0 { base.ca_out.clone() } else { None },
            // Beside HTTPS only (the --tls-listen server's is set where it is made).
            http3: base.http3 && base.tls,
            // The rest is shared: one store and one album directory (a body PUT or an album
            // posted to one instance is found on every other), one access log (each line
            // written whole).
            ..base.clone()
        })
    }

    /// The configured shape with the file at `path` laid over it, line by line; `#` starts a
    /// comment line.
    pub fn read_shape(&self, path: &Path) -> Result<Shape, ServeError> {
        let what = |what: &str| format!("{what} {}", path.display());
        let text = barrage_metrics::limits::read_capped(path, SHAPE_FILE_MAX)
            .map_err(|e| ServeError::ShapeFile { what: what("reading the shape file"), source: e.into() })?;
        let text = String::from_utf8(text).map_err(|e| ServeError::ShapeFile {
            what: format!("{} is not text", what("the shape file")),
            source: e.into(),
        })?;
        let base = &self.base;
        let mut shape = Shape {
            latency: base.latency,
            object_size: base.object_size.clone(),
            error_rate: base.error_rate,
            capacity: base.max_concurrency.map(|n| Capacity { concurrency: n, queue: base.max_queue }),
        };
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
            let spec: ShapeSpec = line.parse().map_err(|e: crate::ShapeError| ServeError::ShapeFile {
                what: what("the shape file"),
                source: e.into(),
            })?;
            spec.apply(&mut shape);
        }
        Ok(shape)
    }
}

impl Instances {
    /// Re-reads the shape file at `path` (on SIGHUP) and sets it on every one of `servers`:
    /// the shape they serve now. A bad file leaves the shape as it was.
    pub fn reload(&self, path: &Path, servers: &[RunningServer]) -> Result<Shape, ServeError> {
        let shape = self.read_shape(path)?;
        servers.iter().try_for_each(|s| s.set_shape(shape.clone()))?;
        Ok(shape)
    }
}

/// The address of instance `i`: `i` ports after a fixed one; port 0 stays 0 (a free port).
fn next_port(mut addr: SocketAddr, i: usize, flag: &'static str) -> Result<SocketAddr, ServeError> {
    if addr.port() != 0 {
        let port = u16::try_from(usize::from(addr.port()) + i).map_err(|_| ServeError::PortsRunOut { flag })?;
        addr.set_port(port);
    }
    Ok(addr)
}

/// A warning on stderr when `addr` (bound for `flag`) is not a loopback address: other
/// machines can reach it, which a test origin or a run's metrics rarely should be.
pub fn warn_if_exposed(flag: &str, addr: SocketAddr) {
    use std::io::Write;
    if !addr.ip().is_loopback() {
        let whom = if addr.ip().is_unspecified() { "every interface" } else { "a non-loopback interface" };
        // Not `eprintln!`: a closed stderr must not end `serve` before it removes its CA file.
        let _ = writeln!(
            std::io::stderr(),
            "barrage: warning: {flag} bound {addr}, {whom}: other machines can reach it (127.0.0.1 keeps it local)"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn instances(listen: &str, name: Option<&str>, count: usize, tls_listen: Option<&str>) -> Instances {
        let base = ServeConfig {
            listen: listen.parse().unwrap(),
            name: name.map(String::from),
            ca_out: Some("ca.pem".into()),
            ..ServeConfig::default()
        };
        Instances { base, count, tls_listen: tls_listen.map(|a| a.parse().unwrap()) }
    }

    /// Each instance on the next port with a name of its own; one alone keeps the name given.
    #[test]
    fn instances_take_the_next_ports_and_names_of_their_own() {
        let table = [
            ("127.0.0.1:8000", None, 1, vec![("127.0.0.1:8000", None)]),
            ("127.0.0.1:8000", Some("o"), 1, vec![("127.0.0.1:8000", Some("o"))]),
            (
                "127.0.0.1:8000",
                None,
                2,
                vec![("127.0.0.1:8000", Some("origin-1")), ("127.0.0.1:8001", Some("origin-2"))],
            ),
            ("127.0.0.1:0", Some("o"), 2, vec![("127.0.0.1:0", Some("o-1")), ("127.0.0.1:0", Some("o-2"))]),
        ];
        for (listen, name, count, want) in table {
            let configs = instances(listen, name, count, None).configs(None).unwrap();
            let got: Vec<(String, Option<&str>)> =
                configs.iter().map(|c| (c.listen.to_string(), c.name.as_deref())).collect();
            let want: Vec<(String, Option<&str>)> = want.into_iter().map(|(l, n)| (l.to_string(), n)).collect();
            assert_eq!(got, want, "{listen} {name:?} × {count}");
            // One CA file, written by the first.
            assert!(configs.iter().skip(1).all(|c| c.ca_out.is_none()));
        }
    }

    #[test]
    fn an_https_server_comes_before_each_instance_and_ports_end_at_65535() {
        let configs = instances("127.0.0.1:8000", None, 2, Some("127.0.0.1:9000")).configs(None).unwrap();
        let got: Vec<(String, bool)> = configs.iter().map(|c| (c.listen.to_string(), c.tls)).collect();
        let want =
            [("127.0.0.1:9000", true), ("127.0.0.1:8000", false), ("127.0.0.1:9001", true), ("127.0.0.1:8001", false)];
        assert_eq!(got, want.map(|(l, t)| (l.to_string(), t)));
        let e = instances("127.0.0.1:65535", None, 2, None).configs(None).unwrap_err();
        assert_eq!(e.to_string(), "--listen: --instances: ports run past 65535");
    }
}
