//! Key-value commands: what a run's servers and commands are made into once ([`KvRun`]),
//! how a command is encoded and its reply counted, and how a connection is opened.
//! [`super::group`] runs them on the engine's slots.
//!
//! A command's latency is its own, from when it was due to when its reply was complete:
//! with pipelining it includes the wait behind the commands ahead of it on the connection
//! (that is what a client sees), unlike redis-benchmark, which times a whole batch once.

use super::conn::{Answer, Got, Parse};
use super::{append, memcache, resp, ErrorClass};
use crate::attempt::Done;
use crate::conn::{Connector, Endpoint, Failure, Stream};
use crate::timing::Phases;
use barrage_metrics::{CacheStatus, ErrorKind, Outcome, Phase};
use barrage_plan::kv::{Arg, KvCommand, KvPlan, Protocol};
use barrage_plan::Plan;
use bytes::{Bytes, BytesMut};
use http::HeaderValue;
use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// What every thread's key-value slots share: the plan's commands and servers, made ready.
pub struct KvRun {
    pub(super) plan: Arc<KvPlan>,
    endpoints: Vec<Endpoint>,
    /// `host:port` of each server: the backend its figures go under.
    pub(super) labels: Vec<HeaderValue>,
    /// Each server's URL as the run lists it (unredacted), for the request log.
    pub(super) urls: Vec<String>,
    /// What each new connection to a server sends first, and how many replies it awaits.
    hellos: Vec<(Bytes, usize)>,
    /// The bytes values are cut from (as long as the largest value).
    pub(super) value: Bytes,
}

impl KvRun {
    /// The run of `plan`'s key-value part.
    pub fn new(plan: &Plan, kv: Arc<KvPlan>) -> KvRun {
        let endpoints = kv
            .servers
            .iter()
            .map(|s| {
                let literal = s.host.parse::<std::net::IpAddr>().ok().map(|ip| std::net::SocketAddr::new(ip, s.port));
                let fixed_addr = plan.resolve.get(&(s.host.clone(), s.port)).copied().or(literal);
                Endpoint { host: s.host.clone(), port: s.port, tls: s.tls, fixed_addr }
            })
            .collect();
        let labels = kv
            .servers
            .iter()
            .map(|s| {
                let host = if s.host.contains(':') { format!("[{}]", s.host) } else { s.host.clone() };
                HeaderValue::from_str(&format!("{host}:{}", s.port)).expect("a host and port are a valid header value")
            })
            .collect();
        let hellos = kv.servers.iter().map(|s| hello(kv.protocol, s)).collect();
        // Values are bytes of a seeded stream, as memtier's random data: not one repeated
        // byte a compressing store would shrink.
        let mut state = plan.draw_seed();
        let value = (0..kv.values.max())
            .map(|_| {
                state = barrage_plan::pick::splitmix64(state);
                b'a' + (state % 26) as u8
            })
            .collect::<Vec<u8>>()
            .into();
        let urls = kv.servers.iter().map(barrage_plan::kv::KvServer::url).collect();
        KvRun { plan: kv, endpoints, labels, urls, hellos, value }
    }

    /// Commands in flight per connection.
    pub fn pipeline(&self) -> usize {
        self.plan.pipeline
    }
}

/// What a new connection says first: `HELLO 3` (with `AUTH` in it) for RESP3, `AUTH` for a
/// password, `SELECT` for a database; nothing for memcached.
fn hello(protocol: Protocol, s: &barrage_plan::kv::KvServer) -> (Bytes, usize) {
    let mut out = BytesMut::new();
    let mut replies = 0;
    let password = s.password.as_deref().map(str::as_bytes);
    let user = s.user.as_deref().unwrap_or("default").as_bytes();
    match (protocol, password) {
        (Protocol::Resp3, Some(p)) => resp::encode_command(&mut out, &[b"HELLO", b"3", b"AUTH", user, p]),
        (Protocol::Resp3, None) => resp::encode_command(&mut out, &[b"HELLO", b"3"]),
        (Protocol::Resp2, Some(p)) if s.user.is_some() => resp::encode_command(&mut out, &[b"AUTH", user, p]),
        (Protocol::Resp2, Some(p)) => resp::encode_command(&mut out, &[b"AUTH", p]),
        _ => {}
    }
    replies += usize::from(!out.is_empty());
    if let Some(db) = s.db {
        resp::encode_command(&mut out, &[b"SELECT", db.to_string().as_bytes()]);
        replies += 1;
    }
    (out.freeze(), replies)
}

