//! The shapes the origin can be told to take: response latency, object sizes and a
//! one-off stall, each parsed from a flag value and sampled per request.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use barrage_metrics::units::{fmt_duration, parse_duration, parse_size};
use rand::{Rng, RngCore};

/// The largest body the origin will produce (`/bytes/{n}`, `/obj/{id}`): 1 GiB.
pub const MAX_BODY: u64 = 1 << 30;

/// The largest file of object sizes (`--object-size file:PATH`): a million sizes take a
/// few MiB.
pub const MAX_SIZES_FILE: u64 = 64 << 20;

/// A flag value that is not a valid distribution or stall; the message names the valid forms.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {what} '{input}': expected {expected}")]
pub struct ParseError {
    what: &'static str,
    input: String,
    expected: &'static str,
}

impl ParseError {
    fn new(what: &'static str, input: &str, expected: &'static str) -> Self {
        ParseError { what, input: input.to_string(), expected }
    }
}

const LATENCY_FORMS: &str =
    "a duration (20ms), a uniform range (10ms..50ms) or an exponential mean (exp:20ms), each at most 8760h (a year)";
const SIZE_FORMS: &str = "a size (1k), a uniform range (1k..64k), a log-normal median and sigma (lognormal:4k,1.0) or file:PATH of sizes, one per line; each size at most 1 GiB (1g)";
const STALL_FORM: &str =
    "REQUESTS+DURATION, a request count of at least 1 and a duration of at most 8760h (1000+500ms)";

/// How long the origin waits before answering each request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LatencyDist {
    /// Always the same delay (`20ms`).
    Fixed(Duration),
    /// Uniform between the two bounds, inclusive (`10ms..50ms`).
    Uniform(Duration, Duration),
    /// Exponential with the given mean (`exp:20ms`): mostly short, with a long tail.
    Exponential {
        /// The mean delay.
        mean: Duration,
    },
}

impl LatencyDist {
    /// Draws one delay.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> Duration {
        match *self {
            LatencyDist::Fixed(d) => d,
            LatencyDist::Uniform(lo, hi) => {
                let ns = rng.gen_range(lo.as_nanos() as u64..=hi.as_nanos() as u64);
                Duration::from_nanos(ns)
            }
            LatencyDist::Exponential { mean } => {
                // Inverse CDF; 1 - u is in (0, 1], so the log is finite.
                let u: f64 = rng.gen();
                mean.mul_f64(-(1.0 - u).ln())
            }
        }
    }
}

impl FromStr for LatencyDist {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || ParseError::new("latency", s, LATENCY_FORMS);
        let dur = |t: &str| parse_duration(t).map_err(|_| err());
        if let Some(mean) = s.trim().strip_prefix("exp:") {
            return Ok(LatencyDist::Exponential { mean: dur(mean)? });
        }
        match s.split_once("..") {
            Some((lo, hi)) => {
                let (lo, hi) = (dur(lo)?, dur(hi)?);
                if lo > hi {
                    return Err(err());
                }
                Ok(LatencyDist::Uniform(lo, hi))
            }
            None => Ok(LatencyDist::Fixed(dur(s)?)),
        }
    }
}

impl fmt::Display for LatencyDist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            LatencyDist::Fixed(d) => write!(f, "{}", fmt_duration(d)),
            LatencyDist::Uniform(lo, hi) => {
                write!(f, "{}..{}", fmt_duration(lo), fmt_duration(hi))
            }
            LatencyDist::Exponential { mean } => write!(f, "exp:{}", fmt_duration(mean)),
        }
    }
}

/// How big the objects at `/obj/{id}` are.
#[derive(Debug, Clone, PartialEq)]
pub enum SizeDist {
    /// Drawn from a list of sizes (`file:sizes.txt`, one size per line), e.g. the object
    /// sizes of a real store.
    Sizes(std::sync::Arc<[u64]>),
    /// Always this many bytes (`1k`).
    Fixed(u64),
    /// Uniform between the two bounds, inclusive (`1k..64k`).
    Uniform(u64, u64),
    /// Log-normal with this median and shape (`lognormal:4k,1.0`): the long-tailed mix of
    /// object sizes real caches see.
    LogNormal {
        /// The median size in bytes.
        median: u64,
        /// The standard deviation of the size's natural log; 0 means every object is `median`.
        sigma: f64,
    },
}

impl SizeDist {
    /// Draws one size, at most [`MAX_BODY`].
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        let size = match *self {
            SizeDist::Sizes(ref sizes) => sizes[rng.gen_range(0..sizes.len())],
            SizeDist::Fixed(n) => n,
            SizeDist::Uniform(lo, hi) => rng.gen_range(lo..=hi),
            SizeDist::LogNormal { median, sigma } => {
                let z = standard_normal(rng);
                (median as f64 * (sigma * z).exp()).round() as u64
            }
        };
        size.min(MAX_BODY)
    }
}

