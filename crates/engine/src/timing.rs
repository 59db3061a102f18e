//! The first floor: how a request is timed, the same for HTTP and key-value commands. The
//! phases an attempt fills as it goes, offsets from the run's start turned into instants, and
//! a timer to the microsecond. It names no other engine module, so every floor above may
//! use it.

use barrage_metrics::Phase;
use std::cell::Cell;
use std::time::{Duration, Instant};
use tokio::time::Instant as TokioInstant;

/// The timing of one attempt, filled as it goes: each phase's duration (`None` where the
/// phase did not happen), and while a connection is being opened, when that began (its
/// connect timeout runs from then). Cells, so that the slot's [`Watchdog`] reads it while
/// the attempt fills it.
#[derive(Default)]
pub struct Phases {
    durations: [Cell<Option<Duration>>; barrage_metrics::sample::PHASE_COUNT],
    opening: Cell<Option<Instant>>,
}

impl Phases {
    /// Records a phase.
    pub fn set(&self, p: Phase, d: Duration) {
        self.durations[p as usize].set(Some(d));
    }

    /// A phase's duration, if it happened.
    pub fn get(&self, p: Phase) -> Option<Duration> {
        self.durations[p as usize].get()
    }

    /// Every phase's duration, as a sample keeps them.
    pub fn values(&self) -> [Option<Duration>; barrage_metrics::sample::PHASE_COUNT] {
        std::array::from_fn(|i| self.durations[i].get())
    }

    /// Marks a connection's opening (DNS, connect, TLS) as begun at `at`, or, with `None`,
    /// as over.
    pub(crate) fn opening(&self, at: Option<Instant>) {
        self.opening.set(at);
    }

    /// The send, wait and receive phases of an exchange (an HTTP request, a key-value
    /// command) that began going out at `sent`, whose answer's first byte came at `head` and
    /// its last at `end`. `written`: when its last byte was written, where the protocol can
    /// tell; the send phase then runs to it, and waiting and receiving start no earlier. One
    /// arithmetic, so the phases mean the same in every protocol's figures.
    #[inline]
    pub(crate) fn exchanged(&self, sent: Duration, written: Option<Duration>, head: Duration, end: Duration) {
        let written = written.map(|w| w.max(sent));
        if let Some(w) = written {
            self.set(Phase::Send, w - sent);
        }
        self.set(Phase::Wait, head.saturating_sub(written.unwrap_or(sent)));
        self.set(Phase::Receive, end.saturating_sub(written.map_or(head, |w| w.max(head))));
    }

    /// When the opening of a connection under way began.
    pub(crate) fn opening_since(&self) -> Option<Instant> {
        self.opening.get()
    }
}

/// Far enough to be never, near enough to add to any clock reading.
const FAR_FUTURE: Duration = Duration::from_secs(100 * 365 * 86_400);

/// `start + offset`, or a far future when that cannot be represented: an offset from the
/// schedule of a slow `-n` run, or a think time, must not overflow the clock (a panic in
/// an engine thread).
pub(crate) fn instant_at(start: Instant, offset: Duration) -> Instant {
    start.checked_add(offset).or_else(|| start.checked_add(FAR_FUTURE)).unwrap_or(start)
}

/// Sleeps to the microsecond. tokio's timer wheel rounds deadlines up to whole
/// milliseconds, which would add up to a millisecond of schedule lag to every paced request;
/// a timerfd wakes the runtime when the deadline passes, without blocking the thread.
pub(crate) struct PreciseTimer {
    fd: Option<tokio::io::unix::AsyncFd<timerfd::TimerFd>>,
}

impl PreciseTimer {
    pub(crate) fn new() -> Self {
        let fd = timerfd::TimerFd::new_custom(timerfd::ClockId::Monotonic, true, true).ok().and_then(|t| {
            // SAFETY: the TimerFd owns its descriptor and keeps it open, unchanged, until it
            // is dropped together with the AsyncFd that owns it.
            unsafe { tokio::io::unix::AsyncFd::register_with_interest(t, tokio::io::Interest::READABLE) }.ok()
        });
        PreciseTimer { fd }
    }

    pub(crate) async fn sleep_until(&mut self, at: Instant) {
        let now = Instant::now();
        if at <= now {
            return;
        }
        let Some(fd) = &mut self.fd else {
            // No timerfd (not Linux, or out of descriptors): millisecond precision it is.
            return tokio::time::sleep_until(TokioInstant::from_std(at)).await;
        };
        fd.get_mut().set_state(timerfd::TimerState::Oneshot(at - now), timerfd::SetTimeFlags::Default);
        loop {
            let Ok(mut guard) = fd.readable().await else { return };
            let fired = guard.get_inner().read() > 0;
            guard.clear_ready();
            if fired {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exchanged(sent: u64, written: Option<u64>, head: u64, end: u64) -> [Option<u64>; 3] {
        let us = Duration::from_micros;
        let phases = Phases::default();
        phases.exchanged(us(sent), written.map(us), us(head), us(end));
        use barrage_metrics::Phase::{Receive, Send as Sending, Wait};
        [Sending, Wait, Receive].map(|p| phases.get(p).map(|d| d.as_micros() as u64))
    }

    #[test]
    fn an_exchange_s_phases_split_its_time() {
        // Written, then waited for, then received.
        assert_eq!(exchanged(10, Some(15), 40, 50), [Some(5), Some(25), Some(10)]);
        // When it was written is not known (HTTP/3): waiting from when it began.
        assert_eq!(exchanged(10, None, 40, 50), [None, Some(30), Some(10)]);
        // Written as it began (a stamp before it, from the connection's turn): no send time.
        assert_eq!(exchanged(10, Some(8), 40, 50), [Some(0), Some(30), Some(10)]);
        // Its last byte written after the answer began (a key-value reply read in the same
        // turn): no wait, receiving from then.
        assert_eq!(exchanged(10, Some(45), 40, 50), [Some(35), Some(0), Some(5)]);
    }

    #[test]
    fn offsets_past_any_clock_saturate() {
        let now = Instant::now();
        assert_eq!(instant_at(now, Duration::from_secs(1)), now + Duration::from_secs(1));
        assert_eq!(instant_at(now, Duration::MAX), now + FAR_FUTURE);
        assert_eq!(instant_at(now, Duration::from_secs(9_300_000_000_000_000_000)), now + FAR_FUTURE);
    }
}
