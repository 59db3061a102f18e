//! The object store behind PUT, POST, GET and DELETE on arbitrary paths: in memory, or
//! with [`ServeConfig::store_dir`](crate::ServeConfig::store_dir) in a directory several
//! origins (processes) share, so a PUT through a balancer is found by a GET that lands on
//! another origin.
//!
//! In a directory each path is one file named by its FNV-1a hash (`0123456789abcdef`, then
//! `-1`, `-2`… for paths whose hashes collide), holding a header line with the path's
//! generation and length, the path itself (compared on every read: a collision never
//! answers another path's body) and the body. Files are written under a temporary name and
//! renamed into place, so a reader in any process sees a whole body or none; writers (PUT,
//! DELETE) of all processes take turns on an `flock` of `.lock`, so generations count every
//! store exactly once.

use std::collections::HashMap;
use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use bytes::Bytes;

use crate::ServeError;

/// The most bytes all stored bodies may hold together: 256 MiB. In a shared directory,
/// what the directory held when the origin started plus what this origin added since.
pub(crate) const STORE_CAP: usize = 256 << 20;

/// Bodies stored by path, in memory or in a shared directory.
#[derive(Debug)]
pub(crate) enum Store {
    /// This process's own.
    Memory(Memory),
    /// Shared with every origin started with the same directory.
    Dir(DirStore),
}

impl Default for Store {
    fn default() -> Self {
        Store::Memory(Memory::default())
    }
}

/// Why a body was not stored.
#[derive(Debug)]
pub(crate) enum PutError {
    /// The store would exceed [`STORE_CAP`].
    Full,
    /// The directory failed.
    Io(std::io::Error),
}

impl PartialEq for PutError {
    fn eq(&self, other: &Self) -> bool {
        matches!((self, other), (PutError::Full, PutError::Full))
    }
}

impl Store {
    /// In memory, or in `dir` (created for this user alone if missing; refused when it is
    /// a link, someone else's or writable by others, who could plant answers).
    pub(crate) fn open(dir: Option<&Path>) -> Result<Store, ServeError> {
        match dir {
            None => Ok(Store::default()),
            Some(dir) => DirStore::open(dir).map(Store::Dir),
        }
    }

    /// The body stored under `path`, if any (an unreadable directory counts as none).
    pub(crate) fn get(&self, path: &str) -> Option<Bytes> {
        self.get_generation(path).ok().flatten().map(|(body, _)| body)
    }

    /// The body stored under `path` and its generation (1 for the first store, then one
    /// more each time it is replaced), if any.
    pub(crate) fn get_generation(&self, path: &str) -> std::io::Result<Option<(Bytes, u64)>> {
        match self {
            Store::Memory(m) => Ok(m.get_generation(path)),
            Store::Dir(d) => d.get(path).map(|found| found.map(|(_, e)| (e.body, e.generation))),
        }
    }

    /// Stores `body` under `path`, replacing what was there, unless the total would pass the cap.
    pub(crate) fn put(&self, path: &str, body: Bytes) -> Result<(), PutError> {
        match self {
            Store::Memory(m) => m.put(path, body),
            Store::Dir(d) => d.put(path, &body),
        }
    }

    /// Removes the body under `path`; false when there was none.
    pub(crate) fn delete(&self, path: &str) -> std::io::Result<bool> {
        match self {
            Store::Memory(m) => Ok(m.delete(path)),
            Store::Dir(d) => d.delete(path),
        }
    }
}

/// Bodies in memory. One mutex is enough: it is held for a hash-map operation only,
/// and the store is for functional tests, not the fast path (`/bytes`, `/obj`).
#[derive(Debug, Default)]
pub(crate) struct Memory {
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

impl Memory {
    fn get_generation(&self, path: &str) -> Option<(Bytes, u64)> {
        // Acquire pairs with the Release in `put`: a GET that follows a completed PUT
        // (even on another connection and thread) sees a non-zero count.
        if self.entries.load(Ordering::Acquire) == 0 {
            return None;
        }
        self.lock().bodies.get(path).cloned()
    }

