//! `FromStr` newtypes for the values flags and files write: rates (constant, ramp, steps),
//! levels, durations, headers, `--resolve`. The binary parses its flags with them.

use crate::limits::{MAX_LEVELS, MAX_RATE, MAX_WORKERS};
use crate::{Load, Pacer};
use barrage_metrics::limits::MAX_DURATION;
use barrage_metrics::units;
use std::net::SocketAddr;
use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A duration flag value (`30s`, `250ms`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Dur(pub Duration);

impl FromStr for Dur {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        units::parse_duration(s).map(Dur).map_err(|e| e.to_string())
    }
}

/// A positive duration (a zero `--timeout` would fail every request).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PositiveDur(pub Duration);

impl FromStr for PositiveDur {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let d = units::parse_duration(s).map_err(|e| e.to_string())?;
        if d.is_zero() {
            return Err(format!("'{s}' must be longer than zero"));
        }
        Ok(PositiveDur(d))
    }
}

/// `--start-at`: a wall-clock instant, as RFC 3339 (`2026-11-23T21:00:00Z`, with a
/// fraction of a second or an offset) or as Unix seconds (`1795467600`, `1795467600.25`),
/// which `date +%s` and an orchestrator's variables write.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StartAt(pub SystemTime);

/// How far past a `--start-at` may be: a shard started a moment late still joins the
/// others' schedule (its first requests count as late); later than this, it was not
/// started together with them.
pub const START_AT_PAST: Duration = Duration::from_secs(1);

/// How far ahead a `--start-at` may be: further is a typo (a year, milliseconds for
/// seconds), not a plan to wait.
pub const START_AT_AHEAD: Duration = Duration::from_secs(24 * 3600);

impl FromStr for StartAt {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || {
            format!("invalid --start-at '{s}': expected RFC 3339 (2026-11-23T21:00:00Z) or Unix seconds (1795467600)")
        };
        if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s.trim()) {
            let ns = t.timestamp_nanos_opt().ok_or_else(bad)?;
            let ns = u64::try_from(ns).map_err(|_| bad())?;
            return Ok(StartAt(UNIX_EPOCH + Duration::from_nanos(ns)));
        }
        let secs: f64 = s.trim().parse().map_err(|_| bad())?;
        let d = Duration::try_from_secs_f64(secs).map_err(|_| bad())?;
        UNIX_EPOCH.checked_add(d).map(StartAt).ok_or_else(bad)
    }
}

impl StartAt {
    /// How long to wait from `now`: zero when the time is at most [`START_AT_PAST`] past;
    /// an error (naming the time) when it is further past or more than [`START_AT_AHEAD`]
    /// away.
    pub fn wait_from(&self, now: SystemTime) -> Result<Duration, String> {
        match self.0.duration_since(now) {
            Ok(ahead) if ahead > START_AT_AHEAD => Err(format!(
                "--start-at {}: {} from now; at most 24h ahead",
                self.rfc3339(),
                units::fmt_duration(ahead)
            )),
            Ok(ahead) => Ok(ahead),
            Err(e) if e.duration() <= START_AT_PAST => Ok(Duration::ZERO),
            Err(e) => Err(format!(
                "--start-at {}: {} past already; the shards would not start together (at most 1s late is joined)",
                self.rfc3339(),
                units::fmt_duration(e.duration())
            )),
        }
    }

    /// As RFC 3339, in UTC, to the microsecond.
    pub fn rfc3339(&self) -> String {
        let t: chrono::DateTime<chrono::Utc> = self.0.into();
        t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
    }

    /// Microseconds since the Unix epoch.
    pub fn unix_us(&self) -> u64 {
        self.0.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64)
    }
}

/// `--clock-offset`: this machine's clock minus the reference clock, as the orchestrator
/// measured it (`+1.5ms`, `-300us`, `0`); recorded with the run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClockOffset(pub i64);

impl FromStr for ClockOffset {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (sign, rest) = match s.trim().strip_prefix('-') {
            Some(rest) => (-1, rest),
            None => (1, s.trim().trim_start_matches('+')),
        };
        let d = units::parse_duration(rest).map_err(|e| format!("invalid --clock-offset '{s}': {e}"))?;
        if d > START_AT_AHEAD {
            return Err(format!("invalid --clock-offset '{s}': more than a day; fix the clock first"));
        }
        Ok(ClockOffset(sign * d.as_micros() as i64))
    }
}

