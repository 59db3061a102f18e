//! The in-memory object store behind PUT, POST, GET and DELETE on arbitrary paths.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use bytes::Bytes;

/// The most bytes all stored bodies may hold together: 256 MiB.
pub(crate) const STORE_CAP: usize = 256 << 20;

/// Bodies stored by path. One mutex is enough: it is held for a hash-map operation only,
/// and the store is for functional tests, not the fast path (`/bytes`, `/obj`).
#[derive(Debug, Default)]
pub(crate) struct Store {
    inner: Mutex<Inner>,
    /// How many bodies are stored, kept beside the map so that lookups in an empty store
    /// (the usual case: `GET /` in a benchmark) skip the lock.
    entries: AtomicUsize,
}

#[derive(Debug, Default)]
struct Inner {
    /// Each path's body and its generation: how many times it was stored.
    bodies: HashMap<String, (Bytes, u64)>,
    total: usize,
}

/// The store would exceed [`STORE_CAP`].
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Full;

impl Store {
    /// The body stored under `path`, if any.
    pub(crate) fn get(&self, path: &str) -> Option<Bytes> {
        self.get_generation(path).map(|(body, _)| body)
    }

    /// The body stored under `path` and its generation (1 for the first store, then one
    /// more each time it is replaced), if any.
    pub(crate) fn get_generation(&self, path: &str) -> Option<(Bytes, u64)> {
        // Acquire pairs with the Release in `put`: a GET that follows a completed PUT
        // (even on another connection and thread) sees a non-zero count.
        if self.entries.load(Ordering::Acquire) == 0 {
            return None;
        }
        self.lock().bodies.get(path).cloned()
    }

    /// Stores `body` under `path`, replacing what was there, unless the total would pass the cap.
    pub(crate) fn put(&self, path: &str, body: Bytes) -> Result<(), Full> {
        let mut inner = self.lock();
        let (replaced, generation) = inner.bodies.get(path).map_or((0, 0), |(b, g)| (b.len(), *g));
        let total = inner.total - replaced + body.len();
        if total > STORE_CAP {
            return Err(Full);
        }
        inner.total = total;
        inner.bodies.insert(path.to_string(), (body, generation + 1));
        self.entries.store(inner.bodies.len(), Ordering::Release);
        Ok(())
    }

    /// Removes the body under `path`; false when there was none.
    pub(crate) fn delete(&self, path: &str) -> bool {
        let mut inner = self.lock();
        match inner.bodies.remove(path) {
            Some((body, _)) => {
                inner.total -= body.len();
                self.entries.store(inner.bodies.len(), Ordering::Release);
                true
            }
            None => false,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave the map half-updated (each
        // operation is one insert or remove), so a poisoned lock is still usable.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_get_delete_and_cap() {
        let store = Store::default();
        assert_eq!(store.get("/a"), None);
        store.put("/a", Bytes::from_static(b"one")).unwrap();
        store.put("/a", Bytes::from_static(b"two!")).unwrap();
        assert_eq!(store.get("/a").unwrap(), "two!");
        assert_eq!(store.get_generation("/a").unwrap().1, 2, "stored twice");
        assert_eq!(store.lock().total, 4);
        let big = Bytes::from(vec![0u8; STORE_CAP - 4]);
        store.put("/big", big).unwrap();
        assert_eq!(store.put("/b", Bytes::from_static(b"x")), Err(Full));
        // Replacing counts only the difference.
        store.put("/a", Bytes::from_static(b"3333")).unwrap();
        assert!(store.delete("/a"));
        assert!(!store.delete("/a"));
        store.put("/b", Bytes::from_static(b"x")).unwrap();
    }
}
