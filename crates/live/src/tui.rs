//! `--tui`: a live terminal view of the current run, redrawn once per closed interval; a
//! study's runs follow one another on the same screen, each under its label.
//!
//! The state ([`View`]) is plain data fed by intervals and drawn by a pure [`draw`], so the
//! screen is tested with ratatui's `TestBackend`; [`Tui`] only owns the terminal and the
//! thread that reads keys.

use crate::{LiveError, RunInfo};
use barrage_metrics::units::fmt_us;
use barrage_metrics::{CacheStatus, ErrorKind, IntervalRecord, Recorder};
use crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use crossterm::terminal::{disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen};
use ratatui::backend::CrosstermBackend;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style, Stylize};
use ratatui::symbols;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Gauge, Paragraph, RenderDirection, Sparkline};
use ratatui::{Frame, Terminal};
use std::collections::{BTreeMap, VecDeque};
use std::io::{IsTerminal, Stderr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Once};
use std::thread::JoinHandle;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Intervals of p99 kept for the sparkline: two minutes of one-second intervals.
const HISTORY: usize = 120;
/// Below this size the full layout does not fit: a few summary lines are drawn instead.
const MIN_FULL: (u16, u16) = (60, 20);
/// How often the key thread looks up from waiting for a key to see whether it should end.
const KEY_POLL: Duration = Duration::from_millis(100);
/// The engine closes one interval per second; only the last one of a run is shorter.
const INTERVAL_MS: u64 = 1000;
/// Footer shown while the run goes.
const FOOTER: &str = "q: stop and print the report";
/// Footer shown once a stop was asked for.
const FOOTER_STOPPING: &str = "stopping: waiting for the requests in flight (Ctrl-C: quit at once)";

/// Set while the terminal is taken over; whoever clears it (finish, drop, the panic hook, a
/// second Ctrl-C) restores the terminal, so it is restored exactly once.
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// The live view: owns the terminal while the study goes.
pub(crate) struct Tui {
    terminal: Option<Terminal<CrosstermBackend<Stderr>>>,
    /// Boxed: its recorder holds dozens of histograms, and a `Tui` is moved around by value.
    view: Box<View>,
    stop: CancellationToken,
    keys: Option<KeyThread>,
}

impl Tui {
    /// Takes over the terminal (alternate screen, raw mode, hidden cursor) and starts a thread
    /// that reads keys: `q`, Esc or Ctrl-C cancel `stop` (in raw mode Ctrl-C arrives as a
    /// key, not SIGINT); a second Ctrl-C restores the terminal and exits at once, like the
    /// second SIGINT of a plain run (exit code 130). Draws a first frame at once.
    pub(crate) fn start(stop: CancellationToken) -> Result<Tui, LiveError> {
        // stderr, not stdout: the report goes to stdout and may be redirected (--format json).
        if !std::io::stderr().is_terminal() {
            return Err(LiveError::NotATerminal);
        }
        install_panic_hook();
        enable_raw_mode().map_err(LiveError::Terminal)?;
        ACTIVE.store(true, Ordering::SeqCst);
        // From here on dropping `tui` restores the terminal, also when a step below fails.
        let view = Box::new(View::new(RunInfo::default()));
        let mut tui = Tui { terminal: None, view, stop: stop.clone(), keys: None };
        crossterm::execute!(std::io::stderr(), EnterAlternateScreen, crossterm::cursor::Hide)
            .map_err(LiveError::Terminal)?;
        let terminal = Terminal::new(CrosstermBackend::new(std::io::stderr())).map_err(LiveError::Terminal)?;
        tui.terminal = Some(terminal);
        tui.keys = Some(KeyThread::spawn(stop).map_err(LiveError::Terminal)?);
        tui.redraw();
        Ok(tui)
    }

    /// A run starts: its figures replace the last run's, its label goes in the title.
    pub(crate) fn begin(&mut self, info: RunInfo) {
        self.view.begin(info);
        self.redraw();
    }

    /// Adds a closed interval to the state and redraws; `rated` is the interval its
    /// per-second figures are computed over ([`barrage_metrics::file::SliverFold`]).
    pub(crate) fn update(&mut self, i: &IntervalRecord, rated: &IntervalRecord) {
        self.view.add(i, rated);
        self.redraw();
    }

    fn redraw(&mut self) {
        self.view.stopping = self.stop.is_cancelled();
        // After a panic elsewhere restored the terminal, drawing would scribble on the shell.
        if !ACTIVE.load(Ordering::SeqCst) {
            return;
        }
        if let Some(t) = &mut self.terminal {
            // A failed draw (terminal gone) must not fail the run: the report still comes.
            let _ = t.draw(|f| draw(f, &self.view));
        }
    }

