//! From a topology to the servers to start: names, roles, free ports, configs.

use crate::servers::{self, Balance, Eviction, Front, Hitch, Launch, Origin, Store, TlsFiles, VarnishPorts};
use serde::{Deserialize, Serialize};
use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::path::{Path, PathBuf};

/// Which servers a testbed runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Topology {
    /// Origins only (`barrage serve`).
    Direct,
    /// An origin behind varnishd.
    Varnish,
    /// An origin behind squid as a reverse-proxy cache.
    Squid,
    /// Origins behind nginx.
    NginxLb,
    /// Origins behind haproxy.
    HaproxyLb,
    /// nginx, haproxy, varnish and squid at once, sharing the origins.
    All,
    /// redis-server instances, no origins.
    Redis,
    /// memcached instances, no origins.
    Memcached,
    /// Origins behind Caddy, which serves HTTP/3 too with `--tls`.
    Caddy,
    /// Origins behind nginx as a cache (`proxy_cache`).
    NginxCache,
}

impl Topology {
    /// Every topology, as named on the command line.
    pub const NAMES: [&'static str; 10] =
        ["direct", "varnish", "squid", "nginx-lb", "haproxy-lb", "all", "redis", "memcached", "caddy", "nginx-cache"];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    /// Origins (or key-value servers) when `--backends` is not given: two to balance over,
    /// one behind a cache, one key-value server.
    pub fn default_backends(self) -> u32 {
        match self {
            Topology::Varnish | Topology::Squid | Topology::NginxCache | Topology::Redis | Topology::Memcached => 1,
            _ => 2,
        }
    }

    fn fronts(self) -> &'static [Kind] {
        match self {
            Topology::Direct | Topology::Redis | Topology::Memcached => &[],
            Topology::Varnish => &[Kind::Varnish],
            Topology::Squid => &[Kind::Squid],
            Topology::NginxLb => &[Kind::Nginx],
            Topology::HaproxyLb => &[Kind::Haproxy],
            Topology::Caddy => &[Kind::Caddy],
            Topology::NginxCache => &[Kind::NginxCache],
            Topology::All => &[Kind::Nginx, Kind::Haproxy, Kind::Varnish, Kind::Squid],
        }
    }

    /// The key-value server a `redis` or `memcached` testbed runs instead of origins.
    fn store(self) -> Option<Kind> {
        match self {
            Topology::Redis => Some(Kind::Redis),
            Topology::Memcached => Some(Kind::Memcached),
            _ => None,
        }
    }
}

impl std::str::FromStr for Topology {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        use Topology::*;
        let all = [Direct, Varnish, Squid, NginxLb, HaproxyLb, All, Redis, Memcached, Caddy, NginxCache];
        all.into_iter()
            .find(|t| t.name() == s)
            .ok_or_else(|| format!("unknown topology '{s}': expected one of {}", Self::NAMES.join(", ")))
    }
}

/// The program a server runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Kind {
    /// `barrage serve`.
    Origin,
    /// nginx as a balancer.
    Nginx,
    /// haproxy as a balancer.
    Haproxy,
    /// varnishd as a cache.
    Varnish,
    /// squid as a reverse-proxy cache.
    Squid,
    /// redis-server, a key-value store.
    Redis,
    /// memcached, a key-value cache.
    Memcached,
    /// Caddy as a balancer (HTTP/3 with TLS).
    Caddy,
    /// nginx as a cache.
    NginxCache,
    /// hitch, TLS in front of varnishd.
    Hitch,
}

impl Kind {
    /// The testbed name of the front of this kind.
    pub fn front_name(self) -> &'static str {
        match self {
            Kind::Origin => "origin",
            Kind::Nginx => "nginx-lb",
            Kind::Haproxy => "haproxy-lb",
            Kind::Varnish => "varnish",
            Kind::Squid => "squid",
            Kind::Redis => "redis",
            Kind::Memcached => "memcached",
            Kind::Caddy => "caddy",
            Kind::NginxCache => "nginx-cache",
            Kind::Hitch => "varnish-tls",
        }
    }

    /// Its name in `testbed status --format json`: the program's (`nginx-cache` for nginx
    /// as a cache).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Origin => "origin",
            Kind::Nginx => "nginx",
            Kind::Haproxy => "haproxy",
            Kind::Varnish => "varnish",
            Kind::Squid => "squid",
            Kind::Redis => "redis",
            Kind::Memcached => "memcached",
            Kind::Caddy => "caddy",
            Kind::NginxCache => "nginx-cache",
            Kind::Hitch => "hitch",
        }
    }

    /// Whether it keeps a cache that `testbed purge` empties.
    pub fn is_cache(self) -> bool {
        matches!(self, Kind::Varnish | Kind::Squid | Kind::NginxCache | Kind::Redis | Kind::Memcached)
    }
}

