//! The HTTP/2 or HTTP/3 connection a group of slots shares (`--streams N`: N slots to a
//! connection).
//!
//! Each slot sends one request at a time, as without streams; what they share is the
//! connection to each endpoint. The first slot that needs one opens it, and its request
//! carries the DNS, connect and TLS phases; the others that need it meanwhile wait for that
//! one opening (their requests have no connect phase), so a connection that ended is
//! opened again once, not once per slot. If the opening fails, the requests that waited
//! for it fail the same way.

use super::Conn;
use crate::conn::{Connector, Endpoint, Failure};
use crate::timing::Phases;
use barrage_metrics::ErrorKind;
use std::cell::{Cell, RefCell};
use tokio::sync::Notify;

/// The connections of one group of slots, one per endpoint.
#[derive(Default)]
pub(crate) struct SharedConns {
    links: RefCell<Vec<Link>>,
    /// Wakes the slots waiting for an opening when it ends, either way.
    opened: Notify,
    /// Openings so far, numbering them.
    attempts: Cell<u64>,
    /// The last opening that failed: its number, and how (for the slots that waited).
    failed: RefCell<Option<(u64, ErrorKind, String)>>,
}

/// The group's connection to one endpoint.
#[derive(Default)]
enum Link {
    #[default]
    None,
    /// A slot is opening it: opening number n.
    Opening(u64),
    /// A handle to it (HTTP/2 or HTTP/3).
    Open(Conn),
}

impl SharedConns {
    /// Whether `held` is a usable handle to the group's connection to endpoint `index`:
    /// a slot keeps its handle from one request to the next while it is.
    pub(crate) fn holds(&self, index: usize, held: &mut Conn) -> bool {
        let current = matches!(self.links.borrow().get(index), Some(Link::Open(c)) if held.same(c));
        current && held.usable()
    }

    /// A handle to the group's connection to endpoint `index` (`ep`), opened when there is
    /// none, it ended, it had a GOAWAY, or it is `lost`: the one a request of the caller's
    /// was just refused on. Returns whether this call opened it (its phases are then in
    /// `phases`). A connection on which the server chose HTTP/1.1 is handed to the caller
    /// alone, for it to count and fail: it cannot carry streams.
    pub(crate) async fn conn(
        &self,
        connector: &Connector,
        (index, ep): (usize, &Endpoint),
        phases: &Phases,
        lost: Option<&Conn>,
    ) -> Result<(Conn, bool), Failure> {
        loop {
            let waiting_for = {
                let mut links = self.links.borrow_mut();
                if links.len() <= index {
                    links.resize_with(index + 1, Link::default);
                }
                let link = &mut links[index];
                if let Link::Open(c) = link {
                    let lost = lost.is_some_and(|l| l.same(c));
                    if let (false, true, Some(handle)) = (lost, c.usable(), c.share()) {
                        return Ok((handle, false));
                    }
                }
                match link {
                    Link::Opening(n) => Some(*n),
                    link => {
                        let n = self.attempts.get() + 1;
                        self.attempts.set(n);
                        *link = Link::Opening(n);
                        None
                    }
                }
            };
            let Some(n) = waiting_for else { return self.open(connector, (index, ep), phases).await };
            // Made before any await, so the opening's end cannot be missed.
            self.opened.notified().await;
            if let Some((failed, kind, why)) = &*self.failed.borrow() {
                if *failed == n {
                    return Err(Failure::new(*kind, why.clone()));
                }
            }
        }
    }

    /// Opens the connection the caller marked as opening, and hands it to the group.
    async fn open(
        &self,
        connector: &Connector,
        (index, ep): (usize, &Endpoint),
        phases: &Phases,
    ) -> Result<(Conn, bool), Failure> {
        // If the caller's request is cancelled (its timeout) while opening, the others
        // are told, and one of them opens instead.
        let mut guard = Opening { shared: self, index, done: false };
        let opened = Conn::open(connector, ep, phases).await;
        guard.done = true;
        let n = self.attempts.get();
        let result = match opened.map(|c| (c.share(), c)) {
            Ok((Some(handle), c)) => {
                self.links.borrow_mut()[index] = Link::Open(handle);
                Ok((c, true))
            }
            Ok((None, other)) => {
                self.links.borrow_mut()[index] = Link::None;
                let why = "the server did not agree to HTTP/2 (ALPN chose HTTP/1.1): --streams needs HTTP/2";
                *self.failed.borrow_mut() = Some((n, ErrorKind::Protocol, why.into()));
                Ok((other, true))
            }
            Err(f) => {
                self.links.borrow_mut()[index] = Link::None;
                *self.failed.borrow_mut() = Some((n, f.kind, f.message()));
                Err(f)
            }
        };
        self.opened.notify_waiters();
        result
    }
}

/// An opening in progress: if it is dropped before it ends (its request timed out or the
/// run stopped), the link is free again and the waiting slots are woken.
struct Opening<'a> {
    shared: &'a SharedConns,
    index: usize,
    done: bool,
}

impl Drop for Opening<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.shared.links.borrow_mut()[self.index] = Link::None;
            self.shared.opened.notify_waiters();
        }
    }
}