    fn shutdown(&mut self) {
        if let Some(keys) = self.keys.take() {
            keys.stop();
        }
        restore_terminal();
        self.terminal = None;
    }
}

/// Restores the terminal (a panic hook restores it too, before the panic message) and
/// stops the key thread.
impl Drop for Tui {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Leaves the alternate screen, shows the cursor and ends raw mode, once.
fn restore_terminal() {
    if ACTIVE.swap(false, Ordering::SeqCst) {
        let _ = disable_raw_mode();
        let _ = crossterm::execute!(std::io::stderr(), LeaveAlternateScreen, crossterm::cursor::Show);
    }
}

/// Restores the terminal before the panic message is printed, so the message is readable
/// and the shell is not left in raw mode. Installed once however many runs (phases) start.
fn install_panic_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore_terminal();
            previous(info);
        }));
    });
}

/// What a key asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum KeyAction {
    /// Nothing.
    None,
    /// Stop the attack and print the report.
    Stop,
    /// Quit at once, without the report (Ctrl-C while already stopping).
    Quit,
}

/// Maps a key to what it asks for; `stopping` tells whether a stop was asked already.
fn key_action(key: KeyEvent, stopping: bool) -> KeyAction {
    // Terminals with the kitty protocol also report releases: act once per press.
    if key.kind != KeyEventKind::Press {
        return KeyAction::None;
    }
    let ctrl_c = key.modifiers.contains(KeyModifiers::CONTROL) && matches!(key.code, KeyCode::Char('c' | 'C'));
    match key.code {
        _ if ctrl_c && stopping => KeyAction::Quit,
        _ if ctrl_c => KeyAction::Stop,
        KeyCode::Char('q' | 'Q') | KeyCode::Esc => KeyAction::Stop,
        _ => KeyAction::None,
    }
}

/// The thread reading keys, and the flag that ends it.
struct KeyThread {
    done: Arc<AtomicBool>,
    handle: JoinHandle<()>,
}

impl KeyThread {
    fn spawn(stop: CancellationToken) -> std::io::Result<KeyThread> {
        let done = Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        let handle =
            std::thread::Builder::new().name("barrage-tui-keys".into()).spawn(move || read_keys(&stop, &flag))?;
        Ok(KeyThread { done, handle })
    }

    fn stop(self) {
        self.done.store(true, Ordering::SeqCst);
        let _ = self.handle.join();
    }
}

fn read_keys(stop: &CancellationToken, done: &AtomicBool) {
    while !done.load(Ordering::SeqCst) {
        // Wait with a timeout rather than block in read(), so `finish` never waits for a key.
        match event::poll(KEY_POLL) {
            Ok(true) => {}
            Ok(false) => continue,
            Err(_) => return,
        }
        let key = match event::read() {
            Ok(Event::Key(key)) => key,
            Ok(_) => continue,
            Err(_) => return,
        };
        match key_action(key, stop.is_cancelled()) {
            KeyAction::None => {}
            KeyAction::Stop => stop.cancel(),
            KeyAction::Quit => {
                restore_terminal();
                std::process::exit(130);
            }
        }
    }
}

/// Latency percentiles of a histogram, µs.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Latency {
    p50: u64,
    p90: u64,
    p99: u64,
    max: u64,
}

impl Latency {
    /// Of the corrected latency; `None` without requests: "no data" is not a latency of zero.
    fn of(r: &Recorder) -> Option<Latency> {
        let h = &r.corrected;
        (!h.is_empty()).then(|| Latency {
            p50: h.value_at_quantile(0.5),
            p90: h.value_at_quantile(0.9),
            p99: h.value_at_quantile(0.99),
            max: h.max(),
        })
    }
}

/// What the screen shows, fed interval by interval; no terminal in it.
struct View {
    info: RunInfo,
    /// Time since the start of the run, up to the end of the last interval.
    elapsed: Duration,
    /// Requests sent per second in the last interval.
    rate: f64,
    /// Successful responses per second in the last interval.
    ok_rate: f64,
    /// Corrected latency of the last interval.
    last: Option<Latency>,
    /// Corrected latency of the whole run so far.
    run: Option<Latency>,
    /// p99 of each interval, µs, oldest first, at most [`HISTORY`].
    p99_history: VecDeque<u64>,
    /// Index of the interval the last figures were of.
    shown: Option<u32>,
    /// Every interval so far added up: counts, status codes, cache, backends.
    total: Recorder,
    /// barrage's own CPU in the last interval, % of one core.
    cpu_percent: Option<f32>,
    /// A stop was asked for: the run is waiting for the requests in flight.
    stopping: bool,
}

