//! What a key-value run asks for (issue 15, Redis and memcached): its servers
//! (`redis://`, `rediss://`, `memcache://` URLs), the protocol spoken, the SET:GET ratio,
//! value sizes and commands with `{id}`/`{value}` templates, in memtier_benchmark's terms
//! where it has them. Pure parsing, checked when the flags are read; every error says what
//! would be valid.

use bytes::Bytes;

/// The wire protocol of a key-value run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// Redis, RESP2 replies (the default for `redis://`).
    Resp2,
    /// Redis after `HELLO 3`: RESP3 replies (`_` for a missing key).
    Resp3,
    /// memcached's text protocol (`get`, `set`; the default for `memcache://`).
    MemcacheText,
    /// memcached's meta protocol (`mg`, `ms`).
    MemcacheMeta,
}

impl std::str::FromStr for Protocol {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "resp2" => Ok(Protocol::Resp2),
            "resp3" => Ok(Protocol::Resp3),
            "memcache-text" => Ok(Protocol::MemcacheText),
            "memcache-meta" => Ok(Protocol::MemcacheMeta),
            _ => Err(format!("invalid --protocol '{s}': expected resp2, resp3, memcache-text or memcache-meta")),
        }
    }
}

impl Protocol {
    /// Whether it is one of Redis's.
    pub fn is_redis(self) -> bool {
        matches!(self, Protocol::Resp2 | Protocol::Resp3)
    }
}

/// One server of a key-value run, from its URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KvServer {
    /// Host name or address.
    pub host: String,
    /// Port (6379 for Redis, 11211 for memcached when not given).
    pub port: u16,
    /// `rediss://`: TLS, trusted as HTTPS is (`--cacert`, `--insecure`).
    pub tls: bool,
    /// Redis database (`redis://host/3`), selected once per connection.
    pub db: Option<u32>,
    /// Redis ACL user (`redis://user:password@host`).
    pub user: Option<String>,
    /// Redis password (`redis://:password@host` or with a user).
    pub password: Option<String>,
    /// The protocol its scheme implies: RESP2 or memcached's text protocol.
    pub protocol: Protocol,
}

impl KvServer {
    /// `redis://[[user]:password@]host[:port][/db]`, `rediss://…` or `memcache://host[:port]`.
    pub fn parse(url: &str) -> Result<KvServer, String> {
        let bad = |why: &str| {
            format!("invalid server '{url}': {why}; expected redis://host[:port][/db], rediss://… or memcache://host[:port]")
        };
        let (scheme, rest) = url.split_once("://").ok_or_else(|| bad("no scheme"))?;
        let (tls, protocol, default_port) = match scheme {
            "redis" => (false, Protocol::Resp2, 6379),
            "rediss" => (true, Protocol::Resp2, 6379),
            "memcache" | "memcached" => (false, Protocol::MemcacheText, 11211),
            _ => return Err(bad(&format!("the scheme {scheme} is not redis, rediss or memcache"))),
        };
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let (credentials, host_port) = match authority.rsplit_once('@') {
            Some((c, hp)) => (Some(c), hp),
            None => (None, authority),
        };
        let (user, password) = match credentials {
            None => (None, None),
            Some(_) if !protocol.is_redis() => return Err(bad("memcached takes no user or password")),
            Some(c) => {
                let (u, p) = c.split_once(':').unwrap_or(("", c));
                let decode = |s: &str| percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned();
                ((!u.is_empty()).then(|| decode(u)), Some(decode(p)))
            }
        };
        let (host, port) = split_host_port(host_port).map_err(|why| bad(&why))?;
        let port = port.unwrap_or(default_port);
        let db = match path.trim_end_matches('/') {
            "" => None,
            _ if !protocol.is_redis() => return Err(bad("memcached has no databases")),
            n => Some(n.parse::<u32>().map_err(|_| bad(&format!("the database '{n}' is not a number")))?),
        };
        Ok(KvServer { host, port, tls, db, user, password, protocol })
    }
}

impl KvServer {
    /// Its URL without credentials: `redis://127.0.0.1:6379/2`, `memcache://[::1]:11211`.
    pub fn url(&self) -> String {
        let scheme = match (self.protocol.is_redis(), self.tls) {
            (true, true) => "rediss",
            (true, false) => "redis",
            (false, _) => "memcache",
        };
        let host = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        let db = self.db.map_or(String::new(), |db| format!("/{db}"));
        format!("{scheme}://{host}:{}{db}", self.port)
    }
}