/// What `testbed up` was asked for.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Options {
    /// Which servers.
    pub topology: Topology,
    /// Origins.
    pub backends: u32,
    /// Terminate HTTPS at the fronts, and serve it from the origins beside plain HTTP.
    pub tls: bool,
    /// How balancers spread requests.
    pub balance: Balance,
    /// The barrage binary that runs the origins.
    pub barrage: PathBuf,
    /// Shapes of the origins, in order, later ones laid over earlier ones key by key:
    /// `latency=100ms,capacity=8` for every origin, `origin-2:latency=200ms` for one (see
    /// [`parse_shape`]).
    #[serde(default)]
    pub shapes: Vec<String>,
    /// The origins' weights at the balancers, one per origin; empty: equal.
    #[serde(default)]
    pub weights: Vec<u32>,
    /// The caches' size in bytes (`--memory`): varnishd's storage, squid's `cache_mem`,
    /// nginx-cache's files, redis-server's `maxmemory`, memcached's `-m`.
    #[serde(default)]
    pub memory: Option<u64>,
    /// redis-server's `maxmemory-policy` (`--eviction`).
    #[serde(default)]
    pub eviction: Option<Eviction>,
    /// Where `down` moves the servers' logs (`NAME/output.log` and each of
    /// [`ServerSpec::logs`]) before it removes the state directory: an experiment's ground
    /// truth outlives its testbed. `None`: they go with it.
    #[serde(default)]
    pub keep_logs: Option<PathBuf>,
}

impl Options {
    /// A testbed of `topology` with nothing else said (its default origins, no TLS, round
    /// robin, no shapes, weights or cache settings), its origins run by the `barrage` binary.
    pub fn new(topology: Topology, barrage: PathBuf) -> Options {
        Options {
            topology,
            backends: topology.default_backends(),
            tls: false,
            balance: Balance::RoundRobin,
            barrage,
            shapes: Vec::new(),
            weights: Vec::new(),
            memory: None,
            eviction: None,
            keep_logs: None,
        }
    }

    /// Refuses what no testbed can be: `--tls` with memcached. memcached 1.6 could serve
    /// TLS (`-Z`), but barrage has no memcache-over-TLS target, so nothing could load it.
    ///
    /// Also refuses weights whose count is not the number of origins, or where no balancer
    /// reads them (Caddy 2.6 has no weighted policy), and shapes that do not parse or name
    /// an origin the testbed does not have.
    pub fn check(&self) -> Result<(), crate::TestbedError> {
        use crate::TestbedError::Options as Bad;
        if self.tls && self.topology == Topology::Memcached {
            return Err(crate::TestbedError::NoTls {
                topology: self.topology.name(),
                why: "barrage has no memcache-over-TLS target (memcache:// is plain TCP) to load it with",
            });
        }
        let balancers = matches!(self.topology, Topology::NginxLb | Topology::HaproxyLb | Topology::All);
        if !self.weights.is_empty() {
            if self.topology == Topology::Caddy {
                return Err(Bad("--weights: Caddy 2.6 has no weighted balancing (weighted_round_robin came in 2.8): use nginx-lb or haproxy-lb".into()));
            }
            if !balancers {
                return Err(Bad(format!(
                    "--weights: the {} testbed has no balancer to weigh origins (nginx-lb, haproxy-lb, all)",
                    self.topology.name()
                )));
            }
            if self.weights.len() != self.backends as usize {
                return Err(Bad(format!(
                    "--weights {}: {} weight(s) for {} origin(s) (--backends): give one per origin",
                    join(&self.weights),
                    self.weights.len(),
                    self.backends
                )));
            }
        }
        if self.topology.store().is_some() && !self.shapes.is_empty() {
            return Err(Bad(format!("--shape: the {} testbed has no origins to shape", self.topology.name())));
        }
        for shape in &self.shapes {
            let (target, _) = parse_shape(shape).map_err(|e| Bad(format!("--shape '{shape}': {e}")))?;
            if let Some(name) = target {
                let known = name.strip_prefix("origin-").and_then(|n| n.parse::<u32>().ok());
                if !known.is_some_and(|n| (1..=self.backends).contains(&n)) {
                    return Err(Bad(format!(
                        "--shape '{shape}': no origin '{name}' (this testbed has origin-1 to origin-{})",
                        self.backends
                    )));
                }
            }
        }
        let caches = self.topology.fronts().iter().chain(self.topology.store().as_slice()).any(|k| k.is_cache());
        if self.memory.is_some() && !caches {
            return Err(Bad(format!(
                "--memory (testbed-memory): the {} testbed has no cache to size (varnish, squid, nginx-cache, all, redis and memcached have)",
                self.topology.name()
            )));
        }
        if self.eviction.is_some() && self.topology != Topology::Redis {
            return Err(Bad(format!(
                "--eviction (testbed-eviction): it is redis-server's maxmemory-policy: the {} testbed runs none",
                self.topology.name()
            )));
        }
        Ok(())
    }
}