    fn put(&self, path: &str, body: Bytes) -> Result<(), PutError> {
        let mut inner = self.lock();
        let (replaced, generation) = inner.bodies.get(path).map_or((0, 0), |(b, g)| (b.len(), *g));
        let total = inner.total - replaced + body.len();
        if total > STORE_CAP {
            return Err(PutError::Full);
        }
        inner.total = total;
        inner.bodies.insert(path.to_string(), (body, generation + 1));
        self.entries.store(inner.bodies.len(), Ordering::Release);
        Ok(())
    }

    fn delete(&self, path: &str) -> bool {
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

/// Paths whose hashes collide get the next of these slots; more collisions than that on
/// one 64-bit hash do not happen by chance.
const SLOTS: usize = 16;
/// The first line of every store file.
const MAGIC: &[u8] = b"barrage-store 1\n";
/// The longest path kept (hyper's URI limit is far below).
const MAX_PATH: usize = 64 << 10;

/// A shared directory of bodies.
#[derive(Debug)]
pub(crate) struct DirStore {
    dir: PathBuf,
    /// `.lock`, taken with `flock` by writers of every process.
    lock: File,
    /// Body bytes counted against [`STORE_CAP`]: what the directory held at start, plus
    /// this origin's stores, minus its deletes.
    held: AtomicU64,
    /// Temporary names, unique in this process.
    tmp: AtomicU64,
}

/// One stored body, as read from its file.
struct Entry {
    generation: u64,
    body: Bytes,
}

/// An `flock` held until drop.
struct Locked<'a>(&'a File);

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        // SAFETY: flock on a descriptor this file owns.
        unsafe { libc::flock(self.0.as_raw_fd(), libc::LOCK_UN) };
    }
}

impl DirStore {
    fn open(dir: &Path) -> Result<DirStore, ServeError> {
        let fail = |reason: String| ServeError::Store { path: dir.to_path_buf(), reason };
        // Several origins may create it at once: an existing directory is fine.
        if let Err(e) = DirBuilder::new().recursive(true).mode(0o700).create(dir) {
            return Err(fail(e.to_string()));
        }
        let meta = std::fs::symlink_metadata(dir).map_err(|e| fail(e.to_string()))?;
        // SAFETY: geteuid has no preconditions.
        let me = unsafe { libc::geteuid() };
        if meta.file_type().is_symlink() || !meta.is_dir() {
            return Err(fail("is not a directory (a symbolic link is refused)".into()));
        }
        if meta.uid() != me {
            return Err(fail(format!("belongs to user {}, not to you ({me})", meta.uid())));
        }
        if meta.mode() & 0o022 != 0 {
            return Err(fail(format!(
                "is writable by other users (mode {:o}), who could plant answers: chmod go-w it or use another",
                meta.mode() & 0o777
            )));
        }
        let lock = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(dir.join(".lock"))
            .map_err(|e| fail(format!(".lock: {e}")))?;
        let mut held = 0;
        for entry in std::fs::read_dir(dir).map_err(|e| fail(e.to_string()))? {
            let entry = entry.map_err(|e| fail(e.to_string()))?;
            if entry.file_name().to_str().is_some_and(is_slot_name) {
                held += entry.metadata().map_err(|e| fail(e.to_string()))?.len();
            }
        }
        Ok(DirStore { dir: dir.to_path_buf(), lock, held: AtomicU64::new(held), tmp: AtomicU64::new(0) })
    }

    fn locked(&self) -> std::io::Result<Locked<'_>> {
        // SAFETY: flock on a descriptor this store owns; it blocks until the lock is ours.
        if unsafe { libc::flock(self.lock.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Locked(&self.lock))
    }

    fn slot(&self, path: &str, i: usize) -> PathBuf {
        let hash = crate::handler::fnv1a(path.as_bytes());
        self.dir.join(if i == 0 { format!("{hash:016x}") } else { format!("{hash:016x}-{i}") })
    }