impl View {
    fn new(info: RunInfo) -> View {
        View {
            info,
            elapsed: Duration::ZERO,
            rate: 0.0,
            ok_rate: 0.0,
            last: None,
            run: None,
            p99_history: VecDeque::with_capacity(HISTORY),
            shown: None,
            total: Recorder::new(),
            cpu_percent: None,
            stopping: false,
        }
    }

    /// A new run: every figure is the run's own, so nothing of the last one is kept.
    fn begin(&mut self, info: RunInfo) {
        *self = View::new(info);
    }

    /// Adds interval `i` to the run's totals; the last interval's figures are `rated`'s,
    /// which is `i` or, for a sliver, the interval before with `i` folded in (it then
    /// replaces that interval's figures instead of adding a spike).
    fn add(&mut self, i: &IntervalRecord, rated: &IntervalRecord) {
        let end_ms = u64::from(rated.index) * INTERVAL_MS + u64::from(rated.length_ms);
        self.elapsed = self.elapsed.max(Duration::from_millis(end_ms));
        let r = &rated.recorder;
        let secs = f64::from(rated.length_ms.max(1)) / 1e3;
        self.rate = r.counts.sent as f64 / secs;
        self.ok_rate = r.counts.ok as f64 / secs;
        self.last = Latency::of(r);
        if self.shown == Some(rated.index) {
            self.p99_history.pop_back();
        } else if self.p99_history.len() == HISTORY {
            self.p99_history.pop_front();
        }
        self.p99_history.push_back(self.last.map_or(0, |l| l.p99));
        self.shown = Some(rated.index);
        self.total.add(&i.recorder);
        forget_timeline(&mut self.total);
        self.run = Latency::of(&self.total);
        self.cpu_percent = rated.watch.as_ref().map(|w| w.generator.cpu_percent());
    }

    /// Responses per status code, whole run (code 0: outside 100..=599).
    fn status_codes(&self) -> BTreeMap<u16, u64> {
        self.total.status_counts()
    }

    /// Failed requests per error kind, whole run, only the kinds that happened.
    fn errors(&self) -> Vec<(&'static str, u64)> {
        let counts = &self.total.counts.errors;
        ErrorKind::ALL.iter().map(|k| (k.name(), counts[*k as usize])).filter(|(_, n)| *n > 0).collect()
    }

    /// Share of the responses a cache classified that it served; `None` when none was.
    fn hit_ratio(&self) -> Option<f64> {
        let cache = &self.total.counts.cache;
        let known = CacheStatus::ALL.iter().filter(|s| **s != CacheStatus::Unknown);
        let (hits, classified) = known.fold((0, 0), |(h, c), s| {
            let n = cache[*s as usize];
            (h + if s.from_cache() { n } else { 0 }, c + n)
        });
        (classified > 0).then(|| hits as f64 / classified as f64)
    }

    /// Each backend's share of the requests that named a backend, whole run.
    fn backend_shares(&self) -> Vec<(&str, f64)> {
        let backends = &self.total.backends;
        let sum: u64 = backends.iter().map(|b| b.requests).sum();
        backends.iter().map(|b| (b.name.as_str(), b.requests as f64 / sum.max(1) as f64)).collect()
    }

    /// How far the attack is, 0 to 1: by time, or by requests sent with `-n`.
    fn progress(&self) -> Option<f64> {
        let ratio = match (self.info.total, self.info.requests) {
            (Some(t), _) if !t.is_zero() => self.elapsed.as_secs_f64() / t.as_secs_f64(),
            (_, Some(n)) if n > 0 => self.total.counts.sent as f64 / n as f64,
            _ => return None,
        };
        Some(ratio.clamp(0.0, 1.0))
    }

    /// Time left in the attack; with `-n`, estimated from the last interval's rate.
    fn time_left(&self) -> Option<Duration> {
        if let Some(t) = self.info.total {
            return Some(t.saturating_sub(self.elapsed));
        }
        let left = self.info.requests?.saturating_sub(self.total.counts.sent);
        (self.rate > 0.0).then(|| Duration::from_secs_f64(left as f64 / self.rate))
    }
}