fn join(weights: &[u32]) -> String {
    weights.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

/// A `--shape` value: `SPEC` for every origin or `NAME:SPEC` for one (`origin-2:latency=200ms`),
/// SPEC as [`barrage_server::ShapeSpec`] reads it. A prefix is what comes before the first
/// `:` when that holds no `=` (`latency=exp:20ms` has none). The error names the bad part.
pub fn parse_shape(s: &str) -> Result<(Option<String>, barrage_server::ShapeSpec), String> {
    let (target, spec) = match s.split_once(':') {
        Some((name, spec)) if !name.contains('=') => (Some(name.trim().to_string()), spec),
        _ => (None, s),
    };
    let spec = spec.parse::<barrage_server::ShapeSpec>().map_err(|e| e.to_string())?;
    Ok((target, spec))
}

/// The shape of origin `name`: every `shapes` entry for all origins or for it, laid over
/// each other in order, as written.
pub fn origin_shape(shapes: &[String], name: &str) -> String {
    let mut merged = String::new();
    for s in shapes {
        let Ok((target, _)) = parse_shape(s) else { continue };
        if target.as_deref().is_some_and(|t| t != name) {
            continue;
        }
        let spec = if target.is_some() { s.split_once(':').map_or("", |(_, spec)| spec) } else { s.as_str() };
        if let Ok(m) = barrage_server::ShapeSpec::merge(&merged, spec) {
            merged = m;
        }
    }
    merged
}

/// One server of the testbed, ready to start.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ServerSpec {
    /// Unique name (`origin-1`, `nginx-lb`).
    pub name: String,
    /// What it is.
    pub kind: Kind,
    /// A line for humans: "origin", "balancer (nginx, roundrobin over 2 origins)".
    pub role: String,
    /// Its own directory.
    pub dir: PathBuf,
    /// Where it answers plain HTTP.
    pub listen: SocketAddr,
    /// Where it answers HTTPS, if it does.
    pub tls_listen: Option<SocketAddr>,
    /// Program and arguments.
    pub program: String,
    /// Arguments.
    pub args: Vec<String>,
    /// Config files to write before each start.
    pub files: Vec<(PathBuf, String)>,
    /// The Debian package of the program.
    pub package: String,
    /// The user the program drops to, who must own `dir`.
    pub owner: Option<String>,
    /// Files outside `dir` to remove once it exited.
    pub leftovers: Vec<PathBuf>,
    /// Programs started beside it, in its process group (see [`Launch::companions`]).
    #[serde(default)]
    pub companions: Vec<Vec<String>>,
    /// Environment variables it is started with.
    #[serde(default)]
    pub env: Vec<(String, String)>,
    /// It serves HTTP/3 on the UDP port of `tls_listen` too.
    #[serde(default)]
    pub quic: bool,
    /// Its own logs (access logs first), besides its output (`output.log`).
    #[serde(default)]
    pub logs: Vec<PathBuf>,
}

impl ServerSpec {
    /// `http://127.0.0.1:PORT/`; `redis://127.0.0.1:PORT` or `memcache://127.0.0.1:PORT`
    /// for the key-value servers; `https://127.0.0.1:PORT/` for hitch, which serves HTTPS
    /// alone (its `listen` is its `tls_listen`).
    pub fn url(&self) -> String {
        match self.kind {
            Kind::Redis => format!("redis://{}", self.listen),
            Kind::Memcached => format!("memcache://{}", self.listen),
            Kind::Hitch => format!("https://{}/", self.listen),
            _ => format!("http://{}/", self.listen),
        }
    }

    /// An origin's shape file (`DIR/shape`), re-read on SIGHUP.
    pub fn shape_file(&self) -> Option<&Path> {
        (self.kind == Kind::Origin)
            .then(|| self.files.iter().find(|(p, _)| p.ends_with(SHAPE_FILE)))
            .flatten()
            .map(|(p, _)| p.as_path())
    }

    /// An origin's shape as written (`latency=100ms,capacity=8`); empty for none.
    pub fn shape(&self) -> Option<&str> {
        let file = self.shape_file()?;
        self.files.iter().find(|(p, _)| p == file).map(|(_, text)| text.trim())
    }

    /// `https://127.0.0.1:PORT/` when it serves HTTPS; `rediss://127.0.0.1:PORT` for a
    /// redis-server serving TLS.
    pub fn tls_url(&self) -> Option<String> {
        self.tls_listen.map(|a| match self.kind {
            Kind::Redis => format!("rediss://{a}"),
            _ => format!("https://{a}/"),
        })
    }

    fn front(name: &str, kind: Kind, role: String, f: &Front, l: Launch) -> Self {
        Self::launched(name, kind, role, f.dir, f.listen, f.tls.map(|t| t.0), l)
    }