/// A command's reply as the engine records it: a value is a hit, a nil a miss (both 200),
/// a server error its class's status (see [`ErrorClass::status`]).
pub(super) fn done<'a>(
    a: Answer,
    submitted: std::time::Duration,
    bytes_out: u64,
    backend: &'a HeaderValue,
    phases: &Phases,
) -> Done<'a> {
    phases.exchanged(submitted, Some(a.written), a.first_byte, a.done);
    let (status, cache, reply) = match a.got {
        Got::Value => (200, CacheStatus::Hit, None),
        Got::Miss => (200, CacheStatus::Miss, None),
        Got::Done => (200, CacheStatus::Unknown, None),
        Got::Error(class, message) => (class.status(), CacheStatus::Unknown, Some((class, message))),
    };
    Done {
        outcome: Outcome::Status(status),
        bytes_in: a.bytes_in,
        bytes_out,
        cache,
        origin: barrage_metrics::Origin::Unstamped,
        backend: Some(std::borrow::Cow::Borrowed(backend)),
        reply,
        ended: Some(a.done),
    }
}

/// Writes the command's keys one after the other into `keys`, and where each is into
/// `ranges` (both cleared first, their capacity kept). Built-in commands have one key: the
/// prefix and the number.
pub(super) fn fill_keys(
    keys: &mut BytesMut,
    ranges: &mut Vec<Range<usize>>,
    plan: &KvPlan,
    cmd: &KvCommand,
    number: u64,
) {
    keys.clear();
    ranges.clear();
    let mut buffer = itoa::Buffer::new();
    let digits = buffer.format(number).as_bytes();
    let mut put = |prefix: &[u8], suffix: &[u8]| {
        let start = keys.len();
        append(keys, prefix);
        append(keys, digits);
        append(keys, suffix);
        ranges.push(start..keys.len());
    };
    match cmd {
        KvCommand::Get | KvCommand::Set => put(&plan.key_prefix, b""),
        KvCommand::Custom(args) => {
            for a in args {
                if let Arg::Key { prefix, suffix } = a {
                    put(prefix, suffix);
                }
            }
        }
    }
}

/// How a command's reply is read.
pub(super) fn parse_of(protocol: Protocol, cmd: &KvCommand) -> Parse {
    match (protocol, cmd) {
        (Protocol::Resp2, _) => Parse::Resp2,
        (Protocol::Resp3, _) => Parse::Resp3,
        (Protocol::MemcacheText, KvCommand::Get) => Parse::Text(memcache::TextKind::Get),
        (Protocol::MemcacheText, _) => Parse::Text(memcache::TextKind::Storage),
        (Protocol::MemcacheMeta, _) => Parse::Meta,
    }
}

/// Most arguments of a command (`--command` refuses more).
const MAX_ARGS: usize = 64;

/// Encodes the command into `out`.
pub(super) fn encode(
    out: &mut BytesMut,
    protocol: Protocol,
    cmd: &KvCommand,
    keys: &[u8],
    ranges: &[Range<usize>],
    value: &[u8],
) {
    let key = ranges.first().map_or(&[][..], |r| &keys[r.clone()]);
    match (protocol, cmd) {
        (Protocol::MemcacheText, KvCommand::Get) => memcache::encode_get(out, key),
        (Protocol::MemcacheText, _) => memcache::encode_set(out, key, value, 0),
        (Protocol::MemcacheMeta, KvCommand::Get) => memcache::encode_mg(out, key),
        (Protocol::MemcacheMeta, _) => memcache::encode_ms(out, key, value),
        (_, KvCommand::Get) => resp::encode_get(out, key),
        (_, KvCommand::Set) => resp::encode_set(out, key, value),
        (_, KvCommand::Custom(args)) => {
            let mut parts: [&[u8]; MAX_ARGS] = [&[]; MAX_ARGS];
            let mut next_key = 0;
            for (part, arg) in parts.iter_mut().zip(args) {
                *part = match arg {
                    Arg::Lit(b) => b,
                    Arg::Value => value,
                    Arg::Key { .. } => {
                        let r = &ranges[next_key];
                        next_key += 1;
                        &keys[r.clone()]
                    }
                };
            }
            resp::encode_command(out, &parts[..args.len().min(MAX_ARGS)]);
        }
    }
}

/// Why a connection did not open.
pub(super) enum Unopened {
    /// It failed: the command that opened it fails with this.
    Failed(Failure),
    /// The server answered its greeting (`HELLO`, `AUTH`, `SELECT`) with an error reply (a
    /// wrong password, a database it does not have): that is the server's answer to the
    /// command that opened the connection, counted under its class as any reply is. The
    /// greeting went out at `sent` (from the run's start), `bytes_out` long.
    Refused { answer: Answer, sent: Duration, bytes_out: u64 },
}

