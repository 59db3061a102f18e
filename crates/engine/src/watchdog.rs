//! A slot's bounds on time: `--timeout` on each attempt, from its start, and
//! `--connect-timeout` on each opening of a connection (DNS, connect, TLS), from when it
//! began. One timer per slot keeps both, armed lazily: a timer per attempt (and another per
//! opening) cost two registrations and two removals in tokio's timer wheel per request,
//! under its lock: 8 % of the client's own CPU time on a new connection per request, 1 %
//! with this.
//!
//! The timer is never later than any bound now running, and moves only when it fires: then
//! to the nearest running bound, or to the shortest bound from now, before which no attempt
//! or opening that begins later can end. So it fires about once per shortest bound per busy
//! slot, and every bound still fires on time, to the timer wheel's millisecond.

use crate::timing::Phases;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};
use tokio::time::Sleep;

/// The bound that passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Expired {
    /// The attempt's: `--timeout`.
    Attempt,
    /// The opening's of a connection: `--connect-timeout`.
    Opening,
}

pin_project_lite::pin_project! {
    /// An attempt under its bounds: [`Watchdog::bound`].
    pub(crate) struct Bound<'a, F> {
        dog: &'a mut Watchdog,
        due: Instant,
        phases: &'a Phases,
        #[pin]
        attempt: F,
    }
}

impl<F: Future> Future for Bound<'_, F> {
    type Output = Result<F::Output, Expired>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Poll::Ready(out) = this.attempt.poll(cx) {
            return Poll::Ready(Ok(out));
        }
        let dog = this.dog;
        while dog.fired(cx) {
            let next = match dog.passed(*this.due, this.phases.opening_since(), Instant::now()) {
                Ok(next) => next,
                Err(expired) => return Poll::Ready(Err(expired)),
            };
            dog.sleep.as_mut().reset(next.into());
            dog.waker = None;
        }
        Poll::Pending
    }
}

/// One slot's timer for its attempts' bounds.
pub(crate) struct Watchdog {
    sleep: Pin<Box<Sleep>>,
    /// The waker `sleep` was last polled with, since it was last set: while a poll's waker
    /// is the same, the timer will wake it, and whether it fired is a load, not a poll.
    waker: Option<Waker>,
    timeout: Duration,
    connect_timeout: Duration,
}

impl Watchdog {
    /// A watchdog for attempts bounded by `timeout`, their openings by `connect_timeout`.
    pub(crate) fn new(timeout: Duration, connect_timeout: Duration) -> Watchdog {
        let first = crate::timing::instant_at(Instant::now(), timeout.min(connect_timeout));
        Watchdog { sleep: Box::pin(tokio::time::sleep_until(first.into())), waker: None, timeout, connect_timeout }
    }

    /// Runs `attempt`, which began at `began` and fills `phases`, until it ends or one of
    /// its bounds passes (then it is dropped, cancelled).
    ///
    /// A future of its own rather than an `async fn`: an `async fn` keeps its argument and
    /// the pinned copy of it side by side, which doubled the attempt in every future above
    /// it, and each of those is copied whole into its caller's once a request.
    pub(crate) fn bound<'a, F: Future>(&'a mut self, began: Instant, phases: &'a Phases, attempt: F) -> Bound<'a, F> {
        let due = crate::timing::instant_at(began, self.timeout);
        Bound { dog: self, due, phases, attempt }
    }

    /// Whether the timer fired. An attempt is polled several times a request (its
    /// connection's readiness, its stream's wake-ups), and polling the timer registers the
    /// waker again each time (5 % of the client's time over HTTP/2): it is polled only when
    /// the waker it has is not this poll's. Polled outside the task's budget, so that a
    /// poll always registers the waker: a timer refused for want of budget would keep no
    /// waker, and a stalled attempt would never learn that it fired.
    fn fired(&mut self, cx: &mut Context<'_>) -> bool {
        if self.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            return self.sleep.is_elapsed();
        }
        if Pin::new(&mut tokio::task::unconstrained(self.sleep.as_mut())).poll(cx).is_ready() {
            return true;
        }
        self.waker = Some(cx.waker().clone());
        false
    }

    /// At `now`, with the attempt due by `due` and a connection opening since `opening`:
    /// the bound that passed (the opening's first, as it is the nearer cause), or when to
    /// look again.
    fn passed(&self, due: Instant, opening: Option<Instant>, now: Instant) -> Result<Instant, Expired> {
        let opening_due = opening.map(|since| crate::timing::instant_at(since, self.connect_timeout));
        if opening_due.is_some_and(|d| now >= d) {
            return Err(Expired::Opening);
        }
        if now >= due {
            return Err(Expired::Attempt);
        }
        let shortest = crate::timing::instant_at(now, self.timeout.min(self.connect_timeout));
        Ok(opening_due.into_iter().chain([due, shortest]).min().expect("three instants"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_opening_s_bound_comes_first_and_the_next_look_is_the_nearest_bound() {
        let dog = |timeout, connect| Watchdog {
            sleep: Box::pin(tokio::time::sleep(Duration::ZERO)),
            waker: None,
            timeout: Duration::from_secs(timeout),
            connect_timeout: Duration::from_secs(connect),
        };
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        let _guard = rt.enter();
        // (timeout, connect timeout, due, opening since, now) -> passed
        let table = [
            ((30, 10), at(30), None, at(5), Ok(at(15))),
            ((30, 10), at(30), Some(at(1)), at(5), Ok(at(11))),
            ((30, 10), at(30), Some(at(1)), at(11), Err(Expired::Opening)),
            ((30, 10), at(30), None, at(30), Err(Expired::Attempt)),
            // Both passed: the opening was the cause.
            ((10, 10), at(10), Some(at(0)), at(10), Err(Expired::Opening)),
            ((10, 30), at(10), Some(at(2)), at(4), Ok(at(10))),
            ((10, 30), at(10), None, at(9), Ok(at(10))),
        ];
        for (i, ((timeout, connect), due, opening, now, want)) in table.into_iter().enumerate() {
            assert_eq!(dog(timeout, connect).passed(due, opening, now), want, "row {i}");
        }
    }
}
