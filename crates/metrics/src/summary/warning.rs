//! A summary's warnings as data: a kind for code to match on, and the text people read.
//! Apart from the checks that raise them, as reports and studies read them without the checks.

use serde::{Deserialize, Deserializer, Serialize};
use std::fmt;

/// One warning of a summary: what is wrong (`kind`), and the sentence that says it (`text`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Warning {
    /// What the warning is about, for code that acts on it.
    pub kind: WarningKind,
    /// The plain-language sentence the reports show.
    pub text: String,
}

impl Warning {
    /// A warning of `kind` saying `text`.
    pub fn new(kind: WarningKind, text: impl Into<String>) -> Warning {
        Warning { kind, text: text.into() }
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Summaries of JSON version 1 wrote each warning as its text alone: those still read, as
/// [`WarningKind::Other`], since no kind can be told from a sentence without guessing.
impl<'de> Deserialize<'de> for Warning {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Warning, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either {
            Typed { kind: WarningKind, text: String },
            Plain(String),
        }
        Ok(match Either::deserialize(d)? {
            Either::Typed { kind, text } => Warning { kind, text },
            Either::Plain(text) => Warning { kind: WarningKind::Other, text },
        })
    }
}

/// Every kind of warning a summary carries, written in JSON in snake case
/// (`generator_saturated`); `schema/summary.schema.json` lists them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WarningKind {
    /// barrage's engine threads were busy nearly all the run: the figures describe barrage.
    GeneratorSaturated,
    /// barrage's CPU peaked near its threads' capacity in some second.
    GeneratorNearSaturation,
    /// An open loop's sends lagged behind the schedule.
    ScheduleLag,
    /// The machine's CPU was nearly all busy: barrage and the servers on it competed.
    MachineBusy,
    /// Requests were due but never sent: every in-flight slot stayed busy.
    RequestsNeverSent,
    /// Requests started late because every in-flight slot was busy.
    RequestsLate,
    /// Intended arrivals were never reached: a shard died, never reported, or stopped.
    ArrivalsNeverSent,
    /// TLS certificate verification was off (`--insecure`).
    Insecure,
    /// Secrets were not redacted (`--no-redact`).
    Unredacted,
    /// The server answered with errors (see the server replies).
    ServerErrors,
    /// HTTP/2 was asked and the server chose HTTP/1.1.
    Http1Fallback,
    /// The server allowed fewer concurrent streams than `--streams` asked.
    StreamCap,
    /// A results file stops where it is cut off (a run killed as it wrote).
    FileCutOff,
    /// A results file stops at a corrupt record.
    FileCorrupt,
    /// Results files have no footer: the run was killed.
    RunKilled,
    /// Results files stop at a corrupt record, their footer unread.
    FooterUnread,
    /// The request log lost rows because the disk fell behind.
    LogDropped,
    /// Samples of one process from several files without process identity were added up.
    ProcessIdentity,
    /// This summary is one shard's part of a split run.
    OneShard,
    /// Shards that do not make one run were merged anyway (`--force`).
    ShardsForced,
    /// A shard fell behind its share of the load.
    ShardBehind,
    /// A lost shard's closed-loop workers or flows were taken over by restarting them: no
    /// exact continuation.
    TakeoverRestarted,
    /// A takeover began after the arrivals it took over were due (its shard is judged lost
    /// `--lateness` after its data stopped): they went out late, catching up.
    TakeoverLate,
    /// The shards of a split run shared no start (`--start-at`, `--rendezvous`) and started
    /// seconds apart: merged by second of their own, as if they had run together.
    ShardsApart,
    /// Results files merged as one run (machines side by side) did not run at the same time.
    RunsApart,
    /// A group of flows never ran: it starts after the run ended.
    GroupNeverRan,
    /// Flows of a group failed, skipping later steps.
    FlowsFailed,
    /// What a step's first failed check or capture saw.
    StepFailed,
    /// Steps of a group were skipped, never sent.
    StepsSkipped,
    /// A group finished fewer flows per second than asked.
    FlowRateShort,
    /// Flow arrivals were due but never started.
    FlowsDropped,
    /// Flows were still running when their group's window ended.
    FlowsUnfinished,
    /// A closed-loop group finished fewer flows than asked.
    FlowsShort,
    /// A warning read from a summary written before warnings had kinds.
    Other,
}

impl WarningKind {
    /// barrage itself, not the server, limited the run: its CPU or its schedule.
    pub fn generator_limited(self) -> bool {
        matches!(
            self,
            WarningKind::GeneratorSaturated | WarningKind::GeneratorNearSaturation | WarningKind::ScheduleLag
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A warning is written as `{kind, text}`, and read back the same.
    #[test]
    fn a_warning_is_written_with_its_kind() {
        let w = Warning::new(WarningKind::GeneratorSaturated, "barrage used 99% CPU");
        let json = serde_json::to_value(&w).unwrap();
        assert_eq!(json, serde_json::json!({"kind": "generator_saturated", "text": "barrage used 99% CPU"}));
        assert_eq!(serde_json::from_value::<Warning>(json).unwrap(), w);
    }

    /// A summary of JSON version 1, whose warnings are plain strings, still reads: each as
    /// a warning of kind `other` with its text as it was.
    #[test]
    fn a_plain_string_warning_of_version_1_reads_as_other() {
        let old = serde_json::json!(["TLS certificate verification was off (--insecure)"]);
        let read: Vec<Warning> = serde_json::from_value(old).unwrap();
        assert_eq!(read, [Warning::new(WarningKind::Other, "TLS certificate verification was off (--insecure)")]);
        assert!(serde_json::from_value::<Warning>(serde_json::json!({"kind": "no_such_kind", "text": "x"})).is_err());
    }

    /// The schema lists every kind and no other: each kind it lists reads, and it lists as
    /// many as the enum has variants (counted in this file's source, so a kind added to the
    /// enum and not to the schema fails here).
    #[test]
    fn the_schema_lists_every_kind() {
        let schema: serde_json::Value =
            serde_json::from_str(include_str!("../../../../schema/summary.schema.json")).unwrap();
        let listed =
            schema["properties"]["warnings"]["items"]["properties"]["kind"]["enum"].as_array().unwrap().clone();
        for kind in &listed {
            let read: WarningKind = serde_json::from_value(kind.clone()).unwrap();
            assert_eq!(&serde_json::to_value(read).unwrap(), kind);
        }
        let source = include_str!("warning.rs");
        let body = &source[source.find("pub enum WarningKind {").unwrap()..];
        let body = &body[..body.find("\n}").unwrap()];
        let variants = body
            .lines()
            .filter(|l| l.starts_with("    ") && !l.trim_start().starts_with("//") && l.trim_end().ends_with(','))
            .count();
        assert_eq!(
            listed.len(),
            variants,
            "schema/summary.schema.json lists {} kinds, WarningKind has {variants}",
            listed.len()
        );
    }
}
