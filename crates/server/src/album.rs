//! The album service, modelled on a user's study (a servlet keeping albums in DynamoDB
//! behind a load balancer): `POST /albums` takes a multipart/form-data body with a JSON
//! `profile` part and an `image` part and answers `200` with
//! `{"albumID": ID, "imageSize": N}`; `GET /albums/{id}` answers the profile as it was
//! sent. As in the study, the image is measured, not kept.
//!
//! Albums live in the origin's [`Store`], or with
//! [`ServeConfig::album_store`](crate::ServeConfig::album_store) one file each in a
//! directory that several origins (processes) share, so that behind a balancer a GET finds
//! the album whichever origin took the POST. An album file is written under a temporary
//! name and renamed into place: a reader in any process sees the whole profile or no album.
//!
//! Ids are 128 random bits in 32 lowercase hex digits, so origins need not agree on them.
//! A path's id is checked to be exactly that before any file is named after it: nothing
//! outside the directory can be reached through a request.

use std::borrow::Cow;
use std::fs::{DirBuilder, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use bytes::{Bytes, BytesMut};
use http::header::{HeaderValue, CONTENT_TYPE};
use http::{Method, Request, Response, StatusCode};

use crate::body::ResponseBody;
use crate::handler::{form_error, method_not_allowed, multipart_form, respond, Refusal, RequestBody};
use crate::store::{Store, STORE_CAP};
use crate::ServeError;

/// The largest image part: the study's servlet allows 50 MB files.
pub const MAX_ALBUM_IMAGE: u64 = 50 << 20;
/// The largest `POST /albums` body: the study's servlet allows 100 MB requests.
pub const MAX_ALBUM_REQUEST: u64 = 100 << 20;
/// The largest profile part (the study's is under 100 bytes).
pub const MAX_ALBUM_PROFILE: u64 = 64 << 10;
/// The most albums one origin holds: in memory, its own; with a directory, what the
/// directory held when the origin started plus what it added since (so N origins sharing
/// one directory hold at most N times this). Profiles count against [`STORE_CAP`] the same way.
pub const MAX_ALBUMS: u64 = 1_000_000;

/// The length of an album id: 128 bits in hex.
const ID_LEN: usize = 32;

/// An album id: 32 lowercase hex digits, so it is a safe file name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AlbumId([u8; ID_LEN]);

impl AlbumId {
    /// A new id: 128 bits from the thread's CSPRNG (seeded by the OS), so ids made by
    /// different processes do not collide.
    fn random() -> Self {
        let hex = format!("{:032x}", rand::random::<u128>());
        AlbumId(hex.as_bytes().try_into().expect("32 hex digits"))
    }

    /// `s` if it is exactly what [`AlbumId::random`] makes, else `None`: no dot, slash,
    /// percent sign, upper case or other length ever reaches the file system.
    pub(crate) fn parse(s: &str) -> Option<Self> {
        let ok = s.len() == ID_LEN && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        ok.then(|| AlbumId(s.as_bytes().try_into().expect("checked length")))
    }

    pub(crate) fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0).expect("hex digits are ASCII")
    }
}

/// Albums created, read and refused by this origin, for `/_barrage/stats`, so a client's
/// per-step counts can be checked against the origin's.
#[derive(Debug, Default)]
pub(crate) struct AlbumCounts {
    created: AtomicU64,
    read: AtomicU64,
    not_found: AtomicU64,
    /// Answered 4xx but 404: bad form, bad id, too large, wrong method.
    rejected: AtomicU64,
    /// Answered 5xx: the store full or failing.
    failed: AtomicU64,
}

