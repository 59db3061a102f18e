//! Groups: which flow each runs and under what load (closed loop with `concurrency`, open
//! loop with `rate`, else the run's), when it starts and how long it lasts.

use super::document::{check_name, hint, list, Doc};
use super::raw::{RawFile, RawGroup};
use super::{Res, MAX_ITERATIONS};
use crate::flow::{Flow, Group};
use crate::limits::{MAX_GROUPS, MAX_WORKERS};
use crate::plan::Load;
use crate::units::{Dur, Levels, LoadFlags, RateSpec};
use std::time::Duration;
use toml::Spanned;

pub(super) fn groups(doc: &Doc, raw: &RawFile, flows: &[Flow], default_load: &Load) -> Res<Vec<Group>> {
    if raw.group.is_empty() {
        if let Some((name, f)) = raw.flow.get_index(1) {
            let what = "several flows and no [group.NAME]: add a group for each flow to run, \
                e.g. [group.writers] with flow = \"album\" and concurrency = 10";
            return Err(doc.fail(f.span(), &format!("flow.{name}"), what));
        }
        let only = &flows[0];
        let load = default_load.clone();
        return Ok(vec![Group {
            name: only.name.clone(),
            flow: 0,
            load,
            start: Duration::ZERO,
            duration: None,
            ramp: Duration::ZERO,
            own_load: false,
            iterations: None,
        }]);
    }
    if let Some((name, g)) = raw.group.get_index(MAX_GROUPS) {
        return Err(doc.fail(g.span(), &format!("group.{name}"), format!("more than {MAX_GROUPS} groups, the limit")));
    }
    raw.group.iter().map(|(name, g)| group(doc, name, g, flows, default_load)).collect()
}

pub(super) fn group(doc: &Doc, name: &str, raw: &Spanned<RawGroup>, flows: &[Flow], default_load: &Load) -> Res<Group> {
    let key = |k: &str| format!("group.{name}.{k}");
    check_name(doc, raw.span(), &format!("group.{name}"), name)?;
    let g = raw.get_ref();
    let flow_names = || flows.iter().map(|f| f.name.as_str());
    let flow = match &g.flow {
        Some(f) => flows.iter().position(|x| &x.name == f.get_ref()).ok_or_else(|| {
            doc.fail(f.span(), &key("flow"), format!("no flow {}{}", f.get_ref(), hint(f.get_ref(), flow_names())))
        })?,
        None if flows.len() == 1 => 0,
        None => {
            let what = format!(
                "several flows: say which this group runs with flow = \"NAME\" ({})",
                list(&flow_names().collect::<Vec<_>>())
            );
            return Err(doc.fail(raw.span(), &format!("group.{name}"), what));
        }
    };
    let dur = |v: &Option<Spanned<String>>, k: &str| -> Res<Option<Duration>> {
        v.as_ref()
            .map(|d| d.get_ref().parse::<Dur>().map(|d| d.0).map_err(|e| doc.fail(d.span(), &key(k), e)))
            .transpose()
    };
    let (start, duration) = (dur(&g.start, "start")?.unwrap_or_default(), dur(&g.duration, "duration")?);
    let think_time = dur(&g.think_time, "think-time")?;
    let ramp = dur(&g.ramp, "ramp")?;
    let load = group_load(doc, name, g, duration, think_time, default_load)?;
    if let (Some(r), Load::Open { .. }) = (&g.ramp, &load) {
        let what = "ramp starts workers over time, for closed loop (concurrency); \
            an open-loop group ramps its rate: rate = \"10:100\"";
        return Err(doc.fail(r.span(), &key("ramp"), what));
    }
    let iterations = match &g.iterations {
        None => None,
        Some(n) if matches!(load, Load::Open { .. }) => {
            let what = "iterations counts each closed-loop worker's flows (concurrency); \
                an open-loop group starts flows at its rate";
            return Err(doc.fail(n.span(), &key("iterations"), what));
        }
        Some(n) => match u64::try_from(*n.get_ref()) {
            Ok(i @ 1..=MAX_ITERATIONS) => Some(i),
            _ => {
                let what = format!("{}: flows per worker, from 1 to {MAX_ITERATIONS}", n.get_ref());
                return Err(doc.fail(n.span(), &key("iterations"), what));
            }
        },
    };
    let own_load = g.rate.is_some() || g.concurrency.is_some();
    let ramp = ramp.unwrap_or_default();
    Ok(Group { name: name.to_string(), flow, load, start, duration, ramp, own_load, iterations })
}