/// `host`, `host:port`, `[v6]` or `[v6]:port`.
fn split_host_port(s: &str) -> Result<(String, Option<u16>), String> {
    let (host, port) = match s.strip_prefix('[') {
        Some(v6) => {
            let (host, after) = v6.split_once(']').ok_or("an IPv6 address without its ']'")?;
            (host, after.strip_prefix(':'))
        }
        None => match s.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (s, None),
        },
    };
    if host.is_empty() {
        return Err("no host".into());
    }
    let port = match port {
        None => None,
        Some(p) => Some(p.parse::<u16>().ok().filter(|p| *p > 0).ok_or(format!("port {p} is not in 1..=65535"))?),
    };
    Ok((host.to_string(), port))
}

/// memtier's `--ratio SET:GET` (`1:10`; also `set:get=1:10`): how many of each in a round.
pub fn parse_ratio(s: &str) -> Result<(u32, u32), String> {
    let bad = || format!("invalid --ratio '{s}': expected SET:GET counts such as 1:10 (or 0:1 for gets only)");
    let numbers = s.strip_prefix("set:get=").unwrap_or(s);
    let (set, get) = numbers.split_once(':').ok_or_else(bad)?;
    let (set, get) = (set.trim().parse::<u32>().map_err(|_| bad())?, get.trim().parse::<u32>().map_err(|_| bad())?);
    if set + get == 0 || set > 1000 || get > 1000 {
        return Err(bad());
    }
    Ok((set, get))
}

/// Sizes of the values a run SETs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ValueSizes {
    /// Every value this long (`--data-size 32`).
    Fixed(u32),
    /// Uniformly from min to max (`--data-size-range 32-1024`).
    Range(u32, u32),
    /// Sizes with weights (`--data-size-list 32:1,1024:4`).
    List(Vec<(u32, u32)>),
}

/// The largest value a run SETs.
pub const MAX_VALUE: u32 = 64 << 20;

impl ValueSizes {
    /// `32`, `32-1024` or `32:1,1024:4` (sizes in bytes; `k`/`m` units accepted).
    pub fn parse(s: &str) -> Result<ValueSizes, String> {
        let bad = |why: String| {
            format!("invalid value size '{s}': {why}; expected 32, a range 32-1024 or weighted sizes 32:1,1024:4")
        };
        let size = |t: &str| -> Result<u32, String> {
            let n = barrage_metrics::units::parse_size(t.trim()).map_err(|e| bad(e.to_string()))?;
            u32::try_from(n).ok().filter(|n| *n <= MAX_VALUE).ok_or_else(|| bad(format!("{t} is over 64 MiB")))
        };
        if s.contains(':') {
            let pairs = s.split(',').map(|p| {
                let (sz, w) = p.split_once(':').ok_or_else(|| bad(format!("'{p}' has no weight")))?;
                let w = w.trim().parse::<u32>().ok().filter(|w| (1..=1_000_000).contains(w));
                Ok((size(sz)?, w.ok_or_else(|| bad(format!("the weight of '{p}' is not 1..=1000000")))?))
            });
            return pairs.collect::<Result<Vec<_>, String>>().map(ValueSizes::List);
        }
        match s.split_once('-') {
            Some((lo, hi)) => match (size(lo)?, size(hi)?) {
                (lo, hi) if lo <= hi => Ok(ValueSizes::Range(lo, hi)),
                _ => Err(bad("the range goes down".into())),
            },
            None => Ok(ValueSizes::Fixed(size(s)?)),
        }
    }

    /// The size drawn by the random number `r` (uniform over u64): fixed, uniform over the
    /// range, or by weight from the list. A pure function, so each slot draws from its own
    /// seeded stream and runs repeat.
    pub fn size(&self, r: u64) -> u32 {
        match self {
            ValueSizes::Fixed(n) => *n,
            ValueSizes::Range(lo, hi) => lo + (r % (u64::from(hi - lo) + 1)) as u32,
            ValueSizes::List(l) => {
                let total: u64 = l.iter().map(|(_, w)| u64::from(*w)).sum();
                let mut at = r % total.max(1);
                for (size, weight) in l {
                    match at.checked_sub(u64::from(*weight)) {
                        Some(rest) => at = rest,
                        None => return *size,
                    }
                }
                l.last().map_or(0, |(s, _)| *s)
            }
        }
    }

    /// The largest size it can draw.
    pub fn max(&self) -> u32 {
        match self {
            ValueSizes::Fixed(n) => *n,
            ValueSizes::Range(_, hi) => *hi,
            ValueSizes::List(l) => l.iter().map(|(s, _)| *s).max().unwrap_or(0),
        }
    }
}

/// One argument of a command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Arg {
    /// Sent as written.
    Lit(Bytes),
    /// The request's key: `prefix`, the id, `suffix` (`h:{id}`, memtier's `__key__`).
    Key {
        /// Before the id.
        prefix: Bytes,
        /// After the id.
        suffix: Bytes,
    },
    /// A value of the run's sizes (`{value}`, memtier's `__data__`).
    Value,
}