    /// The slot holding `path` and its entry, if any. Slots are filled in order and kept
    /// without gaps (see `delete`), so the first empty slot ends the search.
    fn get(&self, path: &str) -> std::io::Result<Option<(usize, Entry)>> {
        for i in 0..SLOTS {
            match read_entry(&self.slot(path, i))? {
                None => return Ok(None),
                Some((p, entry)) if p == path => return Ok(Some((i, entry))),
                Some(_) => {}
            }
        }
        Ok(None)
    }

    fn put(&self, path: &str, body: &[u8]) -> Result<(), PutError> {
        let _locked = self.locked().map_err(PutError::Io)?;
        let mut free = None;
        let mut existing = None;
        for i in 0..SLOTS {
            match read_entry(&self.slot(path, i)).map_err(PutError::Io)? {
                None => {
                    free = Some(i);
                    break;
                }
                Some((p, entry)) if p == path => {
                    existing = Some((i, entry));
                    break;
                }
                Some(_) => {}
            }
        }
        let (slot, generation, replaced) = match (existing, free) {
            (Some((i, e)), _) => (i, e.generation + 1, e.body.len() as u64),
            (None, Some(i)) => (i, 1, 0),
            (None, None) => return Err(PutError::Io(std::io::Error::other("too many paths share one hash"))),
        };
        let held = self.held.load(Ordering::Relaxed);
        let total = held - replaced.min(held) + body.len() as u64;
        if total > STORE_CAP as u64 {
            return Err(PutError::Full);
        }
        let mut contents = Vec::with_capacity(MAGIC.len() + 32 + path.len() + body.len());
        contents.extend_from_slice(MAGIC);
        contents.extend_from_slice(format!("{generation} {}\n", path.len()).as_bytes());
        contents.extend_from_slice(path.as_bytes());
        contents.push(b'\n');
        contents.extend_from_slice(body);
        let tmp = self.dir.join(format!(".{}.{}.tmp", std::process::id(), self.tmp.fetch_add(1, Ordering::Relaxed)));
        let written = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .and_then(|mut f| f.write_all(&contents))
            .and_then(|()| std::fs::rename(&tmp, self.slot(path, slot)));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(PutError::Io(e));
        }
        self.held.store(total, Ordering::Relaxed);
        Ok(())
    }

    fn delete(&self, path: &str) -> std::io::Result<bool> {
        let _locked = self.locked()?;
        let Some((i, entry)) = self.get(path)? else { return Ok(false) };
        // The last slot in use moves into the gap: slots stay without gaps.
        let last = (i + 1..SLOTS).take_while(|&j| self.slot(path, j).exists()).last();
        match last {
            Some(j) => std::fs::rename(self.slot(path, j), self.slot(path, i))?,
            None => std::fs::remove_file(self.slot(path, i))?,
        }
        let len = entry.body.len() as u64;
        let _ = self.held.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |h| Some(h.saturating_sub(len)));
        Ok(true)
    }
}