    fn launched(
        name: &str,
        kind: Kind,
        role: String,
        dir: &Path,
        listen: SocketAddr,
        tls_listen: Option<SocketAddr>,
        l: Launch,
    ) -> Self {
        ServerSpec {
            name: name.to_string(),
            kind,
            role,
            dir: dir.to_path_buf(),
            listen,
            tls_listen,
            program: l.program.to_string(),
            args: l.args,
            files: l.files,
            package: l.package.to_string(),
            owner: l.owner.map(str::to_string),
            leftovers: l.leftovers,
            env: l.env,
            quic: l.quic,
            logs: l.logs,
            companions: l.companions,
        }
    }

    /// Its URLs: [`ServerSpec::url`], then [`ServerSpec::tls_url`] when that is another.
    pub fn urls(&self) -> Vec<String> {
        let url = self.url();
        let tls = self.tls_url().filter(|t| *t != url);
        std::iter::once(url).chain(tls).collect()
    }
}

/// The certificate files of a testbed in `dir`.
pub fn tls_files(dir: &Path) -> TlsFiles {
    TlsFiles { cert: dir.join("cert.pem"), key: dir.join("key.pem"), combined: dir.join("combined.pem") }
}

/// The servers of a testbed in `dir`, origins first, on free loopback ports.
pub fn plan(o: &Options, dir: &Path) -> std::io::Result<Vec<ServerSpec>> {
    let mut ports = Ports::default();
    let tls = tls_files(dir);
    if let Some(kind) = o.topology.store() {
        return (1..=o.backends.max(1))
            .map(|i| {
                let listen = ports.next()?;
                // memcached has no TLS here (see `Options::check`).
                let tls_listen = if o.tls && kind == Kind::Redis { Some(ports.next()?) } else { None };
                Ok(store_spec(o, kind, i, dir, listen, tls_listen.map(|a| (a, &tls))))
            })
            .collect();
    }
    let origins: Vec<Origin> = (1..=o.backends.max(1))
        .map(|i| {
            let weight = o.weights.get(i as usize - 1).copied();
            Ok(Origin { name: format!("origin-{i}"), addr: ports.next()?, weight })
        })
        .collect::<std::io::Result<_>>()?;
    let mut specs = Vec::new();
    for origin in &origins {
        // Origins serve HTTPS (and HTTP/3) too, for the direct comparison; fronts reach them
        // over HTTP.
        let tls_listen = if o.tls { Some(ports.next_with_udp()?) } else { None };
        specs.push(origin_spec(o, origin, dir, tls_listen, &tls));
    }
    for &kind in o.topology.fronts() {
        let name = kind.front_name();
        let dir = dir.join(name);
        let listen = ports.next()?;
        // Varnish has no TLS (hitch, after it, has); Caddy serves HTTP/3 on its TLS port's UDP twin.
        let tls_listen = match (o.tls, kind) {
            (false, _) | (true, Kind::Varnish) => None,
            (true, Kind::Caddy) => Some(ports.next_with_udp()?),
            (true, _) => Some(ports.next()?),
        };
        let front = Front {
            name,
            dir: &dir,
            listen,
            tls: tls_listen.map(|a| (a, &tls)),
            origins: &origins,
            balance: o.balance,
            memory: o.memory,
        };
        // Hitch, in front of varnish with --tls: its address, and varnish's listener for it.
        let hitch = if o.tls && kind == Kind::Varnish { Some((ports.next()?, ports.next()?)) } else { None };
        let secret = secret();
        let (launch, role) = match kind {
            Kind::Nginx => (servers::nginx(&front), balancer_role("nginx", o, origins.len())),
            Kind::Haproxy => (servers::haproxy(&front), balancer_role("haproxy", o, origins.len())),
            Kind::Varnish => {
                let ports = VarnishPorts { admin: ports.next()?, secret: &secret, proxy: hitch.map(|h| h.1) };
                (servers::varnish(&front, &ports), format!("cache (varnish) of {}", origins[0].name))
            }
            Kind::Squid => (servers::squid(&front), format!("cache (squid) of {}", origins[0].name)),
            Kind::Caddy => (servers::caddy(&front), balancer_role("caddy", o, origins.len())),
            Kind::NginxCache => (servers::nginx_cache(&front), cache_role("nginx", o, origins.len())),
            Kind::Origin | Kind::Redis | Kind::Memcached | Kind::Hitch => unreachable!("{kind:?} is not a front"),
        };
        specs.push(ServerSpec::front(name, kind, role, &front, launch));
        if let Some((listen, backend)) = hitch {
            let name = Kind::Hitch.front_name();
            let dir = dir.parent().expect("a front's directory is in the testbed's").join(name);
            // Hitch refuses to run its workers as root.
            // SAFETY: geteuid has no preconditions and cannot fail.
            let user = (unsafe { libc::geteuid() } == 0).then_some("nobody");
            let launch = servers::hitch(&Hitch { name, dir: &dir, listen, backend, files: &tls, user });
            let role = "TLS for varnish (hitch)".to_string();
            specs.push(ServerSpec::launched(name, Kind::Hitch, role, &dir, listen, Some(listen), launch));
        }
    }
    Ok(specs)
}

