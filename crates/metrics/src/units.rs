//! Human units on the command line and in reports: durations (`30s`, `1.5m`, `250ms`),
//! sizes (`1k`, `1m`, `512`), and their rendering.
//!
//! Parsers return a [`UnitError`] whose message names the valid form, so every flag that
//! takes a unit gets the same one-line explanation.

use std::time::Duration;

/// A value that is not a valid duration or size; the message says what would be valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {what} '{input}': expected {expected}")]
pub struct UnitError {
    /// What was being parsed ("duration", "size").
    pub what: &'static str,
    /// The text as given.
    pub input: String,
    /// The valid form.
    pub expected: &'static str,
}

const DURATION_FORM: &str =
    "a number with a unit: us, ms, s, m, h or d, at most 8760h (a year; e.g. 250ms, 30s, 1.5m, 7d)";
const SIZE_FORM: &str = "a byte count with an optional k, m or g suffix (e.g. 512, 1k, 1m)";

/// Parses `250ms`, `30s`, `1.5m`, `2h`, `7d`, `100us`, up to [`MAX_DURATION`](crate::limits::MAX_DURATION).
/// A bare number is rejected: the unit is never guessed, since `10` could mean ten seconds
/// or ten milliseconds.
pub fn parse_duration(input: &str) -> Result<Duration, UnitError> {
    let err = || UnitError { what: "duration", input: input.to_string(), expected: DURATION_FORM };
    let s = input.trim();
    let split = s.find(|c: char| c.is_ascii_alphabetic() || c == 'µ').ok_or_else(err)?;
    let (num, unit) = s.split_at(split);
    let value: f64 = num.trim().parse().map_err(|_| err())?;
    if !value.is_finite() || value < 0.0 {
        return Err(err());
    }
    let secs = match unit {
        "ns" => value / 1e9,
        "us" | "µs" => value / 1e6,
        "ms" => value / 1e3,
        "s" => value,
        "m" | "min" => value * 60.0,
        "h" => value * 3600.0,
        "d" => value * 86_400.0,
        _ => return Err(err()),
    };
    Duration::try_from_secs_f64(secs).ok().filter(|d| *d <= crate::limits::MAX_DURATION).ok_or_else(err)
}

/// Parses a byte size: `512`, `1k` (1024), `1m`, `1g`, also `1KiB`/`1MB` spellings
/// (always powers of 1024, as in curl and wrk).
pub fn parse_size(input: &str) -> Result<u64, UnitError> {
    let err = || UnitError { what: "size", input: input.to_string(), expected: SIZE_FORM };
    let s = input.trim();
    let split = s.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let value: f64 = num.trim().parse().map_err(|_| err())?;
    if !value.is_finite() || value < 0.0 {
        return Err(err());
    }
    let mult: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => return Err(err()),
    };
    let bytes = value * mult as f64;
    if bytes > u64::MAX as f64 || bytes.fract() != 0.0 {
        return Err(err());
    }
    Ok(bytes as u64)
}

/// Renders microseconds for humans: `850µs`, `12.3ms`, `1.52s`.
pub fn fmt_us(us: f64) -> String {
    if us < 1_000.0 {
        format!("{us:.0}µs")
    } else if us < 1_000_000.0 {
        format!("{:.2}ms", us / 1e3)
    } else {
        format!("{:.2}s", us / 1e6)
    }
}

/// Renders a duration compactly: `850µs`, `12.30ms`, `1.52s`.
pub fn fmt_duration(d: Duration) -> String {
    fmt_us(d.as_secs_f64() * 1e6)
}

/// Renders a byte count: `512 B`, `1.00 KiB`, `3.20 MiB`.
pub fn fmt_bytes(bytes: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < UNITS.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{v:.0} {}", UNITS[0])
    } else {
        format!("{v:.2} {}", UNITS[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        let table = [
            ("250ms", Duration::from_millis(250)),
            ("30s", Duration::from_secs(30)),
            ("1.5m", Duration::from_secs(90)),
            ("2h", Duration::from_secs(7200)),
            ("7d", Duration::from_secs(7 * 86_400)),
            ("100us", Duration::from_micros(100)),
            ("0s", Duration::ZERO),
        ];
        for (text, want) in table {
            assert_eq!(parse_duration(text).unwrap(), want, "{text}");
        }
        assert_eq!(parse_duration("8760h").unwrap(), crate::limits::MAX_DURATION);
        for bad in ["", "10", "ms", "-1s", "1x", "1.2.3s", "nan s", "8761h", "10000000000000000000s", "inf s"] {
            assert!(parse_duration(bad).is_err(), "{bad} should fail");
        }
    }

    #[test]
    fn sizes() {
        let table = [("512", 512), ("1k", 1024), ("1m", 1 << 20), ("2KiB", 2048), ("1.5k", 1536)];
        for (text, want) in table {
            assert_eq!(parse_size(text).unwrap(), want, "{text}");
        }
        for bad in ["", "k", "-1", "1q", "0.3"] {
            assert!(parse_size(bad).is_err(), "{bad} should fail");
        }
    }

    #[test]
    fn rendering() {
        assert_eq!(fmt_us(850.0), "850µs");
        assert_eq!(fmt_us(12_300.0), "12.30ms");
        assert_eq!(fmt_bytes(1024.0), "1.00 KiB");
        assert_eq!(fmt_bytes(10.0), "10 B");
    }
}
