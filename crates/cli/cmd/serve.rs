//! `barrage serve`: the built-in origin in the foreground until Ctrl-C, SIGTERM or SIGHUP.

use crate::args::ServeArgs;
use crate::Outcome;
use anyhow::Context;
use barrage_server::{RunningServer, ServeConfig};
use std::io::Write;

/// Starts the origin (or `--instances` of them) and serves until interrupted.
pub fn serve(a: ServeArgs) -> anyhow::Result<Outcome> {
    if a.cert.is_some() && !a.tls && a.tls_listen.is_none() {
        anyhow::bail!("--cert is for HTTPS: add --tls or --tls-listen ADDR");
    }
    if a.http3 && !a.tls && a.tls_listen.is_none() {
        anyhow::bail!("--http3 runs over QUIC, which is always encrypted: add --tls or --tls-listen ADDR");
    }
    // Before any address is printed: a script may signal as soon as it reads one.
    let mut stop = Stop::install()?;
    let instances = usize::from(a.instances.max(1));
    let mut servers = Vec::with_capacity(instances);
    let shape = match &a.shape_file {
        Some(path) => Some(read_shape(path, &a)?),
        None => None,
    };
    for i in 0..instances {
        let mut config = instance_config(&a, i, instances)?;
        if let Some(shape) = &shape {
            config.latency = shape.latency;
            config.object_size = shape.object_size.clone();
            config.error_rate = shape.error_rate;
            config.max_concurrency = shape.capacity.map(|c| c.concurrency);
            config.max_queue = shape.capacity.and_then(|c| c.queue);
        }
        if let Some(tls_listen) = a.tls_listen {
            let listen = next_port(tls_listen, i).context("--tls-listen")?;
            servers.push(RunningServer::start(ServeConfig { listen, tls: true, http3: a.http3, ..config.clone() })?);
        }
        servers.push(RunningServer::start(config)?);
    }
    let mut out = std::io::stdout().lock();
    for s in &servers {
        let tls = s.url().starts_with("https");
        // Before the address: whoever reads that line has had the warning too.
        warn_if_exposed(if tls && a.tls_listen.is_some() { "--tls-listen" } else { "--listen" }, s.addr());
        // The address bound, as it is: a wildcard is not shown as loopback.
        writeln!(out, "listening on {}://{}", if tls { "https" } else { "http" }, s.addr())?;
        if s.http3() {
            writeln!(out, "HTTP/3 on udp://{}", s.addr())?;
        }
    }
    if let Some(ca) = servers.iter().find_map(RunningServer::ca_path) {
        writeln!(out, "CA certificate: {} (use --cacert {})", ca.display(), ca.display())?;
    }
    // Scripts read the addresses as soon as they are printed.
    out.flush()?;
    drop(out);
    // With a shape file, SIGHUP re-reads it; only SIGINT and SIGTERM stop.
    while stop.wait() == libc::SIGHUP && a.shape_file.is_some() {
        let path = a.shape_file.as_deref().expect("checked");
        match read_shape(path, &a).and_then(|shape| {
            servers.iter().try_for_each(|s| s.set_shape(shape.clone())).map_err(anyhow::Error::from)?;
            Ok(shape)
        }) {
            Ok(shape) => {
                let _ = writeln!(std::io::stderr(), "barrage serve: shape now {shape}");
            }
            // A bad file leaves the shape as it was; the origin serves on.
            Err(e) => {
                let _ = writeln!(std::io::stderr(), "barrage serve: {e:#}; the shape is unchanged");
            }
        }
    }
    let served: u64 = servers.iter().map(RunningServer::requests).sum();
    // Shut down (the generated CA file removed) before the last word, and say it without
    // `eprintln!`, which panics when nobody reads stderr any more (`2>&1 | head -1`): that
    // ended the process with the file left behind.
    servers.into_iter().for_each(RunningServer::shutdown);
    let _ = writeln!(std::io::stderr(), "served {served} requests");
    Ok(Outcome::Ok)
}