/// A secret for a management port (varnishd's `-S`): 32 hex digits from the standard
/// library's randomly seeded hasher (random per process and per call).
fn secret() -> String {
    use std::hash::{BuildHasher, Hasher};
    let word = || std::collections::hash_map::RandomState::new().build_hasher().finish();
    format!("{:016x}{:016x}", word(), word())
}

/// Key-value server number `i` (`redis-2`, `memcached-3`), with TLS too when `tls` says
/// where.
fn store_spec(
    o: &Options,
    kind: Kind,
    i: u32,
    dir: &Path,
    listen: SocketAddr,
    tls: Option<(SocketAddr, &TlsFiles)>,
) -> ServerSpec {
    let name = format!("{}-{i}", kind.front_name());
    let dir = dir.join(&name);
    let store = Store { name: &name, dir: &dir, listen, tls, memory: o.memory, eviction: o.eviction };
    let (launch, role) = match kind {
        Kind::Redis => (servers::redis(&store), "key-value store (redis-server)"),
        Kind::Memcached => (servers::memcached(&store), "key-value cache (memcached)"),
        _ => unreachable!("{kind:?} is not a key-value server"),
    };
    ServerSpec::launched(&name, kind, role.to_string(), &dir, listen, tls.map(|t| t.0), launch)
}

/// "cache (nginx) of origin-1", "cache (nginx) of 3 origins, roundrobin".
fn cache_role(program: &str, o: &Options, origins: usize) -> String {
    if origins == 1 {
        return format!("cache ({program}) of origin-1");
    }
    let balancer = balancer_role(program, o, origins);
    let over = balancer.split_once(", ").map_or("", |(_, over)| over.trim_end_matches(')'));
    format!("cache ({program}, {over})")
}

fn balancer_role(program: &str, o: &Options, origins: usize) -> String {
    let weights = if o.weights.is_empty() { String::new() } else { format!(", weights {}", join(&o.weights)) };
    format!("balancer ({program}, {} over {origins} origins{weights})", o.balance.name())
}

/// The name of an origin's shape file in its directory.
const SHAPE_FILE: &str = "shape";

/// The store directory every origin of a testbed in `dir` shares (`serve --store-dir`),
/// so a body PUT through a balancer is found by a GET that lands on another origin.
pub fn store_dir(dir: &Path) -> PathBuf {
    dir.join("store")
}

/// The album directory every origin of a testbed in `dir` shares (`serve --album-store`),
/// so that a GET through a balancer finds an album whichever origin stored it. Inside the
/// state directory: private to this user, and removed by `down`.
pub fn album_dir(dir: &Path) -> PathBuf {
    dir.join("albums")
}

/// An origin of the testbed in `bed`: this very barrage binary, `serve`.
fn origin_spec(o: &Options, origin: &Origin, bed: &Path, tls_listen: Option<SocketAddr>, tls: &TlsFiles) -> ServerSpec {
    let dir = &bed.join(&origin.name);
    let mut args: Vec<String> = vec![
        "serve".into(),
        "--listen".into(),
        origin.addr.to_string(),
        "--name".into(),
        origin.name.clone(),
        // Cacheable for five minutes, so caches in front serve hits; balancers ignore it.
        "--cache-control".into(),
        "public, max-age=300".into(),
        "--threads".into(),
        "1".into(),
        "--album-store".into(),
        album_dir(bed).display().to_string(),
        "--store-dir".into(),
        store_dir(bed).display().to_string(),
        // Re-read on SIGHUP: `testbed set` changes the shape of a running origin.
        "--shape-file".into(),
        dir.join(SHAPE_FILE).display().to_string(),
        "--access-log".into(),
        dir.join("access.log").display().to_string(),
    ];
    let shape = format!("{}\n", origin_shape(&o.shapes, &origin.name));
    if let Some(addr) = tls_listen {
        args.extend(["--tls-listen".into(), addr.to_string(), "--http3".into()]);
        args.extend(["--cert".into(), tls.cert.display().to_string(), "--key".into(), tls.key.display().to_string()]);
    }
    ServerSpec {
        name: origin.name.clone(),
        kind: Kind::Origin,
        role: "origin".into(),
        dir: dir.to_path_buf(),
        listen: origin.addr,
        tls_listen,
        program: o.barrage.display().to_string(),
        args,
        files: vec![(dir.join(SHAPE_FILE), shape)],
        package: "barrage".into(),
        owner: None,
        leftovers: Vec::new(),
        env: Vec::new(),
        quic: tls_listen.is_some(),
        logs: vec![dir.join("access.log")],
        companions: Vec::new(),
    }
}

/// Free loopback ports, each held until all are picked so none is handed out twice.
#[derive(Default)]
struct Ports {
    held: Vec<TcpListener>,
    held_udp: Vec<UdpSocket>,
}

/// Tries of a free TCP port whose UDP twin is free too.
const UDP_TWIN_TRIES: usize = 16;