/// A command as `--command 'HSET h:{id} f {value}'` gives it: words split on spaces, `{id}`
/// (the key's number), `__key__` (memtier's: `key_prefix` then the number) and `{value}` (or
/// `__data__`) filled per request. At most one key per argument; the first word is the
/// command's name.
pub fn parse_command(s: &str, key_prefix: &str) -> Result<Vec<Arg>, String> {
    let bad = |why: &str| format!("invalid --command '{s}': {why}; e.g. 'HSET h:{{id}} f {{value}}'");
    let words: Vec<&str> = s.split_whitespace().collect();
    if words.is_empty() {
        return Err(bad("no command"));
    }
    if words.len() > 64 {
        return Err(bad("more than 64 words"));
    }
    words
        .iter()
        .map(|w| {
            let w = w.replace("__key__", &format!("{key_prefix}{{id}}"));
            match (w.as_str(), w.matches("{id}").count()) {
                ("{value}" | "__data__", _) => Ok(Arg::Value),
                (_, 0) => Ok(Arg::Lit(Bytes::from(w))),
                (_, 1) => {
                    let (prefix, suffix) = w.split_once("{id}").expect("counted");
                    Ok(Arg::Key { prefix: Bytes::from(prefix.to_string()), suffix: Bytes::from(suffix.to_string()) })
                }
                _ => Err(bad("{id} stands at most once in a word")),
            }
        })
        .collect()
}

/// One command of a key-value run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KvCommand {
    /// Read the key: Redis `GET`, memcached `get` or `mg <key> v`. A nil, `END` or `EN` is a
    /// miss, a value a hit.
    Get,
    /// Store a value of the run's sizes under the key: Redis `SET`, memcached `set` or `ms`.
    Set,
    /// `--command`: anything else, Redis only. A nil reply is a miss, a value a hit, any
    /// other reply (an integer, `OK`, an array) counts as neither.
    Custom(Vec<Arg>),
}

impl KvCommand {
    /// The name it is counted under (`SET`, `GET`, or the command's first word in capitals).
    pub fn name(&self) -> String {
        match self {
            KvCommand::Get => "GET".into(),
            KvCommand::Set => "SET".into(),
            KvCommand::Custom(args) => match args.first() {
                Some(Arg::Lit(w)) => String::from_utf8_lossy(w).to_ascii_uppercase(),
                _ => "COMMAND".into(),
            },
        }
    }
}

/// The longest key barrage builds (memcached's limit).
pub const MAX_KEY: usize = 250;

/// What a key-value run sends where: the engine's side of `Protocol::Kv`. Its `commands` are
/// indexed like the plan's targets (one target per command of a ratio's round, each named
/// after its command), so the schedule, picks, retries and every figure work as for HTTP.
#[derive(Clone, Debug)]
pub struct KvPlan {
    /// The wire protocol.
    pub protocol: Protocol,
    /// The servers keys are spread over.
    pub servers: Vec<KvServer>,
    /// How keys are spread (`None` with one server).
    pub distribution: Option<crate::ring::Distribution>,
    /// Commands in flight per connection (`--pipeline`): each of the load's connections
    /// carries this many slots.
    pub pipeline: usize,
    /// Before each key's number (`--key-prefix`, memtier's `memtier-` by default).
    pub key_prefix: Bytes,
    /// The first key's number (`--key-minimum`); picks draw offsets from it.
    pub key_min: u64,
    /// Sizes of the values SET.
    pub values: ValueSizes,
    /// The commands, indexed like the plan's targets.
    pub commands: Vec<KvCommand>,
}

impl KvPlan {
    /// The server of `key`.
    pub fn server(&self, key: &[u8]) -> usize {
        self.distribution.as_ref().map_or(0, |d| d.server(key))
    }

