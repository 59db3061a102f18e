//! `barrage serve`: the built-in origin in the foreground until Ctrl-C, SIGTERM or SIGHUP.

use crate::args::ServeArgs;
use crate::Exit;
use barrage_server::{Instances, RunningServer, ServeConfig};
use std::io::Write;

/// Starts the origin (or `--instances` of them) and serves until interrupted.
pub fn serve(a: ServeArgs) -> anyhow::Result<Exit> {
    if a.cert.is_some() && !a.tls && a.tls_listen.is_none() {
        anyhow::bail!("--cert is for HTTPS: add --tls or --tls-listen ADDR");
    }
    if a.http3 && !a.tls && a.tls_listen.is_none() {
        anyhow::bail!("--http3 runs over QUIC, which is always encrypted: add --tls or --tls-listen ADDR");
    }
    // Before any address is printed: a script may signal as soon as it reads one. Ctrl-C,
    // SIGTERM (as `kill`, a supervisor or a test sends) or SIGHUP (a closed terminal) each
    // shut the origin down cleanly, removing the CA file it generated.
    let mut stop = barrage_study::signals::Waiter::install()?;
    let instances = Instances { base: config(&a), count: usize::from(a.instances.max(1)), tls_listen: a.tls_listen };
    let shape = a.shape_file.as_deref().map(|path| instances.read_shape(path)).transpose()?;
    let servers = instances.configs(shape.as_ref())?.into_iter().map(RunningServer::start);
    let servers = servers.collect::<Result<Vec<_>, _>>()?;
    let mut out = std::io::stdout().lock();
    for s in &servers {
        let tls = s.url().starts_with("https");
        // Before the address: whoever reads that line has had the warning too.
        barrage_server::warn_if_exposed(
            if tls && a.tls_listen.is_some() { "--tls-listen" } else { "--listen" },
            s.addr(),
        );
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
    while let (libc::SIGHUP, Some(path)) = (stop.wait(), a.shape_file.as_deref()) {
        let said = match instances.reload(path, &servers) {
            Ok(shape) => format!("shape now {shape}"),
            // A bad file leaves the shape as it was; the origin serves on.
            Err(e) => format!("{:#}; the shape is unchanged", anyhow::Error::from(e)),
        };
        let _ = writeln!(std::io::stderr(), "barrage serve: {said}");
    }
    let served: u64 = servers.iter().map(RunningServer::requests).sum();
    // Shut down (the generated CA file removed) before the last word, and say it without
    // `eprintln!`, which panics when nobody reads stderr any more (`2>&1 | head -1`): that
    // ended the process with the file left behind.
    servers.into_iter().for_each(RunningServer::shutdown);
    let _ = writeln!(std::io::stderr(), "served {served} requests");
    Ok(Exit::Ok)
}

/// The origin the flags describe; [`Instances`] makes each instance of it.
fn config(a: &ServeArgs) -> ServeConfig {
    ServeConfig {
        listen: a.listen,
        threads: a.threads,
        tls: a.tls,
        ca_out: a.ca_out.clone(),
        latency: a.latency,
        error_rate: a.error_rate,
        name: a.name.clone(),
        cache_control: a.cache_control.clone(),
        object_size: a.object_size.clone(),
        objects: a.objects,
        stall: a.stall,
        cache_headers: a.cache_headers,
        tls_cert: a.cert.clone().zip(a.key.clone()),
        max_concurrency: a.max_concurrency,
        max_queue: a.max_queue,
        store_dir: a.store_dir.clone(),
        access_log: a.access_log.clone(),
        max_streams: a.max_streams.unwrap_or(barrage_server::DEFAULT_MAX_STREAMS),
        album_store: a.album_store.clone(),
        http3: a.http3,
    }
}