/// Drops the per-tick detail a cumulative recorder would otherwise grow by every second of
/// the run (the view draws none of it), so memory stays flat however long the run.
fn forget_timeline(r: &mut Recorder) {
    r.timeline = Default::default();
    r.backends.forget_timelines();
    r.samples.clear();
}

/// Draws the whole screen from the view; falls back to a few summary lines on a small terminal.
fn draw(frame: &mut Frame, view: &View) {
    let area = frame.area();
    if area.width < MIN_FULL.0 || area.height < MIN_FULL.1 {
        draw_compact(frame, area, view);
        return;
    }
    // Header, rate, latency, counts, CPU, footer; latency gets what the others leave.
    let fixed = 5 + 1 + 1 + 1;
    let counts_height = counts_height(view).min(area.height.saturating_sub(fixed + 6));
    let [header, rate, latency, counts, cpu, footer] = Layout::vertical([
        Constraint::Length(5),
        Constraint::Length(1),
        Constraint::Min(6),
        Constraint::Length(counts_height),
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(area);
    draw_header(frame, header, view);
    frame.render_widget(Paragraph::new(rate_line(view)), rate);
    draw_latency(frame, latency, view);
    draw_counts(frame, counts, view);
    frame.render_widget(Paragraph::new(cpu_line(view)), cpu);
    frame.render_widget(Paragraph::new(footer_line(view)), footer);
}

/// A terminal too small for the layout still shows the numbers that matter most.
fn draw_compact(frame: &mut Frame, area: Rect, view: &View) {
    let p99 = |l: Option<Latency>| l.map_or_else(|| "-".to_string(), |l| fmt_us(l.p99 as f64));
    let failed = view.total.counts.completed.saturating_sub(view.total.counts.ok);
    // The label first: on a small screen it is what tells the runs of a study apart.
    let label = view.info.label.as_ref().map_or_else(String::new, |l| format!("{l} · "));
    let lines = vec![
        Line::from(format!("{label}{} {:.0}/s", elapsed_text(view), view.rate)),
        Line::from(format!("ok {:.0}/s failed {failed}", view.ok_rate)),
        Line::from(format!("p99 {}", p99(view.last))),
        Line::from(format!("run p99 {}", p99(view.run))),
        footer_line(view),
    ];
    frame.render_widget(Paragraph::new(lines), area);
}

fn draw_header(frame: &mut Frame, area: Rect, view: &View) {
    let block = Block::bordered().title(title(view));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let [urls, mode, gauge] = Layout::vertical([Constraint::Length(1); 3]).areas(inner);
    frame.render_widget(Paragraph::new(urls_text(&view.info)).style(Style::new().bold()), urls);
    frame.render_widget(Paragraph::new(mode_text(view)), mode);
    frame.render_widget(progress_gauge(view), gauge);
}

/// " barrage run ", with the run's label in a study.
fn title(view: &View) -> String {
    match &view.info.label {
        Some(label) => format!(" barrage run · {label} "),
        None => " barrage run ".to_string(),
    }
}

/// The first URLs and how many more: a target file can hold a million.
fn urls_text(info: &RunInfo) -> String {
    let shown = &info.urls[..info.urls.len().min(crate::URLS_SHOWN)];
    let mut text = shown.join("  ");
    let more = info.url_count.max(info.urls.len()) - shown.len();
    if more > 0 {
        text.push_str(&format!("  (+{more} more)"));
    }
    text
}

fn mode_text(view: &View) -> String {
    let mode = match (view.info.target_rate, view.info.concurrency) {
        (Some(rate), _) => format!("open loop, target {rate:.0}/s"),
        (None, Some(workers)) => format!("closed loop, {workers} workers"),
        (None, None) => String::new(),
    };
    let left = view.time_left().map_or_else(String::new, |d| format!("  ·  {} left", secs_text(d)));
    format!("{mode}  ·  {}{left}", elapsed_text(view))
}

/// "12s / 30s", or "12s, 1200 of 5000 requests" with `-n`.
fn elapsed_text(view: &View) -> String {
    let elapsed = secs_text(view.elapsed);
    match (view.info.total, view.info.requests) {
        (Some(t), _) => format!("{elapsed} / {}", secs_text(t)),
        (None, Some(n)) => format!("{elapsed}, {} of {n} requests", view.total.counts.sent),
        (None, None) => elapsed,
    }
}

fn secs_text(d: Duration) -> String {
    format!("{}s", d.as_secs())
}

fn progress_gauge(view: &View) -> Gauge<'static> {
    let ratio = view.progress().unwrap_or(0.0);
    let (label, color) = if view.stopping {
        ("stopping".to_string(), Color::Yellow)
    } else {
        (view.progress().map_or_else(|| "-".to_string(), |r| format!("{:.0}%", r * 100.0)), Color::Cyan)
    };
    Gauge::default().ratio(ratio).label(label).gauge_style(Style::new().fg(color).bg(Color::DarkGray))
}

fn rate_line(view: &View) -> Line<'static> {
    let mut spans = vec![Span::raw("rate "), Span::styled(format!("{:.0}/s", view.rate), rate_style(view))];
    if let Some(target) = view.info.target_rate {
        spans.push(Span::raw(format!(" of {target:.0}/s target")));
    }
    spans.push(Span::raw("   ok "));
    spans.push(Span::styled(format!("{:.0}/s", view.ok_rate), Style::new().fg(Color::Green)));
    Line::from(spans)
}