impl From<Failure> for Unopened {
    fn from(f: Failure) -> Unopened {
        Unopened::Failed(f)
    }
}

/// Connects to `server` and says hello: the stream, ready for commands. DNS, connect and
/// TLS go into `phases` (HELLO, AUTH and SELECT count in connect, as TLS does). Times are
/// offsets from `base`, the run's start.
pub(super) async fn connect(
    connector: &Connector,
    run: &KvRun,
    server: usize,
    phases: &Phases,
    base: Instant,
) -> Result<Stream, Unopened> {
    let ep = &run.endpoints[server];
    let opening = async {
        let mut io = connector.open(ep, phases).await?;
        let t = Instant::now();
        greet(&mut io, &run.hellos[server], run.plan.protocol, ep, base).await?;
        if run.hellos[server].1 > 0 {
            // HELLO, AUTH and SELECT are part of opening the connection, as TLS is.
            let connect = phases.get(Phase::Connect).unwrap_or_default();
            phases.set(Phase::Connect, connect + t.elapsed());
        }
        Ok::<_, Unopened>(io)
    };
    match tokio::time::timeout(connector.connect_timeout(), opening).await {
        Ok(r) => r,
        Err(_) => Err(connector.timed_out(ep).into()),
    }
}

/// Sends a new connection's `HELLO`/`AUTH`/`SELECT` and checks their replies.
async fn greet(
    io: &mut Stream,
    (hello, replies): &(Bytes, usize),
    protocol: Protocol,
    ep: &Endpoint,
    base: Instant,
) -> Result<(), Unopened> {
    if *replies == 0 {
        return Ok(());
    }
    let failed = |e: std::io::Error| Failure::new(ErrorKind::Reset, format!("greeting {}:{}: {e}", ep.host, ep.port));
    let sent = base.elapsed();
    io.write_all(hello).await.map_err(failed)?;
    let written = base.elapsed();
    let parse = if protocol == Protocol::Resp3 { Parse::Resp3 } else { Parse::Resp2 };
    let mut buf = BytesMut::with_capacity(1024);
    let (mut first_byte, mut consumed, mut partial) = (None, 0, super::Partial::default());
    for _ in 0..*replies {
        loop {
            let parsed = parse.reply(&buf, &mut partial).map_err(|e| Failure::new(ErrorKind::Protocol, e))?;
            if let Some((reply, used)) = parsed {
                if let super::Reply::Error { class, message } = reply {
                    let text = format!("{} (to the connection's greeting)", String::from_utf8_lossy(&buf[message]));
                    let done = base.elapsed();
                    let first_byte = first_byte.unwrap_or(done);
                    let got = Got::Error(class, text.into_boxed_str());
                    let answer = Answer { got, bytes_in: (consumed + used) as u64, written, first_byte, done };
                    return Err(Unopened::Refused { answer, sent, bytes_out: hello.len() as u64 });
                }
                bytes::Buf::advance(&mut buf, used);
                consumed += used;
                break;
            }
            if buf.len() > 1 << 20 {
                return Err(Failure::new(ErrorKind::Protocol, "the greeting's reply is over 1 MiB").into());
            }
            if io.read_buf(&mut buf).await.map_err(failed)? == 0 {
                let why = format!("{}:{} closed the connection on its greeting", ep.host, ep.port);
                return Err(Failure::new(ErrorKind::Reset, why).into());
            }
            first_byte.get_or_insert_with(|| base.elapsed());
        }
    }
    Ok(())
}

