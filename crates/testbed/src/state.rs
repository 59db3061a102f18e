//! The state directory of a testbed: what runs, where, under which PID.
//!
//! ```text
//! DIR/testbed.json    the State below, rewritten after every change
//! DIR/control.sock    the supervisor's socket (stop, start, down)
//! DIR/supervisor.log  the supervisor's own messages
//! DIR/ca.pem …        the certificate files, with --tls
//! DIR/albums/        the origins' shared album store (`serve --album-store`)
//! DIR/store/          the origins' shared PUT/GET/DELETE store (`serve --store-dir`)
//! DIR/NAME/           one per server: configs, output.log, its own logs (access.log…),
//!                     pid (while it runs), nginx-cache's cache/, an origin's shape
//!                     (`serve --shape-file`)
//! ```

use crate::layout::{Options, ServerSpec};
use crate::TestbedError;
use serde::{Deserialize, Serialize};
use std::io::Read;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The largest state file read: a testbed of a dozen servers writes a few KB.
const MAX_STATE_BYTES: u64 = 1 << 20;

/// Where a server stands.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Status {
    /// Answering.
    Running,
    /// Stopped by `testbed stop`.
    Stopped,
    /// Ended on its own: how.
    Exited(String),
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Status::Running => f.write_str("running"),
            Status::Stopped => f.write_str("stopped"),
            Status::Exited(how) => write!(f, "exited ({how})"),
        }
    }
}

/// One server and its process.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ServerState {
    /// What it is and how it starts.
    pub spec: ServerSpec,
    /// Its PID while it runs.
    pub pid: Option<u32>,
    /// When that process started (field 22 of `/proc/PID/stat`, clock ticks since boot):
    /// with the PID, what identifies it. A PID alone may since belong to anything.
    #[serde(default)]
    pub started: Option<u64>,
    /// Where it stands.
    pub status: Status,
}

impl ServerState {
    /// The file holding its PID while it runs (for `--monitor`, which follows restarts).
    pub fn pid_file(&self) -> PathBuf {
        self.spec.dir.join("pid")
    }

    /// Its output (stdout and stderr).
    pub fn log(&self) -> PathBuf {
        self.spec.dir.join("output.log")
    }
}

/// A process, by its PID and start time: a PID alone may since belong to anything.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owner {
    /// Its PID.
    pub pid: u32,
    /// When it started (field 22 of `/proc/PID/stat`).
    pub started: u64,
}

impl Owner {
    /// Process `pid` as it is now; `None` when it is gone.
    pub fn of(pid: u32) -> Option<Owner> {
        crate::process::start_time(pid).map(|started| Owner { pid, started })
    }

    /// Whether it still runs (the same process, not a zombie).
    pub fn alive(&self) -> bool {
        crate::process::stat(self.pid).is_some_and(|s| s.start_time == self.started && s.state != 'Z')
    }
}

/// A testbed as its supervisor keeps it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct State {
    /// What `up` was asked for.
    pub options: Options,
    /// The state directory.
    pub dir: PathBuf,
    /// The supervisor's PID.
    pub supervisor_pid: u32,
    /// The process the testbed lives for (a study that brought it up), if any: a testbed
    /// whose owner is gone is stale, and the next `up` in its directory takes it down.
    #[serde(default)]
    pub owner: Option<Owner>,
    /// The CA certificate clients trust (`--cacert`), with TLS.
    pub ca: Option<PathBuf>,
    /// The servers, origins first.
    pub servers: Vec<ServerState>,
}

impl State {
    /// The state file in `dir`.
    pub fn file(dir: &Path) -> PathBuf {
        dir.join("testbed.json")
    }

    /// The supervisor's socket in `dir`.
    pub fn socket(dir: &Path) -> PathBuf {
        dir.join("control.sock")
    }

    /// Reads the state of the testbed in `dir`; `None` when there is none, or when the file
    /// is not one this user's supervisor wrote (a link, someone else's, or oversized).
    pub fn load(dir: &Path) -> Option<State> {
        let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(State::file(dir)).ok()?;
        let meta = file.metadata().ok()?;
        if !meta.is_file() || meta.uid() != euid() || meta.mode() & 0o022 != 0 {
            return None;
        }
        let mut text = String::new();
        file.take(MAX_STATE_BYTES).read_to_string(&mut text).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Writes the state, atomically (readers never see half a file).
    pub fn save(&self) -> std::io::Result<()> {
        let tmp = self.dir.join(".testbed.json.tmp");
        std::fs::write(&tmp, serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?)?;
        std::fs::rename(tmp, State::file(&self.dir))
    }

    /// The server called `name`.
    pub fn server(&self, name: &str) -> Option<&ServerState> {
        self.servers.iter().find(|s| s.spec.name == name)
    }

    /// The names of all servers, for messages.
    pub fn names(&self) -> String {
        self.servers.iter().map(|s| s.spec.name.as_str()).collect::<Vec<_>>().join(", ")
    }
}

/// Refuses a state directory this user cannot trust: a symbolic link, not a directory,
/// owned by another user, or writable by group or others. Whoever can write there could
/// plant a state file naming processes for `down` to kill. A directory that does not exist
/// yet is fine: [`create_dir`] makes it.
pub fn check_dir(dir: &Path) -> Result<(), TestbedError> {
    let meta = match std::fs::symlink_metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e.into()),
        Ok(meta) => meta,
    };
    let why = if meta.file_type().is_symlink() {
        "is a symbolic link".to_string()
    } else if !meta.is_dir() {
        "is not a directory".to_string()
    } else if meta.uid() != euid() {
        format!("belongs to user {}, not to you ({})", meta.uid(), euid())
    } else if meta.mode() & 0o022 != 0 {
        format!("is writable by other users (mode {:o})", meta.mode() & 0o777)
    } else {
        return Ok(());
    };
    Err(TestbedError::Untrusted { dir: dir.display().to_string(), why })
}

/// Creates the state directory, readable and writable by this user alone, unless it
/// exists; then checks it as [`check_dir`] does.
pub fn create_dir(dir: &Path) -> Result<(), TestbedError> {
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent)?;
    }
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(e.into()),
        _ => {}
    }
    check_dir(dir)
}

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// The state directory when `--dir` is not given: `$BARRAGE_TESTBED_DIR`, else
/// `$XDG_RUNTIME_DIR/barrage-testbed`, else `/tmp/barrage-testbed-UID`.
pub fn default_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("BARRAGE_TESTBED_DIR") {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_RUNTIME_DIR") {
        return PathBuf::from(d).join("barrage-testbed");
    }
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    std::env::temp_dir().join(format!("barrage-testbed-{uid}"))
}