impl Ports {
    fn next(&mut self) -> std::io::Result<SocketAddr> {
        let l = TcpListener::bind("127.0.0.1:0")?;
        let addr = l.local_addr()?;
        self.held.push(l);
        Ok(addr)
    }

    /// A free port for TCP and UDP both (HTTPS and HTTP/3 on one port).
    fn next_with_udp(&mut self) -> std::io::Result<SocketAddr> {
        let mut last = None;
        for _ in 0..UDP_TWIN_TRIES {
            let addr = self.next()?;
            match UdpSocket::bind(addr) {
                Ok(udp) => {
                    self.held_udp.push(udp);
                    return Ok(addr);
                }
                Err(e) => last = Some(e),
            }
        }
        Err(last.expect("at least one try"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(topology: Topology, tls: bool) -> Options {
        Options {
            topology,
            backends: 3,
            tls,
            balance: Balance::RoundRobin,
            barrage: "/bin/barrage".into(),
            shapes: Vec::new(),
            weights: Vec::new(),
            memory: None,
            eviction: None,
            keep_logs: None,
        }
    }

    #[test]
    fn all_shares_the_origins_and_every_port_is_distinct() {
        let dir = Path::new("/tmp/bed");
        let specs = plan(&options(Topology::All, true), dir).unwrap();
        let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            ["origin-1", "origin-2", "origin-3", "nginx-lb", "haproxy-lb", "varnish", "varnish-tls", "squid"]
        );
        // Hitch (varnish-tls) serves HTTPS alone: its `listen` is its TLS address.
        let hitch = &specs[6];
        assert_eq!(
            (hitch.kind, Some(hitch.listen), hitch.url()),
            (Kind::Hitch, hitch.tls_listen, hitch.tls_url().unwrap())
        );
        assert_eq!(hitch.urls().len(), 1);
        let mut ports: Vec<u16> = specs
            .iter()
            .flat_map(|s| std::iter::once(s.listen).chain(s.tls_listen.filter(|t| *t != s.listen)))
            .map(|a| a.port())
            .collect();
        let n = ports.len();
        ports.sort_unstable();
        ports.dedup();
        assert_eq!(ports.len(), n, "no port twice");
        assert_eq!(n, 8 + 6, "HTTPS everywhere, at varnish through hitch");
        assert!(specs.iter().all(|s| s.listen.ip().is_loopback() && s.dir.starts_with(dir)));
        let packages: Vec<&str> = specs[3..].iter().map(|s| s.package.as_str()).collect();
        assert_eq!(packages, ["nginx", "haproxy", "varnish", "hitch", "squid"]);
        // Varnish's listener for hitch, on another port than any above.
        let proxy = specs[5].args.iter().find_map(|a| a.strip_prefix("tls=")).unwrap();
        let backend =
            format!("backend = \"[127.0.0.1]:{}\"", proxy.strip_suffix(",PROXY").unwrap().rsplit(':').next().unwrap());
        assert!(hitch.files[0].1.contains(&backend), "{}", hitch.files[0].1);
        assert!(!ports.contains(&proxy.rsplit_once(':').unwrap().1.trim_end_matches(",PROXY").parse().unwrap()));
        let origin = &specs[0];
        assert_eq!(origin.program, "/bin/barrage");
        assert!(origin.args.windows(2).any(|w| w == ["--name", "origin-1"]), "{:?}", origin.args);
        for origin in &specs[..3] {
            assert!(origin.args.windows(2).any(|w| w == ["--album-store", "/tmp/bed/albums"]), "{:?}", origin.args);
        }
        let balancer = specs.iter().find(|s| s.name == "haproxy-lb").unwrap();
        assert_eq!(balancer.role, "balancer (haproxy, roundrobin over 3 origins)");
    }

    #[test]
    fn caddy_and_the_origins_serve_http3_on_their_tls_ports_udp_twin() {
        let specs = plan(&options(Topology::Caddy, true), Path::new("/tmp/c")).unwrap();
        let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["origin-1", "origin-2", "origin-3", "caddy"]);
        for s in &specs {
            let tls = s.tls_listen.expect("HTTPS with --tls");
            assert!(s.quic, "{} serves HTTP/3", s.name);
            // Held while the plan was made: nothing else took the UDP twin meanwhile, and it
            // is free again now.
            std::net::UdpSocket::bind(tls).unwrap_or_else(|e| panic!("{}: UDP {tls}: {e}", s.name));
        }
        assert!(specs[0].args.iter().any(|a| a == "--http3"), "{:?}", specs[0].args);
        assert_eq!(specs[3].role, "balancer (caddy, roundrobin over 3 origins)");
        assert_eq!(specs[3].package, "caddy");
        let plain = plan(&options(Topology::Caddy, false), Path::new("/tmp/c")).unwrap();
        assert!(plain.iter().all(|s| !s.quic && s.tls_listen.is_none()));
        assert!(plain[0].args.iter().all(|a| a != "--http3"));
    }

    #[test]
    fn topologies_parse_by_name_and_refuse_others() {
        for name in Topology::NAMES {
            assert_eq!(name.parse::<Topology>().unwrap().name(), name);
        }
        let err = "mesh".parse::<Topology>().unwrap_err();
        assert!(err.contains("unknown topology 'mesh'") && err.contains("haproxy-lb"), "{err}");
        let direct = plan(&options(Topology::Direct, false), Path::new("/tmp/d")).unwrap();
        assert_eq!(direct.len(), 3);
        assert!(direct.iter().all(|s| s.tls_listen.is_none()));
    }

    #[test]
    fn key_value_topologies_run_n_instances_and_no_origins() {
        for (topology, program, scheme) in
            [(Topology::Redis, "redis-server", "redis"), (Topology::Memcached, "memcached", "memcache")]
        {
            assert_eq!(topology.default_backends(), 1);
            let specs = plan(&options(topology, false), Path::new("/tmp/kv")).unwrap();
            let name = topology.name();
            let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
            assert_eq!(names, [format!("{name}-1"), format!("{name}-2"), format!("{name}-3")]);
            for s in &specs {
                assert_eq!((s.program.as_str(), s.package.as_str()), (program, program));
                assert_eq!(s.url(), format!("{scheme}://{}", s.listen));
                assert!(s.tls_listen.is_none() && s.tls_url().is_none() && s.listen.ip().is_loopback());
                assert_eq!(s.dir, Path::new("/tmp/kv").join(&s.name));
            }
        }
    }

    #[test]
    fn redis_with_tls_has_a_rediss_port_of_its_own_per_instance() {
        let dir = Path::new("/tmp/kv");
        let specs = plan(&options(Topology::Redis, true), dir).unwrap();
        assert_eq!(specs.len(), 3);
        let mut ports = Vec::new();
        for s in &specs {
            let tls = s.tls_listen.expect("a TLS port");
            assert!(tls.ip().is_loopback() && tls.ip() == s.listen.ip());
            assert_eq!(s.tls_url(), Some(format!("rediss://{tls}")));
            let conf = &s.files[0].1;
            assert!(conf.lines().any(|l| l == format!("tls-port {}", tls.port())), "{conf}");
            let cert = format!("tls-cert-file \"{}\"", dir.join("cert.pem").display());
            assert!(conf.lines().any(|l| l == cert), "the testbed's certificate: {conf}");
            ports.extend([s.listen.port(), tls.port()]);
        }
        ports.sort_unstable();
        ports.dedup();
        assert_eq!(ports.len(), 6, "no port twice");
    }

    #[test]
    fn origins_get_their_shapes_a_shared_store_and_an_access_log() {
        let mut o = options(Topology::HaproxyLb, false);
        o.shapes = vec!["latency=100ms,size=lognormal:4k,1.0,capacity=8+64".into(), "origin-2:latency=200ms".into()];
        o.weights = vec![3, 1, 1];
        o.balance = Balance::UriHash;
        o.check().unwrap();
        let dir = Path::new("/tmp/bed");
        let specs = plan(&o, dir).unwrap();
        let shapes: Vec<Option<&str>> = specs.iter().map(ServerSpec::shape).collect();
        assert_eq!(
            shapes,
            [
                Some("latency=100ms,size=lognormal:4k,1.0,capacity=8+64"),
                Some("latency=200ms,size=lognormal:4k,1.0,capacity=8+64"),
                Some("latency=100ms,size=lognormal:4k,1.0,capacity=8+64"),
                None
            ]
        );
        for origin in &specs[..3] {
            let at = |flag: &str| origin.args.iter().position(|a| a == flag).map(|i| origin.args[i + 1].as_str());
            assert_eq!(at("--store-dir"), Some("/tmp/bed/store"));
            assert_eq!(at("--shape-file"), Some(origin.dir.join("shape").to_str().unwrap()));
            assert_eq!(origin.logs, [origin.dir.join("access.log")]);
            assert_eq!(at("--access-log"), origin.logs[0].to_str());
        }
        assert_eq!(specs[3].role, "balancer (haproxy, uri-hash over 3 origins, weights 3,1,1)");
        assert!(specs[3].files[0].1.contains("server origin-1 ") && specs[3].files[0].1.contains(" weight 3\n"));
    }

    #[test]
    fn bad_weights_and_shapes_are_refused_by_name() {
        let with = |topology, weights: &[u32], shapes: &[&str]| {
            let mut o = options(topology, false);
            o.weights = weights.to_vec();
            o.shapes = shapes.iter().map(|s| s.to_string()).collect();
            o.check().err().map(|e| e.to_string()).unwrap_or_default()
        };
        assert!(with(Topology::HaproxyLb, &[3, 1], &[]).contains("2 weight(s) for 3 origin(s)"));
        assert!(with(Topology::Caddy, &[1, 1, 1], &[]).contains("Caddy 2.6 has no weighted balancing"));
        assert!(with(Topology::Varnish, &[1, 1, 1], &[]).contains("no balancer"));
        assert!(with(Topology::Direct, &[], &["origin-4:latency=1ms"]).contains("no origin 'origin-4'"));
        assert!(with(Topology::Direct, &[], &["latency=1ms,speed=2"]).contains("invalid shape part 'speed=2'"));
        assert!(with(Topology::Redis, &[], &["latency=1ms"]).contains("no origins to shape"));
        assert_eq!(with(Topology::NginxLb, &[1, 2, 3], &["origin-3:errors=1%"]), "");
    }

    #[test]
    fn memcached_refuses_tls_and_says_why() {
        assert!(options(Topology::Memcached, false).check().is_ok());
        assert!(options(Topology::Redis, true).check().is_ok());
        let e = options(Topology::Memcached, true).check().unwrap_err().to_string();
        assert_eq!(
            e,
            "the memcached testbed has no TLS: barrage has no memcache-over-TLS target (memcache:// is plain TCP) \
             to load it with; leave out --tls (testbed-tls in an experiment)"
        );
    }

    #[test]
    fn nginx_cache_fronts_one_origin_by_default_and_caches_in_its_directory() {
        assert_eq!(Topology::NginxCache.default_backends(), 1);
        let one = Options { backends: 1, ..options(Topology::NginxCache, true) };
        let specs = plan(&one, Path::new("/tmp/nc")).unwrap();
        let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["origin-1", "nginx-cache"]);
        let cache = &specs[1];
        assert_eq!(
            (cache.kind, cache.program.as_str(), cache.role.as_str()),
            (Kind::NginxCache, "nginx", "cache (nginx) of origin-1")
        );
        assert!(cache.kind.is_cache() && cache.tls_listen.is_some());
        assert!(cache.files[0].1.contains("proxy_cache_path \"/tmp/nc/nginx-cache/cache\""), "{}", cache.files[0].1);
        assert_eq!(cache.logs, [PathBuf::from("/tmp/nc/nginx-cache/access.log")]);
        let three = plan(&options(Topology::NginxCache, false), Path::new("/tmp/nc")).unwrap();
        assert_eq!(three[3].role, "cache (nginx, roundrobin over 3 origins)");
    }