impl ErrorClass {
    /// The HTTP status a class is counted under, so successes, retries (`--retry-on 5xx`),
    /// SLOs and the by-class figures work as for HTTP; the report names the class itself
    /// in its "Server replies" table.
    pub fn status(self) -> u16 {
        match self {
            ErrorClass::WrongType | ErrorClass::ClientError => 400,
            ErrorClass::NoAuth | ErrorClass::WrongPass => 401,
            ErrorClass::NoPerm => 403,
            ErrorClass::NotStored | ErrorClass::Exists => 409,
            ErrorClass::Moved | ErrorClass::Ask => 421,
            ErrorClass::McError => 501,
            ErrorClass::Loading
            | ErrorClass::Busy
            | ErrorClass::ReadOnly
            | ErrorClass::MasterDown
            | ErrorClass::TryAgain
            | ErrorClass::ClusterDown => 503,
            ErrorClass::Oom => 507,
            ErrorClass::Err | ErrorClass::OtherRedis | ErrorClass::ServerError => 500,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use barrage_plan::kv::{parse_command, ValueSizes};

    fn plan(commands: Vec<KvCommand>, protocol: Protocol) -> KvPlan {
        KvPlan {
            protocol,
            servers: vec![barrage_plan::kv::KvServer::parse("redis://127.0.0.1:1").unwrap()],
            distribution: None,
            pipeline: 1,
            key_prefix: Bytes::from_static(b"memtier-"),
            key_min: 100,
            values: ValueSizes::Fixed(3),
            commands,
        }
    }

    /// The bytes a command goes out as, for key number `number`.
    fn wire(p: &KvPlan, cmd: usize, number: u64) -> String {
        let (mut keys, mut ranges, mut out) = (BytesMut::new(), Vec::new(), BytesMut::new());
        fill_keys(&mut keys, &mut ranges, p, &p.commands[cmd], number);
        encode(&mut out, p.protocol, &p.commands[cmd], &keys, &ranges, b"abc");
        String::from_utf8(out.to_vec()).unwrap()
    }

    #[test]
    fn built_in_commands_in_each_protocol() {
        let cmds = vec![KvCommand::Set, KvCommand::Get];
        let p = plan(cmds.clone(), Protocol::Resp2);
        assert_eq!(wire(&p, 0, 7), "*3\r\n$3\r\nSET\r\n$9\r\nmemtier-7\r\n$3\r\nabc\r\n");
        assert_eq!(wire(&p, 1, 7), "*2\r\n$3\r\nGET\r\n$9\r\nmemtier-7\r\n");
        let p = plan(cmds.clone(), Protocol::MemcacheText);
        assert_eq!(
            (wire(&p, 0, 7), wire(&p, 1, 7)),
            ("set memtier-7 0 0 3\r\nabc\r\n".into(), "get memtier-7\r\n".into())
        );
        let p = plan(cmds, Protocol::MemcacheMeta);
        assert_eq!(
            (wire(&p, 0, 7), wire(&p, 1, 7)),
            ("ms memtier-7 3 T0\r\nabc\r\n".into(), "mg memtier-7 v\r\n".into())
        );
    }

    #[test]
    fn custom_commands_fill_every_key_and_value() {
        let cmd = KvCommand::Custom(parse_command("HSET h:{id}:x __key__ {value}", "memtier-").unwrap());
        let p = plan(vec![cmd], Protocol::Resp3);
        assert_eq!(wire(&p, 0, 1234), "*4\r\n$4\r\nHSET\r\n$8\r\nh:1234:x\r\n$12\r\nmemtier-1234\r\n$3\r\nabc\r\n");
        // The first key routes the command.
        let (mut keys, mut ranges) = (BytesMut::new(), Vec::new());
        fill_keys(&mut keys, &mut ranges, &p, &p.commands[0], 0);
        assert_eq!(&keys[ranges[0].clone()], b"h:0:x");
    }

    #[test]
    fn hellos_authenticate_and_select() {
        let s = |url| barrage_plan::kv::KvServer::parse(url).unwrap();
        let text = |(b, n): (Bytes, usize)| (String::from_utf8(b.to_vec()).unwrap(), n);
        assert_eq!(text(hello(Protocol::Resp2, &s("redis://h"))), (String::new(), 0));
        assert_eq!(text(hello(Protocol::Resp3, &s("redis://h"))), ("*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n".into(), 1));
        let (wire, n) = text(hello(Protocol::Resp2, &s("redis://u:pw@h/2")));
        assert_eq!(
            (wire.as_str(), n),
            ("*3\r\n$4\r\nAUTH\r\n$1\r\nu\r\n$2\r\npw\r\n*2\r\n$6\r\nSELECT\r\n$1\r\n2\r\n", 2)
        );
        let (wire, n) = text(hello(Protocol::Resp3, &s("redis://:pw@h")));
        assert!(
            wire.starts_with("*5\r\n$5\r\nHELLO\r\n$1\r\n3\r\n$4\r\nAUTH\r\n$7\r\ndefault\r\n") && n == 1,
            "{wire}"
        );
    }

    #[test]
    fn error_classes_count_under_their_kind_of_status() {
        let table = [
            (ErrorClass::Err, 500),
            (ErrorClass::WrongType, 400),
            (ErrorClass::NoAuth, 401),
            (ErrorClass::Moved, 421),
            (ErrorClass::Loading, 503),
            (ErrorClass::Oom, 507),
            (ErrorClass::ServerError, 500),
            (ErrorClass::NotStored, 409),
        ];
        for (class, status) in table {
            assert_eq!(class.status(), status, "{class:?}");
        }
    }
}
