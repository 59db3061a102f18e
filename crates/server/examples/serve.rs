//! Runs the origin for a while, for trying it by hand or benchmarking it against other
//! servers: `cargo run --release -p barrage-server --example serve -- [ADDR] [THREADS] [SECONDS]`
//! (defaults: 127.0.0.1:8080, one thread per core, 60 s).

use std::time::Duration;

use barrage_server::{RunningServer, ServeConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let listen = args.next().unwrap_or_else(|| "127.0.0.1:8080".into()).parse()?;
    let threads = args.next().map_or(Ok(0), |t| t.parse())?;
    let seconds = args.next().map_or(Ok(60), |s| s.parse())?;
    let server = RunningServer::start(ServeConfig { listen, threads, ..ServeConfig::default() })?;
    println!("serving {} for {seconds}s", server.url());
    std::thread::sleep(Duration::from_secs(seconds));
    println!("{} requests", server.requests());
    server.shutdown();
    Ok(())
}
