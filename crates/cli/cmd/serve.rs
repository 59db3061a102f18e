//! `barrage serve`: the built-in origin in the foreground until Ctrl-C.

use crate::args::ServeArgs;
use crate::Outcome;
use barrage_server::{RunningServer, ServeConfig};

/// Starts the origin and serves until interrupted.
pub fn serve(a: ServeArgs) -> anyhow::Result<Outcome> {
    let config = ServeConfig {
        listen: a.listen,
        threads: a.threads,
        tls: a.tls,
        ca_out: a.ca_out,
        latency: a.latency,
        error_rate: a.error_rate,
        name: a.name,
        cache_control: a.cache_control,
        object_size: a.object_size,
        stall: a.stall,
        cache_headers: a.cache_headers,
    };
    let server = RunningServer::start(config)?;
    println!("listening on {}", server.url());
    if let Some(ca) = server.ca_path() {
        println!("CA certificate: {} (use --cacert {})", ca.display(), ca.display());
    }
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    rt.block_on(tokio::signal::ctrl_c())?;
    eprintln!("served {} requests", server.requests());
    server.shutdown();
    Ok(Outcome::Ok)
}