    #[test]
    fn memory_and_eviction_go_to_the_caches_and_only_there() {
        let sized = |topology, memory, eviction| Options { memory, eviction, ..options(topology, false) };
        for topology in [Topology::Varnish, Topology::Squid, Topology::NginxCache, Topology::All, Topology::Memcached] {
            assert!(sized(topology, Some(1 << 20), None).check().is_ok(), "{topology:?}");
        }
        assert!(sized(Topology::Redis, Some(1 << 20), Some(Eviction::AllKeysLru)).check().is_ok());
        let e = sized(Topology::NginxLb, Some(1 << 20), None).check().unwrap_err().to_string();
        assert!(e.starts_with("--memory (testbed-memory): the nginx-lb testbed has no cache to size"), "{e}");
        let e = sized(Topology::Memcached, None, Some(Eviction::AllKeysLru)).check().unwrap_err().to_string();
        assert!(e.contains("maxmemory-policy: the memcached testbed runs none"), "{e}");
        // Into each server's config.
        let redis =
            plan(&sized(Topology::Redis, Some(2 << 20), Some(Eviction::VolatileTtl)), Path::new("/tmp/r")).unwrap();
        let conf = &redis[0].files[0].1;
        assert!(
            conf.lines().any(|l| l == "maxmemory 2097152")
                && conf.lines().any(|l| l == "maxmemory-policy volatile-ttl"),
            "{conf}"
        );
        let memcached = plan(&sized(Topology::Memcached, Some(8 << 20), None), Path::new("/tmp/m")).unwrap();
        assert!(memcached[0].args.windows(2).any(|w| w == ["-m", "8"]), "{:?}", memcached[0].args);
        let all = plan(&sized(Topology::All, Some(32 << 20), None), Path::new("/tmp/a")).unwrap();
        let by_name = |n: &str| all.iter().find(|s| s.name == n).unwrap();
        assert!(by_name("varnish").args.iter().any(|a| a == "malloc,33554432"));
        assert!(by_name("squid").files[0].1.contains("cache_mem 32 MB"));
        for (name, policy) in Eviction::NAMES.iter().zip(Eviction::NAMES.iter().map(|n| n.parse::<Eviction>().unwrap()))
        {
            assert_eq!(policy.name(), *name);
        }
        assert!("lru".parse::<Eviction>().unwrap_err().contains("allkeys-lru"));
    }

    #[test]
    fn a_missing_program_names_its_debian_package() {
        let e = crate::TestbedError::Missing { program: "varnishd".into(), package: "varnish".into() };
        assert_eq!(e.to_string(), "varnishd not found: install the Debian package 'varnish' (apt-get install varnish)");
    }
}
