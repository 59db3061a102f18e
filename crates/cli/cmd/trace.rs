//! `barrage report --trace-id ID FILE...`: the request a trace id names, found from the
//! results files alone. A trace id is the run id's first 64 bits and a bijection of the
//! request's number ([`barrage_metrics::trace`]), so the file whose run id starts it holds
//! the request, and the number comes back by inverting the rest: nothing was stored per
//! request. Not found is exit 1 (as grep: the id was well formed, no run has it); an id
//! that is not one is a usage error, exit 2.

use super::emit::print;
use crate::args::Format;
use crate::Exit;
use anyhow::Context;
use barrage_metrics::file::{ResultsReader, RunHeader};
use barrage_metrics::trace::{Sampling, TraceId, TraceKey};
use barrage_plan::Pacer;
use serde_json::{json, Value};
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What a trace id leads to.
struct Found<'a> {
    file: &'a Path,
    run_id: String,
    shard: Option<(u32, u32)>,
    number: u64,
    /// A `--scenario` run: the number is a flow instance's.
    flow: bool,
    /// The run's `--trace-sample`, when it sent trace context.
    sample: Option<f64>,
    /// When the request was due, µs since the Unix epoch; or why that is not known.
    intended: Result<u64, &'static str>,
}

/// Finds the request `id` names among `files`' runs, printing it (and its rows of `log`).
pub fn find(id: TraceId, files: &[PathBuf], log: Option<&Path>, format: Format) -> anyhow::Result<Exit> {
    let mut run_ids = Vec::new();
    for path in files {
        let reader = ResultsReader::open(path)?;
        let header = reader.header();
        let key = TraceKey::of_run(&header.launch.run_id);
        let Some(number) = key.and_then(|k| k.number_of(id)) else {
            run_ids.push(if header.launch.run_id.is_empty() { "none".into() } else { header.launch.run_id.clone() });
            continue;
        };
        let found = Found::of(path, header, number);
        let rows = log.map(|l| log_rows(l, id)).transpose()?;
        print(&match format {
            Format::Json => serde_json::to_string_pretty(&found.json(id, rows.as_deref()))?,
            _ => found.text(id, rows.as_deref()),
        })?;
        return Ok(Exit::Ok);
    }
    eprintln!(
        "barrage: trace id {id} not found: none of these runs has it (a trace id begins with its run id's first 16 hex digits; the files' run ids: {})",
        run_ids.join(", ")
    );
    Ok(Exit::Failed)
}