/// The `--rate` value: constant, ramp or steps.
#[derive(Clone, Debug, PartialEq)]
pub enum RateSpec {
    /// `1000`, `1000/s`, `60/m`.
    Constant(f64),
    /// `100:2000`: linear over the duration.
    Ramp(f64, f64),
    /// `10,50,100`: one per `--step`.
    Steps(Vec<f64>),
}

const RATE_FORM: &str =
    "a rate from 1/day to 10000000/s: 1000, 1000/s, 60/m; a ramp 100:2000; or up to 1000 steps 10,50,100";

/// Parses one rate: `1000`, `1000/s`, `60/m`, `5/ms`, `2k`.
fn parse_one_rate(s: &str) -> Result<f64, String> {
    let bad = || format!("invalid rate '{s}': expected {RATE_FORM}");
    let (num, per) = match s.split_once('/') {
        Some((n, unit)) => {
            let per = match unit.trim() {
                "s" | "1s" | "sec" => 1.0,
                "m" | "min" => 60.0,
                "h" => 3600.0,
                "ms" => 0.001,
                other => units::parse_duration(other).map_err(|_| bad())?.as_secs_f64(),
            };
            (n.trim(), per)
        }
        None => (s.trim(), 1.0),
    };
    let (digits, mult) = match num.strip_suffix(['k', 'K']) {
        Some(d) => (d, 1000.0),
        None => (num, 1.0),
    };
    let n: f64 = digits.parse().map_err(|_| bad())?;
    let rate = n * mult / per;
    // Below one request a day, nothing meaningful is measured; above MAX_RATE every
    // request would be due at once.
    if !rate.is_finite() || !(1.0 / 86_400.0..=MAX_RATE).contains(&rate) || per <= 0.0 {
        return Err(bad());
    }
    Ok(rate)
}

/// One rate (`--start-rate`, `testbed bench --rate`): `1000`, `1000/s`, `60/m`, `2k`, from
/// one a day to [`MAX_RATE`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rate(pub f64);

impl FromStr for Rate {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        parse_one_rate(s).map(Rate)
    }
}

impl FromStr for RateSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if let Some((a, b)) = s.split_once(':') {
            return Ok(RateSpec::Ramp(parse_one_rate(a)?, parse_one_rate(b)?));
        }
        if s.contains(',') {
            let steps = s.split(',').count();
            if steps > MAX_LEVELS {
                return Err(format!("invalid rate: {steps} steps; expected {RATE_FORM}"));
            }
            return s.split(',').map(parse_one_rate).collect::<Result<_, _>>().map(RateSpec::Steps);
        }
        parse_one_rate(s).map(RateSpec::Constant)
    }
}

/// A `-H 'Name: value'` header (also a target file's header line).
#[derive(Clone, Debug)]
pub struct Header(pub http::HeaderName, pub http::HeaderValue);

impl FromStr for Header {
    type Err = String;
    /// The error never quotes the input: a header that does not parse is as likely a
    /// credential mistyped (`Authorization SECRET`) as anything. Only a name that parsed
    /// is named.
    fn from_str(s: &str) -> Result<Self, String> {
        let (name, value) = s.split_once(':').ok_or("a header needs 'Name: value' (it has no ':')")?;
        let name = http::HeaderName::from_bytes(name.trim().as_bytes())
            .map_err(|_| "a header needs 'Name: value'; what comes before ':' is not a name (letters, digits and -)")?;
        let value = http::HeaderValue::from_str(value.trim()).map_err(|_| {
            format!("the value of '{name}' holds what a header cannot carry (a line break or control character); a header needs 'Name: value'")
        })?;
        Ok(Header(name, value))
    }
}

/// A `--resolve host:port:addr` override, as in curl.
#[derive(Clone, Debug)]
pub struct Resolve {
    /// Host name as in the URL.
    pub host: String,
    /// Port.
    pub port: u16,
    /// Where to connect instead.
    pub addr: SocketAddr,
}