/// Box-Muller: one standard normal draw from two uniform ones.
fn standard_normal<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    // 1 - u is in (0, 1], so the log is finite.
    let u1: f64 = 1.0 - rng.gen::<f64>();
    let u2: f64 = rng.gen();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

impl FromStr for SizeDist {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || ParseError::new("object size", s, SIZE_FORMS);
        // Over MAX_BODY is refused, not cut to it without a word.
        let size = |t: &str| parse_size(t).ok().filter(|&n| n <= MAX_BODY).ok_or_else(err);
        if let Some(path) = s.trim().strip_prefix("file:") {
            return sizes_file(path, s);
        }
        if let Some(rest) = s.trim().strip_prefix("lognormal:") {
            let (median, sigma) = rest.split_once(',').ok_or_else(err)?;
            let sigma: f64 = sigma.trim().parse().map_err(|_| err())?;
            if !sigma.is_finite() || sigma < 0.0 {
                return Err(err());
            }
            return Ok(SizeDist::LogNormal { median: size(median)?, sigma });
        }
        match s.split_once("..") {
            Some((lo, hi)) => {
                let (lo, hi) = (size(lo)?, size(hi)?);
                if lo > hi {
                    return Err(err());
                }
                Ok(SizeDist::Uniform(lo, hi))
            }
            None => Ok(SizeDist::Fixed(size(s)?)),
        }
    }
}

/// Reads one size per line (blank lines and `#` comments skipped); a bad line is named.
fn sizes_file(path: &str, input: &str) -> Result<SizeDist, ParseError> {
    let bytes = barrage_metrics::limits::read_capped(std::path::Path::new(path), MAX_SIZES_FILE)
        .map_err(|_| ParseError::new("object size file", input, "a readable file of sizes of at most 64 MiB"))?;
    let text = String::from_utf8(bytes).map_err(|_| ParseError::new("object size file", input, "text"))?;
    let mut sizes = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        sizes.push(parse_size(line).ok().filter(|&n| n <= MAX_BODY).ok_or_else(|| {
            ParseError::new("object size file", input, "one size per line (512, 1k, 4m), each at most 1 GiB (1g)")
        })?);
    }
    if sizes.is_empty() {
        return Err(ParseError::new("object size file", input, "at least one size"));
    }
    Ok(SizeDist::Sizes(sizes.into()))
}

impl fmt::Display for SizeDist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            SizeDist::Sizes(ref sizes) => write!(f, "file:({} sizes)", sizes.len()),
            SizeDist::Fixed(n) => write!(f, "{n}"),
            SizeDist::Uniform(lo, hi) => write!(f, "{lo}..{hi}"),
            SizeDist::LogNormal { median, sigma } => write!(f, "lognormal:{median},{sigma}"),
        }
    }
}

/// A one-off pause of all request handling, like a stop-the-world GC pause: once the
/// origin has received `after_requests` requests it answers nothing for `duration`
/// (`1000+500ms`). It exists to show coordinated omission in a load generator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stall {
    /// The request count that triggers the pause; that request waits too.
    pub after_requests: u64,
    /// How long handling stops.
    pub duration: Duration,
}

impl FromStr for Stall {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || ParseError::new("stall", s, STALL_FORM);
        let (count, duration) = s.split_once('+').ok_or_else(err)?;
        let after_requests: u64 = count.trim().parse().map_err(|_| err())?;
        if after_requests == 0 {
            return Err(err());
        }
        let duration = parse_duration(duration).map_err(|_| err())?;
        Ok(Stall { after_requests, duration })
    }
}

impl fmt::Display for Stall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}+{}", self.after_requests, fmt_duration(self.duration))
    }
}

/// SplitMix64: a tiny generator whose output is fixed by its definition, unlike `SmallRng`,
/// whose algorithm may change between rand versions and platforms. Objects must keep the
/// same size and bytes for the same id across runs and machines, so they use this.
#[derive(Debug, Clone)]
pub(crate) struct SplitMix64(pub(crate) u64);