impl<'a> Found<'a> {
    fn of(file: &'a Path, header: &RunHeader, number: u64) -> Found<'a> {
        let settings: Value = serde_json::from_str(&header.settings_json).unwrap_or(Value::Null);
        let plan = &settings["plan"];
        let flow = !plan["scenario"].is_null();
        let zero = header.launch.start_at_unix_us.unwrap_or(header.launch.ready_unix_us);
        let intended = if flow {
            Err("a flow's arrival time is not in the results file (the request log's intended_unix_us has each step's)")
        } else {
            match pacer_of(&plan["load"]["open"]["pacer"]) {
                Some(pacer) => {
                    pacer.due(number).map(|due| zero + due.as_micros() as u64).ok_or("after the schedule's end")
                }
                None => Err(
                    "a closed loop starts each request when its worker is free: see the request log's intended_unix_us",
                ),
            }
        };
        Found {
            file,
            run_id: header.launch.run_id.clone(),
            shard: header.launch.shard,
            number,
            flow,
            sample: plan["trace"]["sample"].as_f64(),
            intended,
        }
    }

    /// Whether its `traceparent` said sampled, when the run sent one.
    fn sampled(&self, id: TraceId) -> Option<bool> {
        Some(Sampling::new(self.sample?)?.sampled(id))
    }

    fn text(&self, id: TraceId, rows: Option<&[String]>) -> String {
        let mut o = String::new();
        let what = if self.flow { "flow instance" } else { "request" };
        say!(o, "trace {id}: {what} {} of run {}", self.number, self.run_id);
        let shard = self.shard.map_or(String::new(), |(i, n)| format!(" (shard {i}/{n})"));
        say!(o, "  results file  {}{shard}", self.file.display());
        if self.flow {
            say!(o, "  spans         the flow is span 0; its steps 1, 2, … in their order, one span per attempt");
        }
        match &self.intended {
            Ok(us) => say!(o, "  due at        {} ({us} µs since the Unix epoch)", iso(*us)),
            Err(why) => say!(o, "  due at        not known: {why}"),
        }
        match (self.sample, self.sampled(id)) {
            (Some(p), Some(s)) => say!(o, "  sampled       {} (--trace-sample {p})", if s { "yes" } else { "no" }),
            _ => say!(
                o,
                "  sampled       the run sent no trace context (no --trace-context): this id was never on the wire"
            ),
        }
        if let Some(rows) = rows {
            let found = rows.iter().filter(|r| !r.starts_with("start_unix_us,")).count();
            say!(o, "  log rows      {found}");
            for row in rows {
                say!(o, "{row}");
            }
        }
        o
    }

    fn json(&self, id: TraceId, rows: Option<&[String]>) -> Value {
        json!({
            "trace_id": id.to_string(),
            "file": self.file.display().to_string(),
            "run_id": self.run_id,
            "shard": self.shard.map(|(i, n)| format!("{i}/{n}")),
            "number": self.number,
            "flow": self.flow,
            "intended_unix_us": self.intended.ok(),
            "sampled": self.sampled(id),
            "log_rows": rows,
        })
    }
}

/// The open-loop pacer a plan's view shows (`settings.plan.load.open.pacer`).
fn pacer_of(view: &Value) -> Option<Pacer> {
    if let Some(rate) = view["constant_per_sec"].as_f64() {
        return Some(Pacer::Constant { rate });
    }
    if let (Some([from, to]), Some(over)) = (rate_pair(&view["ramp_per_sec"]), view["over_s"].as_f64()) {
        return Some(Pacer::Ramp { from, to, over: Duration::try_from_secs_f64(over).ok()? });
    }
    let rates = view["steps_per_sec"].as_array()?.iter().map(Value::as_f64).collect::<Option<Vec<_>>>()?;
    Some(Pacer::Steps { rates, step: Duration::try_from_secs_f64(view["step_s"].as_f64()?).ok()? })
}

fn rate_pair(v: &Value) -> Option<[f64; 2]> {
    match v.as_array()?.as_slice() {
        [a, b] => Some([a.as_f64()?, b.as_f64()?]),
        _ => None,
    }
}

/// The rows of request log `path` with trace id `id`, after its header row for a CSV log.
/// The trace id is the second last column (`trace_id,sampled` end every row), so a row is
/// read from its end: a quoted URL before it may hold commas.
fn log_rows(path: &Path, id: TraceId) -> anyhow::Result<Vec<String>> {
    let file = std::fs::File::open(path).with_context(|| format!("--log {}", path.display()))?;
    let (needle, quoted) = (id.to_string(), format!("\"trace_id\":\"{id}\""));
    let mut rows = Vec::new();
    for (i, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line.with_context(|| format!("--log {}", path.display()))?;
        let csv_match = line.rsplit(',').nth(1) == Some(needle.as_str());
        if (i == 0 && line.starts_with("start_unix_us,")) || csv_match || line.contains(&quoted) {
            rows.push(line);
        }
    }
    Ok(rows)
}

/// `us` µs since the Unix epoch as the reports show times, with its microseconds.
fn iso(us: u64) -> String {
    let utc = barrage_report::utc(us / 1000);
    // `YYYY-MM-DD hh:mm:ss UTC`: the seconds' fraction goes before the zone.
    match utc.strip_suffix(" UTC") {
        Some(time) => format!("{time}.{:06} UTC", us % 1_000_000),
        None => utc,
    }
}