/// A slot's file name: 16 hex digits, maybe `-N`.
fn is_slot_name(name: &str) -> bool {
    let hash = name.split_once('-').map_or(name, |(h, _)| h);
    hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The path and entry in a store file; `None` when there is no such file. A link (which
/// no origin makes) or a file that is not a store file counts as a path of its own that
/// matches nothing.
fn read_entry(file: &Path) -> std::io::Result<Option<(String, Entry)>> {
    let f = OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(file);
    let f = match f {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Ok(Some((String::new(), Entry::none()))),
        Err(e) => return Err(e),
    };
    let mut data = Vec::new();
    f.take((STORE_CAP + MAX_PATH + 64) as u64).read_to_end(&mut data)?;
    Ok(Some(parse_entry(&data).unwrap_or_else(|| (String::new(), Entry::none()))))
}

impl Entry {
    fn none() -> Entry {
        Entry { generation: 0, body: Bytes::new() }
    }
}

fn parse_entry(data: &[u8]) -> Option<(String, Entry)> {
    let rest = data.strip_prefix(MAGIC)?;
    let nl = rest.iter().position(|&b| b == b'\n')?;
    let (generation, len) = std::str::from_utf8(&rest[..nl]).ok()?.split_once(' ')?;
    let (generation, len): (u64, usize) = (generation.parse().ok()?, len.parse().ok()?);
    let rest = &rest[nl + 1..];
    let path = std::str::from_utf8(rest.get(..len)?).ok()?.to_string();
    let body = rest.get(len..)?.strip_prefix(b"\n")?;
    Some((path, Entry { generation, body: Bytes::copy_from_slice(body) }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_get_delete_and_cap() {
        let store = Store::default();
        assert_eq!(store.get("/a"), None);
        let Store::Memory(mem) = &store else { unreachable!() };
        store.put("/a", Bytes::from_static(b"one")).unwrap();
        store.put("/a", Bytes::from_static(b"two!")).unwrap();
        assert_eq!(store.get("/a").unwrap(), "two!");
        assert_eq!(store.get_generation("/a").unwrap().unwrap().1, 2, "stored twice");
        assert_eq!(mem.lock().total, 4);
        let big = Bytes::from(vec![0u8; STORE_CAP - 4]);
        store.put("/big", big).unwrap();
        assert_eq!(store.put("/b", Bytes::from_static(b"x")), Err(PutError::Full));
        // Replacing counts only the difference.
        store.put("/a", Bytes::from_static(b"3333")).unwrap();
        assert!(store.delete("/a").unwrap());
        assert!(!store.delete("/a").unwrap());
        store.put("/b", Bytes::from_static(b"x")).unwrap();
    }

    #[test]
    fn a_directory_is_shared_by_two_stores_and_keeps_generations() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("store");
        let (a, b) = (Store::open(Some(&dir)).unwrap(), Store::open(Some(&dir)).unwrap());
        a.put("/kv/k1", Bytes::from_static(b"one")).unwrap();
        assert_eq!(b.get_generation("/kv/k1").unwrap(), Some((Bytes::from_static(b"one"), 1)));
        b.put("/kv/k1", Bytes::from_static(b"two")).unwrap();
        assert_eq!(a.get_generation("/kv/k1").unwrap(), Some((Bytes::from_static(b"two"), 2)));
        assert_eq!(a.get("/kv/k2"), None);
        assert!(b.delete("/kv/k1").unwrap());
        assert!(!a.delete("/kv/k1").unwrap());
        assert_eq!(a.get("/kv/k1"), None);
        // Reopened, what the directory holds counts against the cap.
        a.put("/x", Bytes::from(vec![7u8; 1000])).unwrap();
        let Store::Dir(c) = Store::open(Some(&dir)).unwrap() else { unreachable!() };
        assert!(c.held.load(Ordering::Relaxed) >= 1000);
        c.held.store(STORE_CAP as u64 - 10, Ordering::Relaxed);
        assert_eq!(c.put("/y", &[0u8; 11]), Err(PutError::Full));
    }

    #[test]
    fn colliding_paths_take_the_next_slot_and_never_answer_each_other() {
        let tmp = tempfile::tempdir().unwrap();
        let Store::Dir(d) = Store::open(Some(tmp.path())).unwrap() else { unreachable!() };
        // A file in /a's first slot that holds another path: a collision, as if by chance.
        d.put("/a", b"A").unwrap();
        std::fs::rename(d.slot("/a", 0), d.slot("/b", 0)).unwrap();
        d.put("/b", b"B").unwrap();
        assert_eq!(d.get("/b").unwrap().map(|(i, e)| (i, e.body)), Some((1, Bytes::from_static(b"B"))));
        assert_eq!(d.get("/a").unwrap().map(|(_, e)| e.body), None, "/a's file sits in /b's slot");
        let (path, _) = read_entry(&d.slot("/b", 0)).unwrap().unwrap();
        assert_eq!(path, "/a");
    }

    #[test]
    fn a_directory_others_can_write_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = Store::open(Some(tmp.path())).unwrap_err().to_string();
        assert!(e.contains("writable by other users"), "{e}");
    }
}
