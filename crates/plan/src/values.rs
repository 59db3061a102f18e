//! The values of flags that have no type of their own (a fraction, a percentage, a size
//! with a bound, a thread count, NAME=VALUE, an address to bind, memtier's key pattern), each
//! refused with what would be valid. The binary's parser calls them; they are here, beside
//! what the flags mean, so that the meaning of a value is the plan crate's.

use crate::limits::MAX_THREADS;

/// A header's name (`--redact-header`, `--backend-header`).
pub fn parse_header_name(s: &str) -> Result<http::HeaderName, String> {
    http::HeaderName::from_bytes(s.trim().as_bytes()).map_err(|_| format!("invalid header name '{s}'"))
}

/// A cache's size: more than nothing.
pub fn parse_memory(s: &str) -> Result<u64, String> {
    match barrage_metrics::units::parse_size(s).map_err(|e| e.to_string())? {
        0 => Err(format!("'{s}' leaves no memory: give a size such as 64m")),
        n => Ok(n),
    }
}

/// A size up to the largest body (it is held in memory once).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let n = barrage_metrics::units::parse_size(s).map_err(|e| e.to_string())?;
    if n > crate::limits::MAX_BODY {
        return Err(format!("'{s}' is over the 1 GiB limit of a generated body"));
    }
    Ok(n)
}

/// Engine or serving threads: 0 (one per CPU) to [`MAX_THREADS`].
pub fn parse_threads(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n <= MAX_THREADS as usize => Ok(n),
        _ => Err(format!("invalid thread count '{s}': expected 0 (one per CPU) to {MAX_THREADS}")),
    }
}

/// A fraction above 0 and at most 1 (a sample of the request log).
pub fn parse_positive_fraction(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(f) if f > 0.0 && f <= 1.0 => Ok(f),
        _ => Err(format!("invalid fraction '{s}': expected a number above 0 and at most 1, e.g. 0.01")),
    }
}

/// `--var NAME=VALUE` of a scenario.
pub fn parse_var(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((name, value)) if !name.trim().is_empty() => Ok((name.trim().to_string(), value.to_string())),
        _ => Err(format!("invalid --var '{s}': expected NAME=VALUE, e.g. host=127.0.0.1:8080")),
    }
}

/// A fraction from 0 to 1.
pub fn parse_fraction(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(f) if (0.0..=1.0).contains(&f) => Ok(f),
        _ => Err(format!("invalid fraction '{s}': expected a number from 0 to 1, e.g. 0.01")),
    }
}

/// `--bind`: an IP address (no port: each connection gets its own).
pub fn parse_bind(s: &str) -> Result<std::net::IpAddr, String> {
    s.trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .map_err(|_| format!("invalid --bind '{s}': expected a local IP address such as 127.0.0.2 or ::1"))
}

/// memtier's `--key-pattern`: `R`, `S` or `G`, optionally written twice (`R:R`).
pub fn parse_key_pattern(s: &str) -> Result<crate::Pick, String> {
    let bad = || {
        format!("invalid --key-pattern '{s}': expected R (random), S (sequential) or G (Gaussian), the same for SETs and GETs (R:R)")
    };
    let (set, get) = s.split_once(':').unwrap_or((s, s));
    if set != get {
        return Err(format!("{}; barrage draws SET and GET keys from one stream", bad()));
    }
    match set {
        "R" => Ok(crate::Pick::Random),
        "S" => Ok(crate::Pick::RoundRobin),
        "G" => "gauss".parse(),
        _ => Err(bad()),
    }
}

/// A percentage above zero: a bracket of 0% is never narrow enough.
pub fn parse_positive_percent(s: &str) -> Result<f64, String> {
    match parse_percent(s)? {
        p if p > 0.0 => Ok(p),
        _ => Err(format!("invalid percentage '{s}': expected above 0% up to 100%, e.g. 2%")),
    }
}

/// A percentage from 0% to 100%, as a fraction.
pub fn parse_percent(s: &str) -> Result<f64, String> {
    s.strip_suffix('%')
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|p| (0.0..=100.0).contains(p))
        .map(|p| p / 100.0)
        .ok_or_else(|| format!("invalid percentage '{s}': expected 0% to 100%, e.g. 2%"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_parse_or_say_what_would_be_valid() {
        assert_eq!(parse_fraction("0"), Ok(0.0));
        assert_eq!(parse_fraction("1"), Ok(1.0));
        assert!(parse_fraction("1.5").unwrap_err().contains("a number from 0 to 1"));
        assert_eq!(parse_positive_fraction("0.01"), Ok(0.01));
        assert!(parse_positive_fraction("0").unwrap_err().contains("above 0"));
        assert_eq!(parse_percent("5%"), Ok(0.05));
        assert!(parse_percent("5").unwrap_err().contains("0% to 100%"));
        assert!(parse_positive_percent("0%").unwrap_err().contains("above 0%"));
        assert_eq!(parse_threads("0"), Ok(0));
        assert!(parse_threads(&(MAX_THREADS + 1).to_string()).unwrap_err().contains("one per CPU"));
        assert_eq!(parse_var(" host =127.0.0.1:80"), Ok(("host".into(), "127.0.0.1:80".into())));
        assert!(parse_var("=x").unwrap_err().contains("NAME=VALUE"));
        assert_eq!(parse_bind("[::1]"), Ok("::1".parse().unwrap()));
        assert!(parse_bind("localhost").unwrap_err().contains("--bind 'localhost'"));
        assert_eq!(parse_key_pattern("R:R"), Ok(crate::Pick::Random));
        assert_eq!(parse_key_pattern("S"), Ok(crate::Pick::RoundRobin));
        assert!(parse_key_pattern("R:S").unwrap_err().contains("one stream"));
        assert!(parse_memory("0").unwrap_err().contains("leaves no memory"));
        assert!(parse_size("2g").unwrap_err().contains("1 GiB"));
        assert!(parse_header_name("a b").is_err());
    }
}
