//! What the key-value flags mean: a run's URLs and memtier_benchmark's flags (`--servers`,
//! `--ratio`, `--data-size`, `--command`…) to its targets and [`KvPlan`], or to none for
//! HTTP. Apart from `kv`, which holds the plan and its parsers, because this is the one
//! place that knows which flags go together.

use crate::kv::{parse_command, KvCommand, KvPlan, KvServer, Protocol, ValueSizes};
use crate::plan::Target;
use crate::ring::{Distribution, Ring};
use std::sync::Arc;

/// The flags of a run that decide whether it is a key-value run and what it sends, as the
/// command line gives them (memtier_benchmark's names).
#[derive(Clone, Debug, Default)]
pub struct KvFlags {
    /// The run's URLs (HTTP, or `redis://`, `rediss://`, `memcache://` servers).
    pub urls: Vec<String>,
    /// `--servers`: more servers of a key-value run.
    pub servers: Vec<String>,
    /// `--protocol`.
    pub protocol: Option<Protocol>,
    /// `--ratio SET:GET`.
    pub ratio: Option<(u32, u32)>,
    /// `--key-prefix`.
    pub key_prefix: Option<String>,
    /// `--key-minimum`.
    pub key_minimum: Option<u64>,
    /// `--key-maximum`.
    pub key_maximum: Option<u64>,
    /// `--data-size`, `--data-size-range` or `--data-size-list`, whichever is given.
    pub data_size: Option<String>,
    /// Which of the three gave `data_size` (`--data-size`…), for messages.
    pub data_size_flag: &'static str,
    /// `--pipeline`.
    pub pipeline: Option<u32>,
    /// `--command`, repeated.
    pub commands: Vec<String>,
    /// `--distribution`.
    pub distribution: Option<String>,
    /// `--objects`: the number of keys, over `--key-maximum`.
    pub objects: Option<u64>,
    /// A `--scenario` is given: its steps are HTTP.
    pub scenario: bool,
    /// The first flag given that only HTTP takes (`--targets`, `-H`, `--no-keepalive`…).
    pub http_flag: Option<&'static str>,
}

/// A key-value run, as its flags ask for it.
#[derive(Clone, Debug)]
pub struct KvSetup {
    /// One target per command of a round, named after it.
    pub targets: Vec<Target>,
    /// What each command sends and where.
    pub plan: Arc<KvPlan>,
    /// The number of keys (the run's `objects`).
    pub keys: u64,
}

/// memtier's defaults: 32-byte values, keys `memtier-0` to `memtier-9999999`, 1 SET to 10 GETs.
const DEFAULT_VALUE_SIZE: u32 = 32;
const DEFAULT_KEY_PREFIX: &str = "memtier-";
const DEFAULT_KEY_MAXIMUM: u64 = 9_999_999;
const DEFAULT_RATIO: (u32, u32) = (1, 10);

/// Whether `url` names a key-value server.
fn is_kv(url: &str) -> bool {
    ["redis://", "rediss://", "memcache://", "memcached://"].iter().any(|s| url.starts_with(s))
}

impl KvFlags {
    /// The key-value run these flags ask for, checked; `None` for an HTTP run (refused when
    /// a flag only a key-value run takes is given).
    pub fn setup(&self) -> Result<Option<KvSetup>, String> {
        let urls: Vec<&String> = self.urls.iter().chain(&self.servers).collect();
        let http_targets = !self.urls.is_empty() && !self.urls.iter().any(|u| is_kv(u));
        if http_targets || self.scenario || !urls.iter().any(|u| is_kv(u)) {
            if let Some(flag) = self.kv_flag() {
                return Err(format!("{flag} is for redis:// and memcache:// targets; this run's targets are HTTP"));
            }
            return Ok(None);
        }
        if let Some(http) = urls.iter().find(|u| !is_kv(u)) {
            return Err(format!(
                "'{http}' is not a key-value server: a run is either HTTP or redis:// / memcache://, not both"
            ));
        }
        if let Some(flag) = self.http_flag {
            return Err(format!(
                "{flag} is for HTTP targets; a redis:// or memcache:// run takes --ratio, --command and --data-size"
            ));
        }
        let servers = urls.iter().map(|u| KvServer::parse(u)).collect::<Result<Vec<_>, _>>()?;
        let protocol = self.protocol_of(&servers)?;
        let key_prefix = self.key_prefix.clone().unwrap_or_else(|| DEFAULT_KEY_PREFIX.into());
        let key_min = self.key_minimum.unwrap_or(0);
        let values = match &self.data_size {
            Some(s) => ValueSizes::parse(s)?,
            None => ValueSizes::Fixed(DEFAULT_VALUE_SIZE),
        };
        let commands = self.commands(&key_prefix)?;
        let keys = self.keys(key_min)?;
        let targets = commands.iter().map(|c| Target::kv(&c.name(), urls[0])).collect::<Result<Vec<_>, _>>()?;
        let plan = KvPlan {
            protocol,
            distribution: self.distribution_over(&servers),
            servers,
            pipeline: self.pipeline.unwrap_or(1) as usize,
            key_prefix: bytes::Bytes::from(key_prefix),
            key_min,
            values,
            commands,
        };
        plan.validate()?;
        Ok(Some(KvSetup { targets, plan: Arc::new(plan), keys }))
    }