impl FromStr for Resolve {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("invalid --resolve '{s}': expected host:port:address, e.g. example.com:443:127.0.0.1");
        let mut parts = s.splitn(3, ':');
        let (host, port, addr) =
            (parts.next().ok_or_else(bad)?, parts.next().ok_or_else(bad)?, parts.next().ok_or_else(bad)?);
        let port: u16 = port.parse().map_err(|_| bad())?;
        let ip: std::net::IpAddr = addr.trim_start_matches('[').trim_end_matches(']').parse().map_err(|_| bad())?;
        if host.is_empty() {
            return Err(bad());
        }
        Ok(Resolve { host: host.to_string(), port, addr: SocketAddr::new(ip, port) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_times_parse_and_are_bounded() {
        let at = |s: &str| s.parse::<StartAt>().unwrap();
        assert_eq!(at("1795467600").unix_us(), 1_795_467_600_000_000);
        assert_eq!(at("1795467600.25").unix_us(), 1_795_467_600_250_000);
        assert_eq!(at("2026-11-23T21:00:00Z").unix_us(), 1_795_467_600_000_000);
        assert_eq!(at("2026-11-23T22:00:00.5+01:00").unix_us(), 1_795_467_600_500_000);
        assert_eq!(at("1795467600.25").rfc3339(), "2026-11-23T21:00:00.250Z");
        for bad in ["", "soon", "2026-11-23", "-5", "1e300", "2026-13-01T00:00:00Z"] {
            let e = bad.parse::<StartAt>().unwrap_err();
            assert!(e.starts_with(&format!("invalid --start-at '{bad}'")), "{e}");
        }
        let t = at("1795467600");
        let now = |secs: f64| UNIX_EPOCH + Duration::from_secs_f64(secs);
        assert_eq!(t.wait_from(now(1_795_467_590.0)), Ok(Duration::from_secs(10)));
        assert_eq!(t.wait_from(now(1_795_467_600.9)), Ok(Duration::ZERO), "a moment late joins");
        let late = t.wait_from(now(1_795_467_602.0)).unwrap_err();
        assert!(late.starts_with("--start-at 2026-11-23T21:00:00Z: 2.00s past already"), "{late}");
        let far = t.wait_from(now(1_795_467_600.0 - 90_000.0)).unwrap_err();
        assert!(far.contains("at most 24h ahead"), "{far}");
    }

    #[test]
    fn clock_offsets_parse_with_a_sign() {
        assert_eq!("+1.5ms".parse::<ClockOffset>().unwrap().0, 1_500);
        assert_eq!("-300us".parse::<ClockOffset>().unwrap().0, -300);
        assert_eq!("2s".parse::<ClockOffset>().unwrap().0, 2_000_000);
        assert!("-x".parse::<ClockOffset>().unwrap_err().starts_with("invalid --clock-offset '-x'"));
        assert!("2d".parse::<ClockOffset>().is_err());
    }

    #[test]
    fn load_flags_give_the_load_or_say_which_flag_is_wrong() {
        let secs = Duration::from_secs;
        let ok = LoadFlags { rate: Some("10,20".parse().unwrap()), duration: Some(secs(4)), ..Default::default() };
        assert_eq!(
            ok.load().unwrap(),
            Load::Open { pacer: Pacer::Steps { rates: vec![10.0, 20.0], step: secs(2) }, max_in_flight: 256 }
        );
        let closed = LoadFlags { concurrency: Some("8".parse().unwrap()), ..Default::default() };
        assert_eq!(closed.load().unwrap(), Load::Closed { concurrency: 8, think_time: Duration::ZERO });
        assert_eq!(LoadFlags::default().load().unwrap(), Load::Closed { concurrency: 50, think_time: Duration::ZERO });
        let table = [
            (LoadFlags { step: Some(secs(1)), ..Default::default() }, "--step goes with stepped rates"),
            (LoadFlags { connections: Some(4), ..Default::default() }, "--connections is for open loop"),
            (LoadFlags { max_in_flight: Some(4), ..Default::default() }, "--max-in-flight is for open loop"),
            (
                LoadFlags {
                    rate: Some("1,2".parse().unwrap()),
                    step: Some(Duration::from_secs(200 * 86_400)),
                    ..Default::default()
                },
                "lasts over a year",
            ),
            (LoadFlags { concurrency: Some("1,2".parse().unwrap()), ..Default::default() }, "use `barrage sweep`"),
            (LoadFlags { rate: Some("1:10".parse().unwrap()), ..Default::default() }, "give --duration too"),
            (
                LoadFlags { rate: Some("10".parse().unwrap()), think_time: Some(secs(1)), ..Default::default() },
                "--think-time is for closed loop",
            ),
            (
                LoadFlags {
                    rate: Some("1,2".parse().unwrap()),
                    step: Some(Duration::from_millis(1500)),
                    ..Default::default()
                },
                "whole seconds",
            ),
            (
                LoadFlags { rate: Some("5".parse().unwrap()), step: Some(secs(1)), ..Default::default() },
                "--step goes with stepped rates",
            ),
        ];
        for (flags, want) in table {
            let e = flags.load().unwrap_err();
            assert!(e.contains(want), "{flags:?}: {e}");
        }
    }

    #[test]
    fn rates() {
        let table = [
            ("1000", RateSpec::Constant(1000.0)),
            ("1000/s", RateSpec::Constant(1000.0)),
            ("60/m", RateSpec::Constant(1.0)),
            ("2k", RateSpec::Constant(2000.0)),
            ("100:2000", RateSpec::Ramp(100.0, 2000.0)),
            ("10,50,100", RateSpec::Steps(vec![10.0, 50.0, 100.0])),
            ("5/10s", RateSpec::Constant(0.5)),
        ];
        for (text, want) in table {
            assert_eq!(text.parse::<RateSpec>().unwrap(), want, "{text}");
        }
        assert_eq!("1e7".parse::<RateSpec>().unwrap(), RateSpec::Constant(MAX_RATE));
        assert_eq!("10000k".parse::<Rate>().unwrap(), Rate(MAX_RATE));
        let many = vec!["1"; MAX_LEVELS + 1].join(",");
        for bad in ["0", "-5", "abc", "10/x", "", "1,,2", "0:10", "1e-20", "1e10", "1,1e8", "inf", "NaN", &many] {
            let err = bad.parse::<RateSpec>().unwrap_err();
            assert!(err.contains("expected"), "{bad}: {err}");
        }
    }

    #[test]
    fn headers_and_resolve() {
        let h: Header = "X-Test: a b".parse().unwrap();
        assert_eq!((h.0.as_str(), h.1.to_str().unwrap()), ("x-test", "a b"));
        for (bad, why) in [
            ("Authorization S3CRET", "it has no ':'"),
            ("Authorization Bearer S3CRET: x", "not a name"),
            ("X-Api-Key: S3CRET\u{1}", "the value of 'x-api-key'"),
        ] {
            let e = bad.parse::<Header>().unwrap_err();
            assert!(e.contains(why) && e.contains("'Name: value'") && !e.contains("S3CRET"), "{bad}: {e}");
        }
        let r: Resolve = "example.com:443:127.0.0.1".parse().unwrap();
        assert_eq!((r.host.as_str(), r.port, r.addr.to_string().as_str()), ("example.com", 443, "127.0.0.1:443"));
        assert!("example.com:x:127.0.0.1".parse::<Resolve>().is_err());
        assert!("0s".parse::<PositiveDur>().is_err());
    }
}

/// Worker counts: `50`, a list `8,16,32`, or a range `8..96/8` (from, to, step).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Levels(pub Vec<u32>);

const LEVELS_FORM: &str =
    "a worker count from 1 to 1000000 such as 50, a list 8,16,32, or a range 8..96/8 of at most 1000 levels";

impl FromStr for Levels {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("invalid worker count '{s}': expected {LEVELS_FORM}");
        let count = |t: &str| t.trim().parse::<u32>().ok().filter(|n| (1..=MAX_WORKERS).contains(n)).ok_or_else(bad);
        let levels = if let Some((from, rest)) = s.split_once("..") {
            let (to, step) = rest.split_once('/').map_or((rest, "1"), |(t, st)| (t, st));
            let (from, to, step) = (count(from)?, count(to)?, count(step)?);
            if from > to {
                return Err(bad());
            }
            if (to - from) / step >= MAX_LEVELS as u32 {
                return Err(format!("invalid worker count '{s}': more than {MAX_LEVELS} levels"));
            }
            (from..=to).step_by(step as usize).collect()
        } else {
            s.split(',').map(count).collect::<Result<Vec<u32>, String>>()?
        };
        if levels.len() > MAX_LEVELS {
            return Err(format!("invalid worker count '{s}': more than {MAX_LEVELS} levels"));
        }
        Ok(Levels(levels))
    }
}

#[cfg(test)]
mod level_tests {
    use super::*;