    /// Checks what the types cannot: keys memcached would refuse, arbitrary commands on
    /// memcached, a pipeline of 0.
    pub fn validate(&self) -> Result<(), String> {
        if self.servers.is_empty() {
            return Err("a key-value run needs a server (redis://host:port or memcache://host:port)".into());
        }
        if !(1..=1024).contains(&self.pipeline) {
            return Err(format!("invalid --pipeline {}: expected 1..=1024", self.pipeline));
        }
        if self.key_prefix.len() + 20 > MAX_KEY
            || self.key_prefix.iter().any(|b| b.is_ascii_whitespace() || b.is_ascii_control())
        {
            return Err(format!(
                "invalid --key-prefix '{}': at most {} bytes, without spaces or control characters (keys go on memcached's text lines)",
                String::from_utf8_lossy(&self.key_prefix),
                MAX_KEY - 20
            ));
        }
        let custom = self.commands.iter().any(|c| matches!(c, KvCommand::Custom(_)));
        if custom && !self.protocol.is_redis() {
            return Err("--command sends Redis commands; memcached runs take --ratio SET:GET".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_urls() {
        let s = KvServer::parse("redis://127.0.0.1").unwrap();
        assert_eq!(
            (s.host.as_str(), s.port, s.tls, s.db, s.protocol),
            ("127.0.0.1", 6379, false, None, Protocol::Resp2)
        );
        let s = KvServer::parse("rediss://al%20ice:s3cret@[::1]:6380/3").unwrap();
        assert_eq!((s.host.as_str(), s.port, s.tls, s.db), ("::1", 6380, true, Some(3)));
        assert_eq!((s.user.as_deref(), s.password.as_deref()), (Some("al ice"), Some("s3cret")));
        let s = KvServer::parse("redis://:pw@h").unwrap();
        assert_eq!((s.user, s.password.as_deref()), (None, Some("pw")));
        let s = KvServer::parse("memcache://127.0.0.1:21301").unwrap();
        assert_eq!((s.port, s.protocol), (21301, Protocol::MemcacheText));
        assert_eq!(KvServer::parse("memcache://h").unwrap().port, 11211);
        for (bad, why) in [
            ("h:6379", "no scheme"),
            ("http://h/", "the scheme http"),
            ("redis://h:0", "port 0"),
            ("redis://h:99999", "port 99999"),
            ("redis://h/x", "the database 'x'"),
            ("memcache://u:p@h", "no user or password"),
            ("memcache://h/1", "no databases"),
            ("redis://", "no host"),
            ("redis://[::1", "without its ']'"),
        ] {
            let e = KvServer::parse(bad).unwrap_err();
            assert!(e.contains(why) && e.contains("expected redis://"), "{bad}: {e}");
        }
    }

    #[test]
    fn ratios_sizes_and_protocols() {
        assert_eq!(parse_ratio("1:10"), Ok((1, 10)));
        assert_eq!(parse_ratio("set:get=0:1"), Ok((0, 1)));
        for bad in ["1", "0:0", "a:b", "1:10:1", "2000:1"] {
            assert!(parse_ratio(bad).unwrap_err().contains("expected SET:GET"), "{bad}");
        }
        assert_eq!(ValueSizes::parse("32"), Ok(ValueSizes::Fixed(32)));
        assert_eq!(ValueSizes::parse("1k-4k"), Ok(ValueSizes::Range(1024, 4096)));
        assert_eq!(ValueSizes::parse("32:1,1k:4"), Ok(ValueSizes::List(vec![(32, 1), (1024, 4)])));
        assert_eq!(ValueSizes::parse("32:1,1k:4").unwrap().max(), 1024);
        for bad in ["4k-1k", "32:0", "32:x", "1g", "abc"] {
            assert!(ValueSizes::parse(bad).unwrap_err().starts_with("invalid value size"), "{bad}");
        }
        assert_eq!("resp3".parse(), Ok(Protocol::Resp3));
        assert!("resp4".parse::<Protocol>().unwrap_err().contains("expected resp2"));
    }

    #[test]
    fn sizes_are_drawn_as_asked() {
        assert_eq!(ValueSizes::Fixed(32).size(12345), 32);
        let range = ValueSizes::Range(10, 12);
        let drawn: std::collections::BTreeSet<u32> = (0..30).map(|r| range.size(r)).collect();
        assert_eq!(drawn.into_iter().collect::<Vec<_>>(), [10, 11, 12]);
        let list = ValueSizes::List(vec![(32, 1), (1024, 3)]);
        let big = (0..4000u64).filter(|r| list.size(*r) == 1024).count();
        assert_eq!(big, 3000);
    }

    #[test]
    fn commands_with_keys_and_values() {
        let lit = |s: &'static str| Arg::Lit(Bytes::from_static(s.as_bytes()));
        let key = |p: &'static str, s: &'static str| Arg::Key {
            prefix: Bytes::from_static(p.as_bytes()),
            suffix: Bytes::from_static(s.as_bytes()),
        };
        assert_eq!(
            parse_command("HSET h:{id} f {value}", "memtier-").unwrap(),
            [lit("HSET"), key("h:", ""), lit("f"), Arg::Value]
        );
        assert_eq!(
            parse_command("SET __key__ __data__", "memtier-").unwrap(),
            [lit("SET"), key("memtier-", ""), Arg::Value]
        );
        assert!(parse_command("  ", "").unwrap_err().contains("no command"));
        assert!(parse_command("GET {id}{id}", "").unwrap_err().contains("at most once"));
    }
}
