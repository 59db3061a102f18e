//! `barrage testbed bench`: the classic comparisons as one study. The same load runs
//! against each front of the `all` testbed in turn (direct, nginx, haproxy, varnish and
//! squid with hits and with misses, then each again over HTTPS), one row each.

use crate::{RunOrder, Runner, StudyError};
use barrage_engine::{Load, Pacer, Plan, Target, Watch, WatchTarget};
use barrage_report::{StudyRow, StudyTable};
use barrage_testbed::State;
use std::path::PathBuf;
use std::time::Duration;

/// Workers of the closed loop when neither a rate nor a concurrency is given.
pub const DEFAULT_CONCURRENCY: u32 = 16;

/// The load every front gets, and where its results go.
#[derive(Clone, Debug)]
pub struct Bench {
    /// Open loop at this rate; `None`: a closed loop of `concurrency` workers.
    pub rate: Option<f64>,
    /// Workers of the closed loop.
    pub concurrency: u32,
    /// Length of each run.
    pub duration: Duration,
    /// The origins' response size (`/bytes/SIZE`).
    pub size: String,
    /// Also the HTTPS rows.
    pub tls: bool,
    /// Keep each run's results file here (FRONT.brg).
    pub output_dir: Option<PathBuf>,
}

impl Bench {
    /// Runs every front of the testbed in `state` in turn, until the end or the study's stop.
    pub fn run(&self, state: &State, runner: &mut Runner) -> Result<StudyTable, StudyError> {
        let cases = cases(state, &self.size, self.tls);
        let mut table = StudyTable::new("bench", &["front"]);
        table.planned = cases.len();
        runner.plan_runs(cases.len());
        for (i, (label, url, unique)) in cases.into_iter().enumerate() {
            let mut order = self.order(&label, &url, unique, state).map_err(StudyError::Plan)?;
            // Each front its own stream: the HTTPS misses row must not hit what HTTP cached.
            order.plan.in_study(i as u64 + 1, &[], 0, 0);
            let Some(done) = runner.run(&order)? else { break };
            let ok = done
                .summary
                .throughput_per_sec
                .map_or_else(|| "n/a (too few requests)".into(), |t| format!("{t:.0}/s"));
            runner.note(&format!("{label}: {ok} ok"));
            table.rows.push(StudyRow::new(vec![label], vec![done.summary]));
            if done.interrupted {
                break;
            }
        }
        table.partial = runner.stopped();
        Ok(table)
    }

    /// One run against one front, watching every server of the testbed.
    fn order(&self, label: &str, url: &str, unique: bool, state: &State) -> Result<RunOrder, String> {
        let target = Target::new(http::Method::GET, url)?;
        let load = match self.rate {
            Some(rate) => Load::Open {
                pacer: Pacer::Constant { rate },
                max_in_flight: barrage_plan::units::DEFAULT_OPEN_CONNECTIONS as usize,
            },
            None => Load::Closed { concurrency: self.concurrency as usize, think_time: Duration::ZERO },
        };
        let mut plan = Plan::new(vec![target], load);
        plan.duration = Some(self.duration);
        // A new id per request, never repeated within the run: the Wisconsin stream with no
        // repeats gives each client ids of its own.
        if unique {
            plan.objects = Some(1 << 40);
            plan.hit_ratio = Some(0.0);
        }
        plan.tls.cacert = state.ca.clone();
        plan.validate()?;
        let mut order = RunOrder::new(plan).label("front", label);
        order.output = self.output_dir.as_ref().map(|d| d.join(format!("{}.brg", file_part(label))));
        order.watch = state
            .servers
            .iter()
            .map(|s| Watch { label: s.spec.name.clone(), target: WatchTarget::PidFile(s.pid_file()) })
            .collect();
        Ok(order)
    }
}

/// (label, URL, every request a new object) in table order: every front over HTTP, then
/// over HTTPS (varnish's through hitch).
fn cases(state: &State, size: &str, tls: bool) -> Vec<(String, String, bool)> {
    let fronts: [(&str, &str, bool); 7] = [
        ("direct", "origin-1", false),
        ("nginx-lb", "nginx-lb", false),
        ("haproxy-lb", "haproxy-lb", false),
        ("varnish hits", "varnish", false),
        ("varnish misses", "varnish", true),
        ("squid hits", "squid", false),
        ("squid misses", "squid", true),
    ];
    let mut out = Vec::new();
    for https in [false, true].into_iter().filter(|h| !h || tls) {
        for (label, front, unique) in fronts {
            let Some(server) = state.server(front) else { continue };
            // Varnish's HTTPS is hitch's (varnish-tls).
            let tls_url = || server.spec.tls_url().or_else(|| state.server(&format!("{front}-tls"))?.spec.tls_url());
            let Some(base) = (if https { tls_url() } else { Some(server.spec.url()) }) else { continue };
            let path = if unique { format!("bytes/{size}?miss={{id}}") } else { format!("bytes/{size}") };
            let label = if https { format!("{label} (https)") } else { label.to_string() };
            out.push((label, format!("{base}{path}"), unique));
        }
    }
    out
}

/// Takes a testbed down when dropped, so an error or a signal in the middle leaves nothing.
pub struct Down(pub PathBuf);

impl Drop for Down {
    fn drop(&mut self) {
        if let Err(e) = barrage_testbed::down(&self.0) {
            eprintln!("barrage: taking the testbed down: {e}");
        }
    }
}

/// A front's label as a file name's part: `direct (https)` is `direct-https`, with no dash
/// doubled or left at the end (`direct-https-.brg` was).
fn file_part(label: &str) -> String {
    let dashed = label.replace([' ', '(', ')'], "-");
    dashed.split('-').filter(|w| !w.is_empty()).collect::<Vec<_>>().join("-")
}

#[cfg(test)]
mod tests {
    use super::file_part;

    #[test]
    fn a_front_is_a_clean_file_name_part() {
        assert_eq!(file_part("direct (https)"), "direct-https");
        assert_eq!(file_part("varnish (http)"), "varnish-http");
        assert_eq!(file_part("nginx-lb"), "nginx-lb");
    }
}