impl AlbumCounts {
    /// Counts an answer by its status: 200 is a creation or a read (`created`).
    fn count(&self, status: StatusCode, created: bool) {
        let counter = match status.as_u16() {
            200 if created => &self.created,
            200 => &self.read,
            404 => &self.not_found,
            500.. => &self.failed,
            _ => &self.rejected,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// `{"created": N, "read": N, "not_found": N, "rejected": N, "failed": N}`.
    pub(crate) fn json(&self) -> String {
        let n = |c: &AtomicU64| c.load(Ordering::Relaxed);
        format!(
            "{{\"created\": {}, \"read\": {}, \"not_found\": {}, \"rejected\": {}, \"failed\": {}}}",
            n(&self.created),
            n(&self.read),
            n(&self.not_found),
            n(&self.rejected),
            n(&self.failed)
        )
    }
}

/// Where this origin keeps albums, and how many it holds.
#[derive(Debug)]
pub(crate) struct Albums {
    /// The shared directory; `None`: the origin's [`Store`].
    dir: Option<PathBuf>,
    held: Mutex<Held>,
    pub(crate) counts: AlbumCounts,
}

#[derive(Debug, Default)]
struct Held {
    albums: u64,
    bytes: u64,
}

/// Why an album was not stored.
#[derive(Debug)]
enum PutError {
    /// [`MAX_ALBUMS`] or [`STORE_CAP`] reached.
    Full,
    Io(std::io::Error),
}

impl Albums {
    /// Albums in memory, or in `dir` (created, for this user alone, if missing), counting
    /// what it already holds towards the caps.
    pub(crate) fn open(dir: Option<&Path>) -> Result<Albums, ServeError> {
        let mut held = Held::default();
        if let Some(dir) = dir {
            let fail = |source| ServeError::AlbumStore { path: dir.to_path_buf(), source };
            // Several origins may create it at once: an existing directory is fine.
            if let Err(e) = DirBuilder::new().recursive(true).mode(0o700).create(dir) {
                // "File exists" would not say what is wrong with a file in the way.
                let not_dir = dir.exists() && !dir.is_dir();
                return Err(fail(if not_dir { std::io::Error::from_raw_os_error(libc::ENOTDIR) } else { e }));
            }
            for entry in std::fs::read_dir(dir).map_err(fail)? {
                let entry = entry.map_err(fail)?;
                if entry.file_name().to_str().and_then(AlbumId::parse).is_some() {
                    held.albums += 1;
                    held.bytes += entry.metadata().map_err(fail)?.len();
                }
            }
        }
        Ok(Albums { dir: dir.map(Path::to_path_buf), held: Mutex::new(held), counts: AlbumCounts::default() })
    }

    /// Stores a profile under a new id.
    fn put(&self, store: &Store, profile: Bytes) -> Result<AlbumId, PutError> {
        let len = profile.len() as u64;
        self.reserve(len)?;
        let id = AlbumId::random();
        let stored = match &self.dir {
            Some(dir) => write_album(dir, id, &profile).map_err(PutError::Io),
            None => store.put(&memory_key(id), profile).map_err(|_| PutError::Full),
        };
        if stored.is_err() {
            self.release(len);
        }
        stored.map(|()| id)
    }

    /// The profile of album `id`, if there is one.
    fn get(&self, store: &Store, id: AlbumId) -> std::io::Result<Option<Bytes>> {
        match &self.dir {
            Some(dir) => read_album(dir, id),
            None => Ok(store.get(&memory_key(id))),
        }
    }

    fn reserve(&self, len: u64) -> Result<(), PutError> {
        let mut held = self.lock();
        // In memory the store enforces its byte cap itself (shared with other bodies).
        let bytes_full = self.dir.is_some() && held.bytes + len > STORE_CAP as u64;
        if held.albums >= MAX_ALBUMS || bytes_full {
            return Err(PutError::Full);
        }
        held.albums += 1;
        held.bytes += len;
        Ok(())
    }

    fn release(&self, len: u64) {
        let mut held = self.lock();
        held.albums -= 1;
        held.bytes -= len;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Held> {
        // Two additions cannot be left half done: a poisoned lock is still consistent.
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Where an album lives in the in-memory store: a path no request can name (the album
/// routes catch `/albums/...` before the store sees it).
fn memory_key(id: AlbumId) -> String {
    format!("/albums/{}", id.as_str())
}

/// Writes the profile to a temporary file in `dir` and renames it to the id: the rename is
/// atomic, so a reader (in any process) never sees part of an album. Temporary names start
/// with a dot and are not ids, so no GET can reach one. Not synced to disk: albums must
/// outlive a test, not a power cut.
fn write_album(dir: &Path, id: AlbumId, profile: &[u8]) -> std::io::Result<()> {
    let tmp = dir.join(format!(".{}.tmp", id.as_str()));
    let written = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut f| f.write_all(profile))
        .and_then(|()| std::fs::rename(&tmp, dir.join(id.as_str())));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// Reads album `id` from `dir`. A symbolic link (which this origin never makes) is not
/// followed and counts as no album, as does anything larger than a profile can be.
fn read_album(dir: &Path, id: AlbumId) -> std::io::Result<Option<Bytes>> {
    let file = OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(dir.join(id.as_str()));
    let file = match file {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ELOOP) => return Ok(None),
        Err(e) => return Err(e),
    };
    if !file.metadata()?.is_file() {
        return Ok(None);
    }
    let mut profile = Vec::new();
    file.take(MAX_ALBUM_PROFILE + 1).read_to_end(&mut profile)?;
    Ok((profile.len() as u64 <= MAX_ALBUM_PROFILE).then(|| Bytes::from(profile)))
}

/// `POST /albums` (and a 405 for other methods), counted.
pub(crate) async fn create_route<B: RequestBody>(
    albums: &Albums,
    store: &Store,
    req: Request<B>,
) -> Response<ResponseBody> {
    let resp = if req.method() == Method::POST {
        match read_form(req).await {
            Ok(form) => create(albums, store, form),
            Err(refusal) => refusal.into(),
        }
    } else {
        method_not_allowed("POST")
    };
    albums.counts.count(resp.status(), true);
    resp
}

/// `GET /albums/{id}` (and HEAD; 405 for other methods), counted.
pub(crate) fn read_route(albums: &Albums, store: &Store, id: &str, method: &Method) -> Response<ResponseBody> {
    let resp = if matches!(*method, Method::GET | Method::HEAD) {
        read(albums, store, id)
    } else {
        method_not_allowed("GET, HEAD")
    };
    albums.counts.count(resp.status(), false);
    resp
}

fn create(albums: &Albums, store: &Store, form: AlbumForm) -> Response<ResponseBody> {
    match albums.put(store, form.profile) {
        Ok(id) => {
            let json = format!("{{\"albumID\": \"{}\", \"imageSize\": {}}}", id.as_str(), form.image_size);
            json_response(Bytes::from(json))
        }
        Err(PutError::Full) => reason(StatusCode::INSUFFICIENT_STORAGE, "the album store is full\n"),
        Err(PutError::Io(e)) => reason(StatusCode::INTERNAL_SERVER_ERROR, format!("the album store failed: {e}\n")),
    }
}

fn read(albums: &Albums, store: &Store, id: &str) -> Response<ResponseBody> {
    let Some(id) = AlbumId::parse(id) else {
        return reason(StatusCode::BAD_REQUEST, "/albums/{id}: the id is 32 lowercase hex digits\n");
    };
    match albums.get(store, id) {
        Ok(Some(profile)) => json_response(profile),
        Ok(None) => reason(StatusCode::NOT_FOUND, "no such album\n"),
        Err(e) => reason(StatusCode::INTERNAL_SERVER_ERROR, format!("the album store failed: {e}\n")),
    }
}

fn json_response(body: Bytes) -> Response<ResponseBody> {
    let mut resp = respond(StatusCode::OK, ResponseBody::bytes(body));
    resp.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}

/// A response whose body is one line saying why.
fn reason(status: StatusCode, why: impl Into<Cow<'static, str>>) -> Response<ResponseBody> {
    Refusal { status, why: why.into() }.into()
}

/// What a `POST /albums` form holds.
struct AlbumForm {
    profile: Bytes,
    image_size: u64,
}

/// Reads the form as it arrives: the profile is kept (up to [`MAX_ALBUM_PROFILE`]), the
/// image only measured. A part over its limit is still read to its end, within
/// [`MAX_ALBUM_REQUEST`], so the 413 reaches a client still sending rather than a reset
/// connection. The first `profile` and `image` parts count; others are read and ignored.
async fn read_form<B: RequestBody>(req: Request<B>) -> Result<AlbumForm, Refusal> {
    let mut parts = multipart_form(req, MAX_ALBUM_REQUEST)?;
    let (mut profile, mut image_size) = (None, None);
    let mut too_large = None;
    while let Some(mut field) = parts.next_field().await.map_err(form_error)? {
        let name = field.name().map(str::to_string);
        let keep = if name.as_deref() == Some("profile") && profile.is_none() { MAX_ALBUM_PROFILE } else { 0 };
        let (kept, len) = read_part(&mut field, keep).await.map_err(form_error)?;
        match name.as_deref() {
            Some("profile") if profile.is_none() => {
                if len > MAX_ALBUM_PROFILE {
                    too_large = Some("the profile part is over 64 KiB\n");
                }
                profile = Some(kept);
            }
            Some("image") if image_size.is_none() => {
                if len > MAX_ALBUM_IMAGE {
                    too_large = Some("the image part is over 50 MiB\n");
                }
                image_size = Some(len);
            }
            _ => {}
        }
    }
    if let Some(why) = too_large {
        return Err(Refusal { status: StatusCode::PAYLOAD_TOO_LARGE, why: why.into() });
    }
    let bad = |why: &str| Refusal { status: StatusCode::BAD_REQUEST, why: format!("{why}\n").into() };
    let profile = profile.ok_or_else(|| bad("no 'profile' part: expected a JSON profile and an image"))?;
    let image_size = image_size.ok_or_else(|| bad("no 'image' part: expected a JSON profile and an image"))?;
    match serde_json::from_slice::<serde_json::Value>(&profile) {
        Ok(serde_json::Value::Object(_)) => Ok(AlbumForm { profile, image_size }),
        Ok(_) => Err(bad("the 'profile' part is JSON but not an object")),
        Err(e) => Err(bad(&format!("the 'profile' part is not JSON: {e}"))),
    }
}

/// Reads a part to its end: its length, and its bytes when there are at most `keep`.
async fn read_part(field: &mut multer::Field<'_>, keep: u64) -> Result<(Bytes, u64), multer::Error> {
    let mut kept = BytesMut::new();
    let mut len = 0u64;
    while let Some(chunk) = field.chunk().await? {
        len += chunk.len() as u64;
        if len <= keep {
            kept.extend_from_slice(&chunk);
        }
    }
    Ok((if len <= keep { kept.freeze() } else { Bytes::new() }, len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_32_lowercase_hex_digits_and_nothing_else() {
        let id = AlbumId::random();
        assert_eq!(AlbumId::parse(id.as_str()), Some(id));
        assert_ne!(AlbumId::random(), id);
        let good = "0123456789abcdef0123456789abcdef";
        assert!(AlbumId::parse(good).is_some());
        for bad in [
            "",
            "0123456789ABCDEF0123456789abcdef",
            "0123456789abcdef0123456789abcde",
            "0123456789abcdef0123456789abcdef0",
            "..%2F..%2Fetc%2Fpasswd",
            "../../../../../../../etc/passwd",
            "0123456789abcdef0123456789abcd/.",
            ".0123456789abcdef0123456789abcde",
            "0123456789abcdef0123456789abcdeg",
        ] {
            assert_eq!(AlbumId::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_directory_store_renames_whole_albums_into_place_and_counts_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("albums");
        let store = Store::default();
        let albums = Albums::open(Some(&path)).unwrap();
        let id = albums.put(&store, Bytes::from_static(b"{\"a\":1}")).unwrap();
        assert_eq!(albums.get(&store, id).unwrap().unwrap(), "{\"a\":1}");
        let names: Vec<String> =
            std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        assert_eq!(names, [id.as_str()], "no temporary file is left");
        // Nothing went to memory.
        assert_eq!(store.get(&memory_key(id)), None);
        // A second origin on the same directory sees the album and counts it.
        let other = Albums::open(Some(&path)).unwrap();
        assert_eq!(other.get(&store, id).unwrap().unwrap(), "{\"a\":1}");
        let held = other.lock();
        assert_eq!((held.albums, held.bytes), (1, 7));
        drop(held);
        assert_eq!(other.get(&store, AlbumId::random()).unwrap(), None);
    }

    #[test]
    fn a_link_in_the_directory_is_not_an_album() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "{\"secret\":1}").unwrap();
        let path = dir.path().join("albums");
        let albums = Albums::open(Some(&path)).unwrap();
        let id = AlbumId::random();
        std::os::unix::fs::symlink(&secret, path.join(id.as_str())).unwrap();
        assert_eq!(albums.get(&Store::default(), id).unwrap(), None);
    }

    #[test]
    fn the_caps_refuse_albums_and_a_refusal_holds_nothing() {
        let albums = Albums::open(None).unwrap();
        albums.lock().albums = MAX_ALBUMS - 1;
        let store = Store::default();
        albums.put(&store, Bytes::from_static(b"{}")).unwrap();
        assert!(matches!(albums.put(&store, Bytes::from_static(b"{}")), Err(PutError::Full)));
        assert_eq!(albums.lock().albums, MAX_ALBUMS);

        let dir = tempfile::tempdir().unwrap();
        let on_disk = Albums::open(Some(dir.path())).unwrap();
        on_disk.lock().bytes = STORE_CAP as u64 - 2;
        assert!(on_disk.put(&store, Bytes::from_static(b"{}")).is_ok());
        assert!(matches!(on_disk.put(&store, Bytes::from_static(b"{}")), Err(PutError::Full)));
        assert_eq!(on_disk.lock().albums, 1);
    }

    #[test]
    fn a_file_where_the_directory_should_be_is_an_error() {
        let file = tempfile::NamedTempFile::new().unwrap();
        let err = Albums::open(Some(file.path())).unwrap_err();
        assert!(err.to_string().starts_with("cannot use the album store"), "{err}");
    }

    #[test]
    fn answers_are_counted_by_status() {
        let counts = AlbumCounts::default();
        for (status, created) in [(200, true), (200, false), (200, false), (404, false), (400, true), (413, true)] {
            counts.count(StatusCode::from_u16(status).unwrap(), created);
        }
        counts.count(StatusCode::INSUFFICIENT_STORAGE, true);
        assert_eq!(counts.json(), "{\"created\": 1, \"read\": 2, \"not_found\": 1, \"rejected\": 2, \"failed\": 1}");
    }
}