/// Yellow when the last interval sent under 90% of the target: the generator or the
/// in-flight bound cannot keep up, which the latency figures alone do not say.
fn rate_style(view: &View) -> Style {
    let behind = view.info.target_rate.is_some_and(|t| view.rate < 0.9 * t);
    let style = Style::new().add_modifier(Modifier::BOLD);
    if behind {
        style.fg(Color::Yellow)
    } else {
        style
    }
}

fn draw_latency(frame: &mut Frame, area: Rect, view: &View) {
    let block = Block::bordered().title(" latency, from the intended start ");
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let [table, label, spark] =
        Layout::vertical([Constraint::Length(3), Constraint::Length(1), Constraint::Min(0)]).areas(inner);
    frame.render_widget(Paragraph::new(latency_rows(view)), table);
    let peak = view.p99_history.iter().max().copied().unwrap_or(0);
    let caption = format!("p99 of each second, last {}s (peak {})", view.p99_history.len(), fmt_us(peak as f64));
    frame.render_widget(Paragraph::new(caption).style(Style::new().fg(Color::DarkGray)), label);
    // Newest first, drawn from the right edge: the latest second is always in view.
    let sparkline = Sparkline::default()
        .data(view.p99_history.iter().rev().copied())
        .direction(RenderDirection::RightToLeft)
        .bar_set(symbols::bar::NINE_LEVELS)
        .style(Style::new().fg(Color::Magenta));
    frame.render_widget(sparkline, spark);
}

fn latency_rows(view: &View) -> Vec<Line<'static>> {
    let row = |name: &str, l: Option<Latency>| {
        let cell = |v: Option<u64>| v.map_or_else(|| "-".to_string(), |v| fmt_us(v as f64));
        let values = [l.map(|l| l.p50), l.map(|l| l.p90), l.map(|l| l.p99), l.map(|l| l.max)];
        let cells: String = values.iter().map(|v| format!("{:>11}", cell(*v))).collect();
        Line::from(format!("{name:<14}{cells}"))
    };
    let head = format!("{:<14}{:>11}{:>11}{:>11}{:>11}", "", "p50", "p90", "p99", "max");
    vec![Line::from(head).style(Style::new().bold()), row("last second", view.last), row("whole run", view.run)]
}

/// Rows the counts need: the longer of the two columns, with their borders.
fn counts_height(view: &View) -> u16 {
    let left = view.status_codes().len() + view.errors().len();
    let right = 1 + view.total.backends.len();
    (left.max(right).max(1) + 2).min(usize::from(u16::MAX)) as u16
}

fn draw_counts(frame: &mut Frame, area: Rect, view: &View) {
    let [left, right] = Layout::horizontal([Constraint::Percentage(50); 2]).areas(area);
    let block = Block::bordered().title(" responses (whole run) ");
    let inner = block.inner(left);
    frame.render_widget(block, left);
    frame.render_widget(Paragraph::new(response_lines(view)), inner);
    let block = Block::bordered().title(" cache and backends ");
    let inner = block.inner(right);
    frame.render_widget(block, right);
    frame.render_widget(Paragraph::new(cache_lines(view, inner.width)), inner);
}

/// Status codes with their counts and shares, then the error kinds that happened.
fn response_lines(view: &View) -> Vec<Line<'static>> {
    let codes = view.status_codes().into_iter().map(|(code, n)| {
        let name = if code == 0 { "other".to_string() } else { code.to_string() };
        (name, n, Style::new().fg(status_color(code)))
    });
    let errors = view.errors().into_iter().map(|(name, n)| (name.to_string(), n, Style::new().red()));
    let rows: Vec<(String, u64, Style)> = codes.chain(errors).collect();
    if rows.is_empty() {
        return vec![Line::styled("no responses yet", Style::new().fg(Color::DarkGray))];
    }
    // Names as wide as the widest, so the counts line up on a narrow terminal too.
    let width = rows.iter().map(|(name, _, _)| name.len()).max().unwrap_or(0);
    let all = view.total.counts.completed.max(1) as f64;
    let line = |(name, n, style): (String, u64, Style)| {
        Line::styled(format!("{name:<width$} {n:>10} {:>6.1}%", n as f64 * 100.0 / all), style)
    };
    rows.into_iter().map(line).collect()
}

