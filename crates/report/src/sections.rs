//! The parts of a run's report that the text and the HTML report both show, built once here
//! so that both say the same thing in the same words: the targets of the header, and a rate
//! that is not one.

/// URLs a report's header lists; the others are counted. A targets file of thousands of
/// entries would otherwise push everything else pages down.
pub(crate) const URLS_SHOWN: usize = 5;

/// The URLs a header lists, and the line counting the others ("… and 1,995 more (2,000
/// targets)") when there are more than [`URLS_SHOWN`].
pub(crate) fn urls(urls: &[String]) -> (&[String], Option<String>) {
    if urls.len() <= URLS_SHOWN {
        return (urls, None);
    }
    let more = format!(
        "… and {} more ({} targets)",
        thousands((urls.len() - URLS_SHOWN) as u64),
        thousands(urls.len() as u64)
    );
    (&urls[..URLS_SHOWN], Some(more))
}

/// A rate as `show` writes it, or, when there is none (fewer than
/// [`MIN_RATE_REQUESTS`] in its window), the count it would have been taken over:
/// `n/a (1 request)`.
///
/// [`MIN_RATE_REQUESTS`]: barrage_metrics::summary::MIN_RATE_REQUESTS
pub(crate) fn rate_or_count(rate: Option<f64>, requests: u64, show: impl Fn(f64) -> String) -> String {
    match rate {
        Some(r) => show(r),
        None => format!("n/a ({})", requests_count(requests)),
    }
}

/// `1 request`, `2,000 requests`.
fn requests_count(n: u64) -> String {
    if n == 1 {
        "1 request".into()
    } else {
        format!("{} requests", thousands(n))
    }
}

/// `1234567` as `1,234,567`.
pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let first = match digits.len() % 3 {
        0 => 3.min(digits.len()),
        r => r,
    };
    let mut out = digits[..first].to_string();
    for group in digits.as_bytes()[first..].chunks(3) {
        out.push(',');
        out.push_str(std::str::from_utf8(group).expect("digits are ASCII"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_url_lists_are_cut() {
        let list: Vec<String> = (0..2000).map(|i| format!("http://h/{i}")).collect();
        let (shown, more) = urls(&list);
        assert_eq!(shown.len(), URLS_SHOWN);
        assert_eq!(more.as_deref(), Some("… and 1,995 more (2,000 targets)"));
        let (shown, more) = urls(&list[..5]);
        assert_eq!((shown.len(), more), (5, None));
    }

    #[test]
    fn a_rate_or_its_count() {
        let rate = |r: f64| format!("{r:.2}/s");
        assert_eq!(rate_or_count(Some(12.5), 100, rate), "12.50/s");
        assert_eq!(rate_or_count(None, 1, rate), "n/a (1 request)");
        assert_eq!(rate_or_count(None, 9, rate), "n/a (9 requests)");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(0), "0");
    }
}
