//! The state directory of a testbed: what runs, where, under which PID.
//!
//! ```text
//! DIR/testbed.json    the State below, rewritten after every change
//! DIR/control.sock    the supervisor's socket (stop, start, down)
//! DIR/supervisor.log  the supervisor's own messages
//! DIR/ca.pem …        the certificate files, with --tls
//! DIR/NAME/           one per server: configs, output.log, pid (while it runs)
//! ```

use crate::layout::{Options, ServerSpec};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

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

/// A testbed as its supervisor keeps it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct State {
    /// What `up` was asked for.
    pub options: Options,
    /// The state directory.
    pub dir: PathBuf,
    /// The supervisor's PID.
    pub supervisor_pid: u32,
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

    /// Reads the state of the testbed in `dir`; `None` when there is none.
    pub fn load(dir: &Path) -> Option<State> {
        let text = std::fs::read_to_string(State::file(dir)).ok()?;
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
