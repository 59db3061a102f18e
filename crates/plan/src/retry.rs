//! [`RetryPolicy`]: `--retries N --backoff MIN..MAX --retry-on 5xx,timeout`, the pattern of
//! hand-written clients that retry with exponential backoff.

use barrage_metrics::units::parse_duration;
use barrage_metrics::{ErrorKind, Outcome};
use std::str::FromStr;
use std::time::Duration;

/// When and how often a request is sent again.
#[derive(Clone, Debug, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// Backoff before the first retry; it doubles per retry up to `backoff_max`.
    pub backoff_min: Duration,
    /// Largest backoff.
    pub backoff_max: Duration,
    /// Which outcomes are retried.
    pub on: RetryOn,
}

/// Outcomes that are retried.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct RetryOn {
    /// Status classes (4 for 4xx, 5 for 5xx).
    pub classes: Vec<u16>,
    /// Single status codes.
    pub codes: Vec<u16>,
    /// Error kinds; empty with `any_error` for all of them.
    pub errors: Vec<ErrorKind>,
    /// Every transport error.
    pub any_error: bool,
}

impl FromStr for RetryOn {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let mut on = RetryOn::default();
        for word in s.split(',').map(str::trim) {
            let bad = || {
                format!("invalid --retry-on '{word}': expected a list of 4xx, 5xx, a status code (503), error (any transport error) or an error kind (timeout, reset, refused, unreachable, connect_timeout, tls, protocol, dns)")
            };
            match word {
                "4xx" => on.classes.push(4),
                "5xx" => on.classes.push(5),
                "error" | "errors" => on.any_error = true,
                "timeout" => on.errors.push(ErrorKind::RequestTimeout),
                _ => {
                    if let Ok(code) = word.parse::<u16>() {
                        if !(100..=599).contains(&code) {
                            return Err(bad());
                        }
                        on.codes.push(code);
                    } else {
                        let kind = ErrorKind::ALL.into_iter().find(|k| k.name() == word).ok_or_else(bad)?;
                        on.errors.push(kind);
                    }
                }
            }
        }
        Ok(on)
    }
}

impl RetryOn {
    /// Whether `outcome` is retried.
    pub fn matches(&self, outcome: Outcome) -> bool {
        match outcome {
            Outcome::Status(code) => self.codes.contains(&code) || self.classes.contains(&(code / 100)),
            Outcome::Error(kind) => self.any_error || self.errors.contains(&kind),
        }
    }
}

/// `--backoff 10ms..1s`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Backoff(pub Duration, pub Duration);

impl FromStr for Backoff {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = |why: String| format!("invalid --backoff '{s}': {why}; expected MIN..MAX, e.g. 10ms..1s");
        let (a, b) = s.split_once("..").ok_or_else(|| bad("no '..'".into()))?;
        let (a, b) =
            (parse_duration(a).map_err(|e| bad(e.to_string()))?, parse_duration(b).map_err(|e| bad(e.to_string()))?);
        if a > b {
            return Err(bad("MIN is larger than MAX".into()));
        }
        Ok(Backoff(a, b))
    }
}

impl RetryPolicy {
    /// The pause before retry number `retry` (1 for the first): exponential, capped, with
    /// "equal jitter" (half fixed, half random, as AWS recommends) so clients that failed
    /// together do not retry together. `unit` is a random number in [0, 1).
    pub fn backoff(&self, retry: u32, unit: f64) -> Duration {
        let doubled = self.backoff_min.saturating_mul(1u32 << retry.saturating_sub(1).min(30));
        let nominal = doubled.min(self.backoff_max);
        nominal / 2 + nominal.mul_f64(unit.clamp(0.0, 1.0) / 2.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_on_lists() {
        let on: RetryOn = "5xx,timeout,429".parse().unwrap();
        assert!(on.matches(Outcome::Status(503)));
        assert!(on.matches(Outcome::Status(429)));
        assert!(!on.matches(Outcome::Status(404)));
        assert!(on.matches(Outcome::Error(ErrorKind::RequestTimeout)));
        assert!(!on.matches(Outcome::Error(ErrorKind::Reset)));
        let any: RetryOn = "error".parse().unwrap();
        assert!(any.matches(Outcome::Error(ErrorKind::Reset)));
        assert!(!any.matches(Outcome::Status(500)));
        for bad in ["6xx", "often", "700", ""] {
            assert!(bad.parse::<RetryOn>().unwrap_err().contains("expected"), "{bad}");
        }
    }

    #[test]
    fn backoff_doubles_within_bounds_with_jitter() {
        let p = RetryPolicy {
            max_retries: 5,
            backoff_min: Duration::from_millis(10),
            backoff_max: Duration::from_millis(50),
            on: RetryOn::default(),
        };
        let ms = |retry, unit| p.backoff(retry, unit).as_millis();
        assert_eq!((ms(1, 0.0), ms(1, 0.999)), (5, 9));
        assert_eq!((ms(2, 0.0), ms(3, 0.0), ms(4, 0.0), ms(9, 0.0)), (10, 20, 25, 25));
        assert!("1s..10ms".parse::<Backoff>().is_err());
        assert_eq!("10ms..1s".parse::<Backoff>().unwrap(), Backoff(Duration::from_millis(10), Duration::from_secs(1)));
    }
}
