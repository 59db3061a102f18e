//! [`PhaseSpec`]: the phases of one request stream (`--phases fill,measure`, an experiment's
//! `phases = ["fill", "measure"]`). The first phase **fills**: it asks for the objects the
//! others will ask for again. Each later phase **measures** what the fill warmed: as many
//! requests as the fill sent (`measure`), or for a length of its own (`measure:30s`),
//! cycling over them. See [`crate::pick::Part`] for what each part asks for.

use std::time::Duration;

/// Most phases of one stream.
pub const MAX_PHASES: usize = 8;

/// One phase: its name (a file-name part), and a measure's own length.
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseSpec {
    /// Its name, e.g. `fill`.
    pub name: String,
    /// How long a measure lasts; `None`: as many requests as the fill sent.
    pub length: Option<Duration>,
}

impl PhaseSpec {
    /// The stream part of phase `i` of `of` phases, its fill having sent `warmed` requests
    /// of the stream: the whole stream when there is one phase only.
    pub fn part(i: usize, of: usize, warmed: u64) -> crate::pick::Part {
        use crate::pick::Part;
        match (of, i) {
            (0 | 1, _) => Part::Whole,
            (_, 0) => Part::Fill,
            _ => Part::Measure { warmed },
        }
    }
}

/// The name of a phase as given (`measure` of `measure:30s`): its file-name part and label.
pub fn name(text: &str) -> &str {
    text.split_once(':').map_or(text, |(name, _)| name).trim()
}

/// `fill`, `measure`, `measure:30s`, as `--phases` or `phases = [...]` give them: names are
/// words (no `/`, `.`, `:` or space), each once; only a measure (a phase after the first)
/// may have a length.
pub fn parse(texts: &[String]) -> Result<Vec<PhaseSpec>, String> {
    if texts.len() > MAX_PHASES {
        return Err(format!("{} phases: at most {MAX_PHASES}", texts.len()));
    }
    let mut phases: Vec<PhaseSpec> = Vec::with_capacity(texts.len());
    for (i, text) in texts.iter().enumerate() {
        let (name, length) = (name(text), text.split_once(':').map(|(_, length)| length.trim()));
        if name.is_empty() || name.contains(['/', '.', ' ', ':']) {
            return Err(format!("phase '{text}': a name is a word without '/', '.', ':' or spaces"));
        }
        if phases.iter().any(|p| p.name == name) {
            return Err(format!("phase '{name}' is given twice"));
        }
        // The names are labels, but these two say what a phase does: one that says the
        // opposite of what its place makes it do would label each figure as the other's.
        // (One phase alone is the whole stream: nothing fills, and `measure` says so.)
        match (i, name) {
            (0, "measure") if texts.len() > 1 => {
                return Err("phase 'measure' comes first, and the first phase fills (asks for new objects): name the phases in order, e.g. fill,measure".into())
            }
            (1.., "fill") => {
                return Err(format!("phase 'fill' comes after '{}': only the first phase fills, the later ones measure what it warmed; e.g. fill,measure", phases[0].name))
            }
            _ => {}
        }
        let length = match length {
            None => None,
            Some(_) if i == 0 => {
                return Err(format!(
                    "phase '{text}': the first phase fills for the run's own length; only a later phase (a measure) takes one"
                ))
            }
            Some(l) => {
                let d = barrage_metrics::units::parse_duration(l).map_err(|e| format!("phase '{text}': {e}"))?;
                if d.is_zero() {
                    return Err(format!("phase '{text}': a length must be above 0"));
                }
                Some(d)
            }
        };
        phases.push(PhaseSpec { name: name.to_string(), length });
    }
    Ok(phases)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pick::Part;

    #[test]
    fn parses_names_and_a_measures_length() {
        let p = parse(&["fill".into(), "measure:30s".into(), "again".into()]).unwrap();
        assert_eq!(p[0], PhaseSpec { name: "fill".into(), length: None });
        assert_eq!(p[1], PhaseSpec { name: "measure".into(), length: Some(Duration::from_secs(30)) });
        assert_eq!(p[2].length, None);
        for (bad, why) in [
            (vec!["fill:10s", "measure"], "only a later phase"),
            (vec!["fill", "fill"], "twice"),
            // Found trying seed 000's study: the labels came out swapped.
            (vec!["measure", "fill"], "phase 'measure' comes first"),
            (vec!["warm", "fill"], "phase 'fill' comes after 'warm'"),
            (vec!["fill", "a.b"], "a word"),
            (vec!["fill", ""], "a word"),
            (vec!["fill", "m:0s"], "above 0"),
            (vec!["fill", "m:soon"], "phase 'm:soon'"),
        ] {
            let texts: Vec<String> = bad.iter().map(|s| s.to_string()).collect();
            let err = parse(&texts).unwrap_err();
            assert!(err.contains(why), "{bad:?}: {err}");
        }
        assert!(parse(&vec!["p".to_string(); 9]).unwrap_err().contains("at most 8"));
        // Alone, a phase fills nothing: `measure` is what it does.
        assert_eq!(parse(&["measure".into()]).unwrap()[0].name, "measure");
    }

    #[test]
    fn the_first_of_several_fills_and_the_rest_measure() {
        assert_eq!(PhaseSpec::part(0, 1, 5), Part::Whole);
        assert_eq!(PhaseSpec::part(0, 2, 5), Part::Fill);
        assert_eq!(PhaseSpec::part(1, 2, 5), Part::Measure { warmed: 5 });
    }
}