fn status_color(code: u16) -> Color {
    match code {
        200..=299 => Color::Green,
        300..=399 => Color::Cyan,
        400..=499 => Color::Yellow,
        _ => Color::Red,
    }
}

/// The hit ratio, then one bar per backend with its share of the requests.
fn cache_lines(view: &View, width: u16) -> Vec<Line<'static>> {
    let ratio =
        view.hit_ratio().map_or_else(|| "- (no cache header seen)".to_string(), |r| format!("{:.1}%", r * 100.0));
    let mut lines = vec![Line::from(format!("cache hit ratio {ratio}"))];
    let shares = view.backend_shares();
    let name_width = shares.iter().map(|(name, _)| name.chars().count()).max().unwrap_or(0).min(20);
    // Name, a space, the bar, a space and "100.0%".
    let bar_width = usize::from(width).saturating_sub(name_width + 8);
    for (name, share) in shares {
        let name: String = name.chars().take(name_width).collect();
        let line = format!("{name:<name_width$} {} {:>5.1}%", bar(share, bar_width), share * 100.0);
        lines.push(Line::from(line));
    }
    lines
}

/// A horizontal bar `width` cells long, filled to `share`.
fn bar(share: f64, width: usize) -> String {
    let filled = ((share.clamp(0.0, 1.0) * width as f64).round() as usize).min(width);
    format!("{}{}", "█".repeat(filled), "░".repeat(width - filled))
}

/// barrage's CPU, then the run's streams when its connections carried several at once.
fn cpu_line(view: &View) -> Line<'static> {
    let cpu = view.cpu_percent.map_or_else(|| "-".to_string(), |c| format!("{c:.0}% of one core"));
    match crate::streams_text(&view.total.counts) {
        Some(streams) => Line::from(format!("barrage CPU {cpu}   {streams}")),
        None => Line::from(format!("barrage CPU {cpu}")),
    }
}

fn footer_line(view: &View) -> Line<'static> {
    let text = if view.stopping { FOOTER_STOPPING } else { FOOTER };
    Line::styled(text, Style::new().fg(Color::DarkGray))
}

#[cfg(test)]
mod tests {
    use super::*;
    use barrage_metrics::{testing, Outcome, ProcSample, Sample, WatchSample};
    use ratatui::backend::TestBackend;

    const URL: &str = "http://cache.test:8080/items";

    fn sample(ms: u64, outcome: Outcome, cache: CacheStatus) -> Sample {
        let s = testing::sample(Duration::from_millis(1 + ms), outcome);
        Sample { started: Duration::from_millis(1), bytes_in: 1000, bytes_out: 80, cache, ..s }
    }

    /// Ten requests a second: 6 hits from origin-1, 2 misses from origin-2, a 503 miss from
    /// origin-1 and a reset (no backend, no cache status).
    fn interval(index: u32) -> IntervalRecord {
        let mut r = Recorder::new();
        let mut add = |s: Sample, backend: Option<&[u8]>| {
            r.record_sent();
            r.record(&s);
            if let Some(b) = backend {
                r.backends.record(b, &s);
            }
        };
        for ms in 1..=6 {
            add(sample(ms, Outcome::Status(200), CacheStatus::Hit), Some(b"origin-1"));
        }
        for _ in 0..2 {
            add(sample(20, Outcome::Status(200), CacheStatus::Miss), Some(b"origin-2"));
        }
        add(sample(40, Outcome::Status(503), CacheStatus::Miss), Some(b"origin-1"));
        add(sample(90, Outcome::Error(ErrorKind::Reset), CacheStatus::Unknown), None);
        let generator = ProcSample {
            name: "barrage".into(),
            cpu_user_percent: 30.0,
            cpu_system_percent: 12.0,
            ..ProcSample::default()
        };
        let watch = Some(WatchSample { generator, ..WatchSample::default() });
        IntervalRecord { watch, ..testing::interval(index, 1_700_000_000_000 + u64::from(index) * 1000, r) }
    }