    #[test]
    fn levels_parse_counts_lists_and_ranges() {
        assert_eq!("50".parse::<Levels>().unwrap().0, [50]);
        assert_eq!("8,16,32".parse::<Levels>().unwrap().0, [8, 16, 32]);
        assert_eq!("8..32/8".parse::<Levels>().unwrap().0, [8, 16, 24, 32]);
        assert_eq!("1..3".parse::<Levels>().unwrap().0, [1, 2, 3]);
        assert_eq!("1000000".parse::<Levels>().unwrap().0, [MAX_WORKERS]);
        for bad in ["0", "a", "8..4", "8..96/0", "1,,2", "1..100000", "4294967295", "1000001", "1,2000000"] {
            assert!(bad.parse::<Levels>().is_err(), "{bad}");
        }
    }
}

/// Default in-flight bound (and connection count) of an open-loop run.
pub const DEFAULT_OPEN_CONNECTIONS: u32 = 256;
/// Default workers of a closed-loop run (as hey).
pub const DEFAULT_CONCURRENCY: u32 = 50;

/// The load flags of `run` (`--rate`, `--step`, `-c`, `--think-time`, `--connections`,
/// `--max-in-flight`, `-d`), to be checked together.
#[derive(Clone, Debug, Default)]
pub struct LoadFlags {
    /// `--rate`.
    pub rate: Option<RateSpec>,
    /// `--step`.
    pub step: Option<Duration>,
    /// `-c`.
    pub concurrency: Option<Levels>,
    /// `--think-time`.
    pub think_time: Option<Duration>,
    /// `--connections`.
    pub connections: Option<u32>,
    /// `--max-in-flight`.
    pub max_in_flight: Option<u32>,
    /// `-d`.
    pub duration: Option<Duration>,
}

impl LoadFlags {
    /// The load: open loop with a rate, closed loop otherwise; each flag checked against
    /// the others.
    pub fn load(&self) -> Result<Load, String> {
        let Some(rate) = &self.rate else { return self.closed() };
        let pacer = match rate {
            RateSpec::Constant(r) => Pacer::Constant { rate: *r },
            RateSpec::Ramp(from, to) => {
                let Some(over) = self.duration else {
                    return Err(format!("--rate {from}:{to} ramps over the run: give --duration too"));
                };
                Pacer::Ramp { from: *from, to: *to, over }
            }
            RateSpec::Steps(rates) => {
                let step = match (self.step, self.duration) {
                    (Some(s), _) => s,
                    (None, Some(d)) => d / rates.len() as u32,
                    (None, None) => {
                        return Err("--rate with steps needs --step DURATION (or --duration to split evenly)".into())
                    }
                };
                // Intervals are whole seconds: a step of whole seconds keeps each interval,
                // and so each step's report, free of its neighbours.
                if step.subsec_nanos() != 0 || step.is_zero() {
                    return Err(format!(
                        "--step {step:?}: steps must last whole seconds (1s, 10s, 1m), so each is reported on its own"
                    ));
                }
                // A run ends within a year, however many steps it takes.
                if step.checked_mul(rates.len() as u32).is_none_or(|all| all > MAX_DURATION) {
                    return Err(format!(
                        "--rate with {} steps of --step {step:?} lasts over a year, the longest run (8760h)",
                        rates.len()
                    ));
                }
                Pacer::Steps { rates: rates.clone(), step }
            }
        };
        if self.step.is_some() && !matches!(rate, RateSpec::Steps(_)) {
            return Err("--step goes with stepped rates such as --rate 10,50,100".into());
        }
        // Open loop sends on a schedule: there is no worker to pause between requests.
        if self.think_time.is_some() {
            return Err("--think-time is for closed loop (-c): open loop (--rate) sends on its schedule".into());
        }
        let max_in_flight = self.max_in_flight.or(self.connections).unwrap_or(DEFAULT_OPEN_CONNECTIONS) as usize;
        Ok(Load::Open { pacer, max_in_flight })
    }

    fn closed(&self) -> Result<Load, String> {
        if self.step.is_some() {
            return Err("--step goes with stepped rates such as --rate 10,50,100 (or levels of `barrage sweep`)".into());
        }
        if self.connections.is_some() {
            return Err(
                "--connections is for open loop (--rate); in closed loop each of the -c workers has its own connection"
                    .into(),
            );
        }
        if self.max_in_flight.is_some() {
            return Err("--max-in-flight is for open loop (--rate); in closed loop -c workers are in flight".into());
        }
        let concurrency = match self.concurrency.as_ref().map(|l| &l.0[..]) {
            None => DEFAULT_CONCURRENCY,
            Some([n]) => *n,
            Some(_) => return Err("-c with several worker counts is a sweep: use `barrage sweep`".into()),
        };
        Ok(Load::Closed { concurrency: concurrency as usize, think_time: self.think_time.unwrap_or(Duration::ZERO) })
    }
}