    /// The first flag given that only a key-value run takes (`--key-pattern` is `--pick` in
    /// memtier's words, for any run).
    fn kv_flag(&self) -> Option<&'static str> {
        let given = [
            (!self.servers.is_empty(), "--servers"),
            (self.protocol.is_some(), "--protocol"),
            (self.ratio.is_some(), "--ratio"),
            (self.key_prefix.is_some(), "--key-prefix"),
            (self.key_minimum.is_some(), "--key-minimum"),
            (self.key_maximum.is_some(), "--key-maximum"),
            (self.data_size.is_some(), self.data_size_flag),
            (self.pipeline.is_some(), "--pipeline"),
            (!self.commands.is_empty(), "--command"),
            (self.distribution.is_some(), "--distribution"),
        ];
        given.iter().find(|(given, _)| *given).map(|(_, flag)| *flag)
    }

    /// The wire protocol: `--protocol`, or the one the servers' scheme implies; they must
    /// all speak Redis, or all memcached.
    fn protocol_of(&self, servers: &[KvServer]) -> Result<Protocol, String> {
        let implied = servers[0].protocol;
        if let Some(s) = servers.iter().find(|s| s.protocol.is_redis() != implied.is_redis()) {
            return Err(format!(
                "the servers mix Redis and memcached ({}:{}): a run speaks one protocol",
                s.host, s.port
            ));
        }
        let protocol = self.protocol.unwrap_or(implied);
        if protocol.is_redis() != implied.is_redis() {
            return Err(format!(
                "--protocol {protocol:?} does not fit a {} URL",
                if implied.is_redis() { "redis://" } else { "memcache://" }
            ));
        }
        Ok(protocol)
    }

    /// The commands of a round: `--command`s in turn, or `--ratio`'s SETs then GETs.
    fn commands(&self, key_prefix: &str) -> Result<Vec<KvCommand>, String> {
        if self.commands.is_empty() {
            let (set, get) = self.ratio.unwrap_or(DEFAULT_RATIO);
            return Ok(std::iter::repeat_n(KvCommand::Set, set as usize)
                .chain(std::iter::repeat_n(KvCommand::Get, get as usize))
                .collect());
        }
        self.commands.iter().map(|c| parse_command(c, key_prefix).map(KvCommand::Custom)).collect()
    }

    /// The number of keys: `--objects`, or from `--key-minimum` to `--key-maximum`.
    fn keys(&self, key_min: u64) -> Result<u64, String> {
        if let Some(n) = self.objects {
            return Ok(n);
        }
        let max = self.key_maximum.unwrap_or(DEFAULT_KEY_MAXIMUM);
        if max < key_min {
            return Err(format!("--key-maximum {max} is below --key-minimum {key_min}"));
        }
        Ok(max - key_min + 1)
    }

    /// How keys are spread over `servers`: none over one, which holds every key whatever
    /// the distribution (an experiment may cross the two); ketama unless modulo is asked.
    fn distribution_over(&self, servers: &[KvServer]) -> Option<Distribution> {
        match (servers.len(), self.distribution.as_deref().unwrap_or("ketama")) {
            (1, _) => None,
            (n, "modulo") => Some(Distribution::Modulo(n)),
            _ => {
                let hosts: Vec<(&str, u16)> = servers.iter().map(|s| (s.host.as_str(), s.port)).collect();
                Some(Distribution::Ketama(Ring::ketama(&hosts)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(urls: &[&str]) -> KvFlags {
        KvFlags { urls: urls.iter().map(|u| u.to_string()).collect(), ..Default::default() }
    }

    /// What a run of these flags is: HTTP (`None`), or a key-value run of its commands,
    /// keys and protocol with memtier's defaults; or what is wrong with them.
    #[test]
    fn flags_make_a_key_value_run_or_none() {
        type Want = Result<Option<(Vec<&'static str>, u64, Protocol, usize)>, &'static str>;
        let ten_gets = ["SET", "GET", "GET", "GET", "GET", "GET", "GET", "GET", "GET", "GET", "GET"];
        let table: Vec<(KvFlags, Want)> = vec![
            (flags(&["http://h/"]), Ok(None)),
            (KvFlags { scenario: true, ..flags(&[]) }, Ok(None)),
            (flags(&["redis://h"]), Ok(Some((ten_gets.to_vec(), 10_000_000, Protocol::Resp2, 1)))),
            (
                KvFlags {
                    ratio: Some((1, 1)),
                    key_minimum: Some(10),
                    key_maximum: Some(19),
                    ..flags(&["memcache://h"])
                },
                Ok(Some((vec!["SET", "GET"], 10, Protocol::MemcacheText, 1))),
            ),
            (
                KvFlags {
                    commands: vec!["HSET h:{id} f {value}".into(), "hget h:{id} f".into()],
                    protocol: Some(Protocol::Resp3),
                    objects: Some(5),
                    servers: vec!["redis://g:6380".into()],
                    ..flags(&["redis://h"])
                },
                Ok(Some((vec!["HSET", "HGET"], 5, Protocol::Resp3, 2))),
            ),
            (KvFlags { ratio: Some((1, 1)), ..flags(&["http://h/"]) }, Err("--ratio is for redis:// and memcache://")),
            (
                KvFlags { data_size: Some("1k".into()), data_size_flag: "--data-size-range", ..flags(&[]) },
                Err("--data-size-range is for redis://"),
            ),
            (KvFlags { pipeline: Some(2), scenario: true, ..flags(&[]) }, Err("--pipeline is for redis://")),
            (flags(&["redis://h", "http://h/"]), Err("'http://h/' is not a key-value server")),
            (KvFlags { http_flag: Some("-H"), ..flags(&["redis://h"]) }, Err("-H is for HTTP targets")),
            (flags(&["redis://h", "memcache://g"]), Err("the servers mix Redis and memcached (g:11211)")),
            (
                KvFlags { protocol: Some(Protocol::Resp3), ..flags(&["memcache://h"]) },
                Err("--protocol Resp3 does not fit a memcache:// URL"),
            ),
            (
                KvFlags { key_minimum: Some(10), key_maximum: Some(9), ..flags(&["redis://h"]) },
                Err("--key-maximum 9 is below --key-minimum 10"),
            ),
            (KvFlags { data_size: Some("4k-1k".into()), ..flags(&["redis://h"]) }, Err("invalid value size")),
            (KvFlags { commands: vec![" ".into()], ..flags(&["redis://h"]) }, Err("no command")),
            (
                KvFlags { commands: vec!["GET {id}".into()], ..flags(&["memcache://h"]) },
                Err("--command sends Redis commands"),
            ),
            (flags(&["redis://h:0"]), Err("port 0")),
        ];
        for (i, (f, want)) in table.into_iter().enumerate() {
            let got = f.setup().map(|run| {
                run.map(|r| {
                    let names: Vec<String> = r.targets.iter().map(|t| t.name.as_deref().unwrap().to_string()).collect();
                    (names, r.keys, r.plan.protocol, r.plan.servers.len())
                })
            });
            match (got, want) {
                (Ok(None), Ok(None)) => {}
                (Ok(Some((names, keys, protocol, servers))), Ok(Some(want))) => {
                    assert_eq!(
                        (names, keys, protocol, servers),
                        (want.0.iter().map(|s| s.to_string()).collect(), want.1, want.2, want.3),
                        "row {i}"
                    )
                }
                (Err(e), Err(want)) => assert!(e.contains(want), "row {i}: {e}"),
                (got, want) => panic!("row {i}: {got:?}, wanted {want:?}"),
            }
        }
    }

    /// Keys are spread over several servers by ketama unless modulo is asked; one server
    /// holds them all.
    #[test]
    fn keys_are_spread_over_several_servers() {
        let two = KvFlags { servers: vec!["redis://g".into()], ..flags(&["redis://h"]) };
        let spread = |f: &KvFlags| f.setup().unwrap().unwrap().plan.distribution.clone();
        assert!(matches!(spread(&two), Some(Distribution::Ketama(_))));
        let modulo = KvFlags { distribution: Some("modulo".into()), ..two.clone() };
        assert!(matches!(spread(&modulo), Some(Distribution::Modulo(2))));
        assert!(spread(&KvFlags { distribution: Some("modulo".into()), ..flags(&["redis://h"]) }).is_none());
        let plan = two.setup().unwrap().unwrap().plan;
        assert_eq!(
            (&plan.key_prefix[..], plan.key_min, plan.values.clone()),
            (&b"memtier-"[..], 0, ValueSizes::Fixed(32))
        );
    }
}