impl RngCore for SplitMix64 {
    fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn fill_bytes(&mut self, dest: &mut [u8]) {
        for chunk in dest.chunks_mut(8) {
            let word = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&word[..chunk.len()]);
        }
    }

    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand::Error> {
        self.fill_bytes(dest);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn latency_forms() {
        let table = [
            ("20ms", LatencyDist::Fixed(MS(20))),
            ("0s", LatencyDist::Fixed(Duration::ZERO)),
            ("10ms..50ms", LatencyDist::Uniform(MS(10), MS(50))),
            ("1s..1s", LatencyDist::Uniform(MS(1000), MS(1000))),
            ("exp:20ms", LatencyDist::Exponential { mean: MS(20) }),
        ];
        for (text, want) in table {
            assert_eq!(text.parse::<LatencyDist>().unwrap(), want, "{text}");
            let shown = want.to_string();
            assert_eq!(shown.parse::<LatencyDist>().unwrap(), want, "round trip of {shown}");
        }
    }

    #[test]
    fn latency_rejects() {
        // Past a year: they overflowed the clock (a panic per request) or emptied the range.
        let huge = ["5000000h..5200000h", "exp:4000000000000000h", "8761h", "1ms..9000h"];
        for bad in ["", "20", "fast", "50ms..10ms", "10ms..", "exp:", "exp:x", "uniform:1ms"].into_iter().chain(huge) {
            let err = bad.parse::<LatencyDist>().unwrap_err().to_string();
            assert!(err.contains("10ms..50ms") && err.contains("exp:20ms"), "{bad}: {err}");
        }
    }

    #[test]
    fn size_forms() {
        let table = [
            ("1k", SizeDist::Fixed(1024)),
            ("512", SizeDist::Fixed(512)),
            ("1k..64k", SizeDist::Uniform(1024, 65536)),
            ("lognormal:4k,1.0", SizeDist::LogNormal { median: 4096, sigma: 1.0 }),
            ("lognormal:100, 0.5", SizeDist::LogNormal { median: 100, sigma: 0.5 }),
            ("1g", SizeDist::Fixed(MAX_BODY)),
            ("0..1073741824", SizeDist::Uniform(0, MAX_BODY)),
        ];
        for (text, want) in table {
            assert_eq!(text.parse::<SizeDist>().unwrap(), want, "{text}");
            let shown = want.to_string();
            assert_eq!(shown.parse::<SizeDist>().unwrap(), want, "round trip of {shown}");
        }
    }

    #[test]
    fn size_rejects() {
        let bad_inputs = ["", "big", "64k..1k", "1k..", "lognormal:4k", "lognormal:4k,-1", "lognormal:4k,x"];
        // Over 1 GiB: refused naming the limit, no longer cut to it without a word.
        let huge = ["2g", "1073741825", "1k..3g", "2g..3g", "lognormal:2g,1.0"];
        for bad in bad_inputs.into_iter().chain(huge) {
            let err = bad.parse::<SizeDist>().unwrap_err().to_string();
            assert!(err.contains("1k..64k") && err.contains("lognormal:4k,1.0"), "{bad}: {err}");
            assert!(err.contains("at most 1 GiB"), "{bad}: {err}");
        }
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("sizes.txt");
        std::fs::write(&file, "1k\n2g\n").unwrap();
        let err = format!("file:{}", file.display()).parse::<SizeDist>().unwrap_err().to_string();
        assert!(err.contains("at most 1 GiB"), "{err}");
    }

    #[test]
    fn stall_forms() {
        let stall: Stall = "1000+500ms".parse().unwrap();
        assert_eq!(stall, Stall { after_requests: 1000, duration: MS(500) });
        assert_eq!(stall.to_string().parse::<Stall>().unwrap(), stall);
        for bad in ["", "1000", "+500ms", "0+500ms", "x+500ms", "1000+500", "1000+", "1+4000000000000000h"] {
            let err = bad.parse::<Stall>().unwrap_err().to_string();
            assert!(err.contains("1000+500ms"), "{bad}: {err}");
        }
    }

    #[test]
    fn latency_samples_stay_in_range() {
        let mut rng = SplitMix64(1);
        let uniform = LatencyDist::Uniform(MS(10), MS(50));
        let exp = LatencyDist::Exponential { mean: MS(20) };
        let mut exp_total = Duration::ZERO;
        for _ in 0..10_000 {
            let d = uniform.sample(&mut rng);
            assert!((MS(10)..=MS(50)).contains(&d), "{d:?}");
            exp_total += exp.sample(&mut rng);
        }
        let exp_mean = exp_total / 10_000;
        assert!((MS(18)..=MS(22)).contains(&exp_mean), "exponential mean {exp_mean:?}");
    }

    #[test]
    fn size_samples_stay_in_range() {
        let mut rng = SplitMix64(2);
        let lognormal = SizeDist::LogNormal { median: 4096, sigma: 1.0 };
        let mut sizes: Vec<u64> = (0..10_001).map(|_| lognormal.sample(&mut rng)).collect();
        sizes.sort_unstable();
        let median = sizes[5000];
        assert!((3600..=4600).contains(&median), "log-normal median {median}");
        assert_eq!(SizeDist::Fixed(u64::MAX).sample(&mut rng), MAX_BODY);
        for _ in 0..1000 {
            assert!((1024..=2048).contains(&SizeDist::Uniform(1024, 2048).sample(&mut rng)));
        }
    }
}