    fn view_of(info: RunInfo, intervals: u32) -> View {
        let mut view = View::new(info);
        for i in 0..intervals {
            let i = interval(i);
            view.add(&i, &i);
        }
        view
    }

    fn open_info() -> RunInfo {
        RunInfo {
            urls: vec![URL.into()],
            target_rate: Some(10.0),
            total: Some(Duration::from_secs(30)),
            ..RunInfo::default()
        }
    }

    fn render(view: &View, width: u16, height: u16) -> Vec<String> {
        let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
        terminal.draw(|f| draw(f, view)).unwrap();
        let buf = terminal.backend().buffer();
        (0..height).map(|y| (0..width).map(|x| buf[(x, y)].symbol()).collect()).collect()
    }

    /// The screen line holding `needle`.
    fn line_with<'a>(screen: &'a [String], needle: &str) -> &'a str {
        let found = screen.iter().find(|l| l.contains(needle));
        found.unwrap_or_else(|| panic!("no line with {needle:?} in:\n{}", screen.join("\n")))
    }

    /// The sliver that ends a run (10 requests in 4 ms) is shown folded into the second
    /// before, as the report does: no 2,500/s spike, no extra point in the p99 history.
    #[test]
    fn the_last_sliver_is_folded_into_the_second_before() {
        let mut view = View::new(open_info());
        let mut fold = barrage_metrics::file::SliverFold::default();
        for i in [interval(0), interval(1), IntervalRecord { length_ms: 4, ..interval(2) }] {
            let (i, rated) = fold.fold(i);
            view.add(i, rated);
        }
        assert!((view.rate - 20.0 / 1.004).abs() < 1e-9, "{}", view.rate);
        assert_eq!(view.p99_history.len(), 2);
        assert_eq!(view.elapsed, Duration::from_millis(2004));
        assert_eq!(view.total.counts.completed, 30);
    }

    #[test]
    fn view_adds_up_intervals() {
        let view = view_of(open_info(), 3);
        assert_eq!(view.elapsed, Duration::from_secs(3));
        assert_eq!((view.rate, view.ok_rate), (10.0, 8.0));
        assert_eq!(view.total.counts.completed, 30);
        assert_eq!(view.status_codes(), BTreeMap::from([(200, 24), (503, 3)]));
        assert_eq!(view.errors(), [("reset", 3)]);
        assert!((view.hit_ratio().unwrap() - 18.0 / 27.0).abs() < 1e-9);
        assert_eq!(view.backend_shares(), [("origin-1", 21.0 / 27.0), ("origin-2", 6.0 / 27.0)]);
        assert_eq!(view.p99_history.len(), 3);
        assert!(view.run.unwrap().max >= 90_000);
        assert_eq!(view.cpu_percent, Some(42.0));
        assert!((view.progress().unwrap() - 0.1).abs() < 1e-9);
        assert_eq!(view.time_left(), Some(Duration::from_secs(27)));
    }

    #[test]
    fn progress_by_requests_and_none_without_a_limit() {
        let info = RunInfo { requests: Some(60), ..open_info() };
        let view = view_of(RunInfo { total: None, ..info }, 3);
        assert!((view.progress().unwrap() - 0.5).abs() < 1e-9);
        assert_eq!(view.time_left(), Some(Duration::from_secs(3)));
        let view = view_of(RunInfo { total: None, requests: None, ..open_info() }, 1);
        assert_eq!((view.progress(), view.time_left()), (None, None));
        assert_eq!(View::new(open_info()).hit_ratio(), None);
    }

    #[test]
    fn history_keeps_the_last_120_intervals() {
        let mut view = View::new(open_info());
        let one = interval(0);
        for index in 0..130 {
            let i = IntervalRecord { index, ..one.clone() };
            view.add(&i, &i);
        }
        assert_eq!(view.p99_history.len(), HISTORY);
        assert_eq!(view.total.counts.completed, 1300);
        assert!(view.total.timeline.is_empty(), "the cumulative recorder must not grow per tick");
    }

    #[test]
    fn screen_shows_the_run() {
        let view = view_of(open_info(), 3);
        let screen = render(&view, 100, 30);
        let text = screen.join("\n");
        assert!(text.contains(URL), "{text}");
        assert!(line_with(&screen, "rate").contains("10/s of 10/s target"), "{text}");
        assert!(line_with(&screen, "rate").contains("ok 8/s"), "{text}");
        assert!(line_with(&screen, "3s / 30s").contains("27s left"), "{text}");
        assert!(line_with(&screen, "p99").contains("max"), "{text}");
        assert!(line_with(&screen, "whole run").contains("ms"), "{text}");
        assert!(line_with(&screen, "200 ").contains("24"), "{text}");
        assert!(line_with(&screen, "503 ").contains(" 3 "), "{text}");
        assert!(line_with(&screen, "reset").contains(" 3 "), "{text}");
        assert!(line_with(&screen, "hit ratio").contains("66.7%"), "{text}");
        assert!(line_with(&screen, "origin-1").contains("77.8%"), "{text}");
        assert!(line_with(&screen, "barrage CPU").contains("42%"), "{text}");
        assert!(!text.contains("streams"), "no stream figures without streams: {text}");
        assert!(text.contains(FOOTER), "{text}");
    }

    /// The run's streams (the most at once, the server's limit) beside the CPU.
    #[test]
    fn screen_shows_the_streams_of_the_run() {
        let mut view = view_of(open_info(), 2);
        let mut i = interval(2);
        (i.recorder.counts.streams_max, i.recorder.counts.stream_cap) = (100, 100);
        view.add(&i, &i);
        let screen = render(&view, 100, 30);
        let line = line_with(&screen, "barrage CPU");
        assert!(line.contains("streams 100 (server allows 100)"), "{line}");
    }

    #[test]
    fn stopping_changes_the_footer() {
        let mut view = view_of(open_info(), 1);
        view.stopping = true;
        let text = render(&view, 100, 30).join("\n");
        assert!(text.contains("stopping"), "{text}");
        assert!(!text.contains(FOOTER), "{text}");
    }

    #[test]
    fn begin_shows_the_label_and_resets_the_figures() {
        let mut view = view_of(open_info(), 3);
        let label = "level 2/4: 16 workers";
        view.begin(RunInfo { label: Some(label.into()), concurrency: Some(16), ..RunInfo::default() });
        assert_eq!((view.elapsed, view.total.counts.completed, view.p99_history.len()), (Duration::ZERO, 0, 0));
        assert_eq!((view.last, view.run, view.cpu_percent), (None, None, None));
        let i = interval(0);
        view.add(&i, &i);
        let screen = render(&view, 100, 30);
        let text = screen.join("\n");
        assert!(screen[0].contains(&format!(" barrage run · {label} ")), "{text}");
        assert!(line_with(&screen, "closed loop").contains("16 workers  ·  1s"), "{text}");
        assert!(line_with(&screen, "200 ").contains(" 8 "), "only this run's responses: {text}");
        // A small terminal keeps the label too.
        let small = render(&view, 40, 6);
        assert!(small[0].starts_with(&format!("{label} · 1s")), "{}", small.join("\n"));
        // A lone run has the plain title.
        let lone = render(&view_of(open_info(), 1), 100, 30);
        assert!(lone[0].starts_with("┌ barrage run ──"), "{}", lone[0]);
    }

    #[test]
    fn tiny_and_odd_terminals_render_without_panic() {
        let empty = View::new(RunInfo::default());
        let full = view_of(RunInfo { urls: vec![URL.into(); 5], concurrency: Some(4), ..RunInfo::default() }, 3);
        for view in [&empty, &full] {
            for (w, h) in [(20, 5), (1, 1), (59, 19), (60, 20), (200, 20), (20, 60), (61, 21)] {
                render(view, w, h);
            }
        }
        let small = render(&full, 20, 5).join("\n");
        assert!(small.contains("p99"), "{small}");
    }

    fn key(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, modifiers)
    }

    #[test]
    fn keys_map_to_actions() {
        let none = KeyModifiers::NONE;
        let ctrl_c = key(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(key_action(key(KeyCode::Char('q'), none), false), KeyAction::Stop);
        assert_eq!(key_action(key(KeyCode::Esc, none), false), KeyAction::Stop);
        assert_eq!(key_action(ctrl_c, false), KeyAction::Stop);
        // A second Ctrl-C quits at once, as a second SIGINT does without the view.
        assert_eq!(key_action(ctrl_c, true), KeyAction::Quit);
        assert_eq!(key_action(key(KeyCode::Char('q'), none), true), KeyAction::Stop);
        assert_eq!(key_action(key(KeyCode::Char('c'), none), false), KeyAction::None);
        assert_eq!(key_action(key(KeyCode::Char('x'), none), false), KeyAction::None);
        let release = KeyEvent { kind: KeyEventKind::Release, ..key(KeyCode::Char('q'), none) };
        assert_eq!(key_action(release, false), KeyAction::None);
    }
}