/// A group's load: closed loop with `concurrency`, open loop with `rate`, else the run's
/// load flags (with the group's think time or in-flight bound).
pub(super) fn group_load(
    doc: &Doc,
    name: &str,
    g: &RawGroup,
    duration: Option<Duration>,
    think_time: Option<Duration>,
    default_load: &Load,
) -> Res<Load> {
    let key = |k: &str| format!("group.{name}.{k}");
    let workers = |v: &Spanned<u32>, k: &str| match (1..=MAX_WORKERS).contains(v.get_ref()) {
        true => Ok(*v.get_ref()),
        false => Err(doc.fail(v.span(), &key(k), format!("{}: from 1 to {MAX_WORKERS}", v.get_ref()))),
    };
    let open_only = |v: &Spanned<u32>| doc.fail(v.span(), &key("max-in-flight"), OPEN_ONLY);
    let closed_only = |v: &Spanned<String>| doc.fail(v.span(), &key("think-time"), CLOSED_ONLY);
    let max_in_flight = g.max_in_flight.as_ref().map(|m| workers(m, "max-in-flight")).transpose()?;
    match (&g.rate, &g.concurrency, default_load) {
        (Some(_), Some(c), _) => Err(doc.fail(c.span(), &key("concurrency"), BOTH_LOADS)),
        (Some(_), None, _) | (None, None, Load::Open { .. }) if g.think_time.is_some() => {
            Err(closed_only(g.think_time.as_ref().expect("given")))
        }
        (None, Some(_), _) | (None, None, Load::Closed { .. }) if g.max_in_flight.is_some() => {
            Err(open_only(g.max_in_flight.as_ref().expect("given")))
        }
        (Some(r), None, _) => {
            let fail = |e: String| doc.fail(r.span(), &key("rate"), e);
            let rate = rate_spec(r.get_ref()).map_err(fail)?;
            if !matches!(rate, RateSpec::Constant(_)) && duration.is_none() {
                return Err(fail("a ramp or steps of rates run over the group's duration: give duration too".into()));
            }
            LoadFlags { rate: Some(rate), max_in_flight, duration, ..Default::default() }.load().map_err(fail)
        }
        (None, Some(c), _) => {
            let concurrency = Some(Levels(vec![workers(c, "concurrency")?]));
            let flags = LoadFlags { concurrency, think_time, ..Default::default() };
            flags.load().map_err(|e| doc.fail(c.span(), &key("concurrency"), e))
        }
        (None, None, Load::Open { pacer, max_in_flight: run }) => {
            Ok(Load::Open { pacer: pacer.clone(), max_in_flight: max_in_flight.map_or(*run, |m| m as usize) })
        }
        (None, None, Load::Closed { concurrency, think_time: run }) => {
            Ok(Load::Closed { concurrency: *concurrency, think_time: think_time.unwrap_or(*run) })
        }
    }
}

pub(super) const BOTH_LOADS: &str = "concurrency and rate given together: a group is closed loop (concurrency = \
    workers) or open loop (rate = flows started per second)";
pub(super) const OPEN_ONLY: &str = "is for open loop (rate); in closed loop the workers are what is in flight";
pub(super) const CLOSED_ONLY: &str =
    "is for closed loop (concurrency): an open-loop group's flows start on its schedule";

/// `rate = 50`, `rate = 0.5` or `rate = "10:100"`, as `--rate` reads them.
pub(super) fn rate_spec(v: &toml::Value) -> Result<RateSpec, String> {
    match v {
        toml::Value::String(s) => s.parse(),
        toml::Value::Integer(i) => i.to_string().parse(),
        toml::Value::Float(f) => f.to_string().parse(),
        other => Err(format!("{other} is not a rate: e.g. 50, \"50/s\" or \"10:100\"")),
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::closed;
    use super::super::{ends_by_itself, overall_load, parse, span};
    use crate::plan::Load;
    use crate::Pacer;
    use std::path::Path;
    use std::time::Duration;

    #[test]
    fn groups_add_up_to_the_overall_load_and_span() {
        let text = "[[flow.a.step]]\nname = \"s\"\nurl = \"http://h:1/\"\n[group.one]\nrate = 10\nduration = \"10s\"\n[group.two]\nrate = \"5:20\"\nstart = \"5s\"\nduration = \"20s\"\n[group.three]\nmax-in-flight = 3\nduration = \"1s\"\n";
        let open = Load::Open { pacer: Pacer::Constant { rate: 100.0 }, max_in_flight: 64 };
        let (s, _) = parse(text, "s.toml", Path::new("."), &[], &open).unwrap();
        assert_eq!(
            s.groups[1].load,
            Load::Open {
                pacer: Pacer::Ramp { from: 5.0, to: 20.0, over: Duration::from_secs(20) },
                max_in_flight: 256
            }
        );
        assert_eq!(
            s.groups[2].load,
            Load::Open { pacer: Pacer::Constant { rate: 100.0 }, max_in_flight: 3 },
            "the run's load, its bound replaced"
        );
        assert_eq!(overall_load(&s), Load::Open { pacer: Pacer::Constant { rate: 130.0 }, max_in_flight: 515 });
        assert_eq!(span(&s), Some(Duration::from_secs(25)));
        let e = parse(text, "s.toml", Path::new("."), &[], &closed(2)).unwrap_err();
        assert!(e.to_string().starts_with("s.toml:12: group.three.max-in-flight: is for open loop"), "{e}");
    }

    /// A group of `iterations` ends by itself: with every other group timed, the run has no
    /// default duration; a group that runs to the run's end takes one again.
    #[test]
    fn iterations_end_a_group_by_themselves() {
        let text = |other: &str| {
            format!("[[flow.a.step]]\nname = \"s\"\nurl = \"http://h:1/\"\n[group.one]\nconcurrency = 3\niterations = 7\n[group.two]\nconcurrency = 1\n{other}")
        };
        let (s, _) = parse(&text("duration = \"2s\"\n"), "s.toml", Path::new("."), &[], &closed(2)).unwrap();
        assert_eq!((s.groups[0].iterations, s.groups[1].iterations), (Some(7), None));
        assert!(ends_by_itself(&s));
        assert_eq!(span(&s), None, "no group's end is known before the run");
        let (s, _) = parse(&text(""), "s.toml", Path::new("."), &[], &closed(2)).unwrap();
        assert!(!ends_by_itself(&s), "group two runs to the run's end");
    }
}