/// A warning on stderr when `addr` (bound for `flag`) is not a loopback address: other
/// machines can reach it, which a test origin or a run's metrics rarely should be.
pub fn warn_if_exposed(flag: &str, addr: std::net::SocketAddr) {
    if !addr.ip().is_loopback() {
        let whom = if addr.ip().is_unspecified() { "every interface" } else { "a non-loopback interface" };
        // Not `eprintln!`: a closed stderr must not end `serve` before it removes its CA file.
        let _ = writeln!(
            std::io::stderr(),
            "barrage: warning: {flag} bound {addr}, {whom}: other machines can reach it (127.0.0.1 keeps it local)"
        );
    }
}

/// The flags' shape with the file's laid over it.
fn read_shape(path: &std::path::Path, a: &ServeArgs) -> anyhow::Result<barrage_server::Shape> {
    let text = barrage_metrics::limits::read_capped(path, SHAPE_FILE_MAX)
        .with_context(|| format!("reading the shape file {}", path.display()))?;
    let text = String::from_utf8(text).with_context(|| format!("the shape file {} is not text", path.display()))?;
    let mut shape = barrage_server::Shape {
        latency: a.latency,
        object_size: a.object_size.clone(),
        error_rate: a.error_rate,
        capacity: a.max_concurrency.map(|n| barrage_server::Capacity { concurrency: n, queue: a.max_queue }),
    };
    // Lines are laid over each other in turn; `#` starts a comment line.
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let spec: barrage_server::ShapeSpec =
            line.parse().with_context(|| format!("the shape file {}", path.display()))?;
        spec.apply(&mut shape);
    }
    Ok(shape)
}

/// The largest shape file read: a line or two.
const SHAPE_FILE_MAX: u64 = 64 << 10;

/// Instance `i` of `n`: its own port (the next one after a fixed port, a free one for port
/// 0) and, with several, its own name (`NAME-1`, `NAME-2`…, default `origin-1`…).
fn instance_config(a: &ServeArgs, i: usize, n: usize) -> anyhow::Result<ServeConfig> {
    let listen = next_port(a.listen, i).context("--listen")?;
    let name = match (&a.name, n) {
        (name, 1) => name.clone(),
        (Some(name), _) => Some(format!("{name}-{}", i + 1)),
        (None, _) => Some(format!("origin-{}", i + 1)),
    };
    Ok(ServeConfig {
        listen,
        threads: a.threads,
        tls: a.tls,
        // Instances share one CA file when one is asked for: the first writes it.
        ca_out: if i == 0 { a.ca_out.clone() } else { None },
        latency: a.latency,
        error_rate: a.error_rate,
        name,
        cache_control: a.cache_control.clone(),
        object_size: a.object_size.clone(),
        objects: a.objects,
        stall: a.stall,
        cache_headers: a.cache_headers,
        tls_cert: a.cert.clone().zip(a.key.clone()),
        max_concurrency: a.max_concurrency,
        max_queue: a.max_queue,
        // Shared like the albums: a body PUT to one instance is found on every other.
        store_dir: a.store_dir.clone(),
        // Instances share one log, each line written whole.
        access_log: a.access_log.clone(),
        max_streams: a.max_streams.unwrap_or(barrage_server::DEFAULT_MAX_STREAMS),
        // One directory for all instances: an album posted to one is found on every other.
        album_store: a.album_store.clone(),
        // Beside HTTPS only (the --tls-listen server's is set where it is made).
        http3: a.http3 && a.tls,
    })
}

/// The address of instance `i`: `i` ports after a fixed one; port 0 stays 0 (a free port).
fn next_port(mut addr: std::net::SocketAddr, i: usize) -> anyhow::Result<std::net::SocketAddr> {
    if addr.port() != 0 {
        let port = u16::try_from(usize::from(addr.port()) + i).ok().context("--instances: ports run past 65535")?;
        addr.set_port(port);
    }
    Ok(addr)
}

/// Ctrl-C, SIGTERM (as `kill`, a supervisor or a test sends) or SIGHUP (a closed terminal):
/// each shuts the origin down cleanly, removing the CA file it generated.
struct Stop {
    rt: tokio::runtime::Runtime,
    signals: [tokio::signal::unix::Signal; 3],
}

impl Stop {
    fn install() -> anyhow::Result<Stop> {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let signals = rt.block_on(async { crate::signals::listen() })?;
        Ok(Stop { rt, signals })
    }

    /// The next signal.
    fn wait(&mut self) -> i32 {
        self.rt.block_on(crate::signals::next(&mut self.signals))
    }
}
