//! The history file: SQLite in WAL mode, so that several barrage processes finishing at once
//! all land (each writes in one short transaction, waiting its turn), and readers never
//! block writers.
//!
//! # Schema (version [`SCHEMA_VERSION`], in `PRAGMA user_version`)
//! ```text
//! series(id, key UNIQUE, labels)          a fingerprint: its key and its labels as JSON
//! runs(id, series_id, kind, run_id, started_ms, recorded_ms, study, env, files,
//!      shards, interrupted, failure)       one row per run; study and env as JSON
//! figures(run_id, name, value)             the run's figures by name
//! intervals(run_id, idx, start_ms, length_ms, completed, ok, corrected, service)
//!                                          each interval's histograms (compressed V2)
//! baselines(name, run_id)                  named runs kept by `gc`
//! annotations(id, at_ms, series_id, text)  notes on the time line
//! ```
//! A file whose `application_id` is not barrage's, or whose version is newer than this
//! barrage knows, is refused rather than changed.

use crate::entry::{Entry, Interval};
use crate::{Environment, Fingerprint, HistoryError};
use hdrhistogram::Histogram;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The schema this barrage writes.
pub const SCHEMA_VERSION: i64 = 1;

/// `PRAGMA application_id` of a history file: "brgh".
const APPLICATION_ID: i64 = 0x6272_6768;

/// How long a writer waits for another to finish its transaction.
const BUSY_WAIT: Duration = Duration::from_secs(30);

/// Each schema version's migration from the one before, in order.
const MIGRATIONS: [&str; 1] = [r#"
CREATE TABLE series(id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, labels TEXT NOT NULL);
CREATE TABLE runs(
    id INTEGER PRIMARY KEY,
    series_id INTEGER NOT NULL REFERENCES series(id),
    kind TEXT NOT NULL,
    run_id TEXT NOT NULL,
    started_ms INTEGER NOT NULL,
    recorded_ms INTEGER NOT NULL,
    study TEXT NOT NULL,
    env TEXT NOT NULL,
    files TEXT NOT NULL,
    shards INTEGER NOT NULL,
    interrupted INTEGER NOT NULL,
    failure TEXT
);
CREATE INDEX runs_by_series ON runs(series_id, started_ms);
CREATE INDEX runs_by_time ON runs(started_ms);
CREATE TABLE figures(
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    value REAL NOT NULL,
    PRIMARY KEY(run_id, name)
) WITHOUT ROWID;
CREATE TABLE intervals(
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    start_ms INTEGER NOT NULL,
    length_ms INTEGER NOT NULL,
    completed INTEGER NOT NULL,
    ok INTEGER NOT NULL,
    corrected BLOB NOT NULL,
    service BLOB NOT NULL,
    PRIMARY KEY(run_id, idx)
) WITHOUT ROWID;
CREATE TABLE baselines(name TEXT PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE);
CREATE TABLE annotations(id INTEGER PRIMARY KEY, at_ms INTEGER NOT NULL, series_id INTEGER, text TEXT NOT NULL);
"#];

/// An open history file.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

/// A stored run, without its intervals.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct RunRow {
    /// Its number in the history.
    pub id: i64,
    /// Its series' number.
    pub series: i64,
    /// What it was (`run`, `experiment`, ...).
    pub kind: String,
    /// The results file's own run id.
    pub run_id: String,
    /// Start, ms since the Unix epoch.
    pub started_ms: u64,
    /// Its series' labels.
    pub labels: BTreeMap<String, String>,
    /// Its place in its study.
    pub study: Vec<(String, String)>,
    /// The machine and barrage it ran on.
    pub env: Environment,
    /// Figures by name.
    pub figures: BTreeMap<String, f64>,
    /// Results files it was read from.
    pub files: Vec<String>,
    /// Shards merged into it.
    pub shards: u32,
    /// Stopped early.
    pub interrupted: bool,
    /// Why it is not a result, if it is not.
    pub failure: Option<String>,
}

/// A series: runs sharing a fingerprint.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Series {
    /// Its number.
    pub id: i64,
    /// Its labels.
    pub labels: BTreeMap<String, String>,
    /// Runs in it.
    pub runs: u64,
    /// Its newest run's start, ms since the Unix epoch.
    pub newest_ms: u64,
}

/// One point of a series' figure.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Point {
    /// The run's number.
    pub run: i64,
    /// Its start, ms since the Unix epoch.
    pub started_ms: u64,
    /// The figure's value.
    pub value: f64,
    /// Why the run is not a result (built on failure, on another workload, or interrupted),
    /// if it is not: such points are shown and left out of detection.
    pub failure: Option<String>,
}

/// A note on the time line.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Annotation {
    /// When, ms since the Unix epoch.
    pub at_ms: u64,
    /// The series it is about; `None` for all.
    pub series: Option<i64>,
    /// What happened.
    pub text: String,
}

impl Store {
    /// Opens (creating it, and its directory, for this user alone) the history at `path`.
    pub fn open(path: &Path) -> Result<Store, HistoryError> {
        prepare(path)?;
        let sql = |e| HistoryError::Sql(path.to_path_buf(), e);
        // No link followed even if one appeared since `prepare` looked.
        let flags = rusqlite::OpenFlags::default() | rusqlite::OpenFlags::SQLITE_OPEN_NOFOLLOW;
        let conn = Connection::open_with_flags(path, flags).map_err(sql)?;
        conn.busy_timeout(BUSY_WAIT).map_err(sql)?;
        let mut store = Store { conn, path: path.to_path_buf() };
        store.migrate()?;
        Ok(store)
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn sql(&self, e: rusqlite::Error) -> HistoryError {
        HistoryError::Sql(self.path.clone(), e)
    }

    /// Checks the file is barrage's history of a schema this barrage knows, and brings it
    /// to [`SCHEMA_VERSION`]; an empty file becomes one. Decided inside a write transaction,
    /// so that two processes creating the file at once do not take each other's half-made
    /// file for a stranger's.
    fn migrate(&mut self) -> Result<(), HistoryError> {
        let path = self.path.clone();
        let sql = |e| HistoryError::Sql(path.clone(), e);
        let refuse = |why: String| Err(HistoryError::Refused(path.clone(), why));
        let get = |c: &Connection, q: &str| c.query_row(q, [], |r| r.get::<_, i64>(0));
        let app = get(&self.conn, "PRAGMA application_id").map_err(sql)?;
        if app != APPLICATION_ID && app != 0 {
            return refuse("not a barrage history file".into());
        }
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(sql)?;
        let (app, version) =
            (get(&tx, "PRAGMA application_id").map_err(sql)?, get(&tx, "PRAGMA user_version").map_err(sql)?);
        let tables = get(&tx, "SELECT count(*) FROM sqlite_master").map_err(sql)?;
        if app != APPLICATION_ID && tables > 0 {
            return refuse("not a barrage history file".into());
        }
        if version > SCHEMA_VERSION {
            return refuse(format!(
                "written by a newer barrage (schema {version}; this one knows up to {SCHEMA_VERSION})"
            ));
        }
        for step in &MIGRATIONS[version as usize..] {
            tx.execute_batch(step).map_err(sql)?;
        }
        tx.execute_batch(&format!("PRAGMA application_id={APPLICATION_ID}; PRAGMA user_version={SCHEMA_VERSION};"))
            .map_err(sql)?;
        tx.commit().map_err(sql)?;
        self.conn
            .execute_batch("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;")
            .map_err(sql)
    }

    /// Stores `entry`; its number in the history.
    pub fn record(&mut self, entry: &Entry) -> Result<i64, HistoryError> {
        let path = self.path.clone();
        let sql = |e| HistoryError::Sql(path.clone(), e);
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(sql)?;
        let key = entry.fingerprint.key();
        let labels = json(&entry.fingerprint.labels);
        tx.execute("INSERT INTO series(key, labels) VALUES (?1, ?2) ON CONFLICT(key) DO NOTHING", params![key, labels])
            .map_err(sql)?;
        let series: i64 = tx.query_row("SELECT id FROM series WHERE key = ?1", [&key], |r| r.get(0)).map_err(sql)?;
        tx.execute(
            "INSERT INTO runs(series_id, kind, run_id, started_ms, recorded_ms, study, env, files, shards, interrupted, failure)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            params![
                series,
                entry.kind,
                entry.run_id,
                entry.started_ms as i64,
                now_ms() as i64,
                json(&entry.study),
                json(&entry.env),
                json(&entry.files),
                entry.shards,
                entry.interrupted,
                entry.failure,
            ],
        )
        .map_err(sql)?;
        let id = tx.last_insert_rowid();
        {
            let mut fig = tx.prepare("INSERT INTO figures(run_id, name, value) VALUES (?1, ?2, ?3)").map_err(sql)?;
            for (name, value) in entry.figures.iter().filter(|(_, v)| v.is_finite()) {
                fig.execute(params![id, name, value]).map_err(sql)?;
            }
            let mut int = tx
                .prepare(
                    "INSERT INTO intervals(run_id, idx, start_ms, length_ms, completed, ok, corrected, service)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                )
                .map_err(sql)?;
            for i in &entry.intervals {
                int.execute(params![
                    id,
                    i.index,
                    i.start_ms as i64,
                    i.length_ms,
                    i.completed as i64,
                    i.ok as i64,
                    i.corrected,
                    i.service
                ])
                .map_err(sql)?;
            }
        }
        tx.commit().map_err(sql)?;
        Ok(id)
    }

    /// Every series, with how many runs it has and when its newest started.
    pub fn series(&self) -> Result<Vec<Series>, HistoryError> {
        let mut q = self
            .conn
            .prepare(
                "SELECT s.id, s.labels, count(r.id), coalesce(max(r.started_ms), 0)
                 FROM series s LEFT JOIN runs r ON r.series_id = s.id GROUP BY s.id ORDER BY s.id",
            )
            .map_err(|e| self.sql(e))?;
        let rows = q
            .query_map([], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get::<_, i64>(2)?, r.get::<_, i64>(3)?))
            })
            .map_err(|e| self.sql(e))?;
        let mut out = Vec::new();
        for row in rows {
            let (id, labels, runs, newest) = row.map_err(|e| self.sql(e))?;
            out.push(Series { id, labels: self.parse(&labels)?, runs: runs as u64, newest_ms: newest as u64 });
        }
        Ok(out)
    }

    /// The series whose labels hold every `k=v` of `filter`.
    pub fn matching(&self, filter: &[(String, Option<String>)]) -> Result<Vec<Series>, HistoryError> {
        Ok(self.series()?.into_iter().filter(|s| Fingerprint { labels: s.labels.clone() }.matches(filter)).collect())
    }

    /// Runs, newest first: at most `limit`, of `series` when given, started at or after
    /// `since_ms`.
    pub fn runs(&self, series: Option<i64>, since_ms: u64, limit: usize) -> Result<Vec<RunRow>, HistoryError> {
        let mut q = self
            .conn
            .prepare(
                "SELECT r.id FROM runs r WHERE (?1 IS NULL OR r.series_id = ?1) AND r.started_ms >= ?2
                 ORDER BY r.started_ms DESC, r.id DESC LIMIT ?3",
            )
            .map_err(|e| self.sql(e))?;
        let ids: Vec<i64> = q
            .query_map(params![series, since_ms as i64, limit as i64], |r| r.get(0))
            .map_err(|e| self.sql(e))?
            .collect::<Result<_, _>>()
            .map_err(|e| self.sql(e))?;
        ids.into_iter().map(|id| self.run(id)).collect()
    }

    /// Run `id`.
    pub fn run(&self, id: i64) -> Result<RunRow, HistoryError> {
        type Raw = (i64, String, String, i64, String, String, String, u32, bool, Option<String>, String);
        let raw: Option<Raw> = self
            .conn
            .query_row(
                "SELECT r.series_id, r.kind, r.run_id, r.started_ms, r.study, r.env, r.files, r.shards, r.interrupted,
                        r.failure, s.labels
                 FROM runs r JOIN series s ON s.id = r.series_id WHERE r.id = ?1",
                [id],
                |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                        r.get(6)?,
                        r.get(7)?,
                        r.get(8)?,
                        r.get(9)?,
                        r.get(10)?,
                    ))
                },
            )
            .optional()
            .map_err(|e| self.sql(e))?;
        let Some((series, kind, run_id, started, study, env, files, shards, interrupted, failure, labels)) = raw else {
            return Err(HistoryError::NotFound(format!("no run {id} in the history {}", self.path.display())));
        };
        Ok(RunRow {
            id,
            series,
            kind,
            run_id,
            started_ms: started as u64,
            labels: self.parse(&labels)?,
            study: self.parse(&study)?,
            env: self.parse(&env)?,
            figures: self.figures(id)?,
            files: self.parse(&files)?,
            shards,
            interrupted,
            failure,
        })
    }

    fn figures(&self, id: i64) -> Result<BTreeMap<String, f64>, HistoryError> {
        let mut q = self.conn.prepare("SELECT name, value FROM figures WHERE run_id = ?1").map_err(|e| self.sql(e))?;
        let rows = q.query_map([id], |r| Ok((r.get(0)?, r.get(1)?))).map_err(|e| self.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sql(e))
    }

    /// The newest `last` points of `figure` in `series`, oldest first.
    pub fn points(&self, series: i64, figure: &str, last: usize) -> Result<Vec<Point>, HistoryError> {
        let mut q = self
            .conn
            .prepare(
                "SELECT r.id, r.started_ms, f.value,
                        coalesce(r.failure, CASE WHEN r.interrupted THEN 'interrupted: its figures are of what finished' END)
                 FROM runs r JOIN figures f ON f.run_id = r.id
                 WHERE r.series_id = ?1 AND f.name = ?2 ORDER BY r.started_ms DESC, r.id DESC LIMIT ?3",
            )
            .map_err(|e| self.sql(e))?;
        let rows = q
            .query_map(params![series, figure, last as i64], |r| {
                Ok(Point {
                    run: r.get(0)?,
                    started_ms: r.get::<_, i64>(1)? as u64,
                    value: r.get(2)?,
                    failure: r.get(3)?,
                })
            })
            .map_err(|e| self.sql(e))?;
        let mut points: Vec<Point> = rows.collect::<Result<_, _>>().map_err(|e| self.sql(e))?;
        points.reverse();
        Ok(points)
    }

    /// The figures the runs of `series` have, by name.
    pub fn figure_names(&self, series: i64) -> Result<Vec<String>, HistoryError> {
        let mut q = self
            .conn
            .prepare("SELECT DISTINCT f.name FROM figures f JOIN runs r ON r.id = f.run_id WHERE r.series_id = ?1 ORDER BY 1")
            .map_err(|e| self.sql(e))?;
        let rows = q.query_map([series], |r| r.get(0)).map_err(|e| self.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sql(e))
    }

    /// The intervals of run `id`, in order.
    pub fn intervals(&self, id: i64) -> Result<Vec<Interval>, HistoryError> {
        let mut q = self
            .conn
            .prepare(
                "SELECT idx, start_ms, length_ms, completed, ok, corrected, service FROM intervals
                 WHERE run_id = ?1 ORDER BY idx",
            )
            .map_err(|e| self.sql(e))?;
        let rows = q
            .query_map([id], |r| {
                Ok(Interval {
                    index: r.get(0)?,
                    start_ms: r.get::<_, i64>(1)? as u64,
                    length_ms: r.get(2)?,
                    completed: r.get::<_, i64>(3)? as u64,
                    ok: r.get::<_, i64>(4)? as u64,
                    corrected: r.get(5)?,
                    service: r.get(6)?,
                })
            })
            .map_err(|e| self.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sql(e))
    }

    /// The corrected latency of runs `ids` pooled, exactly: their intervals' histograms
    /// added (`service`: the service time's instead).
    pub fn histogram(&self, ids: &[i64], service: bool) -> Result<Histogram<u64>, HistoryError> {
        let mut total = barrage_metrics::recorder::new_histogram();
        for &id in ids {
            for i in self.intervals(id)? {
                let bytes = if service { &i.service } else { &i.corrected };
                let h = barrage_metrics::recorder::decode_histogram(bytes).map_err(|e| {
                    HistoryError::Corrupt(self.path.clone(), format!("run {id} interval {}: {e}", i.index))
                })?;
                total.add(&h).map_err(|e| HistoryError::Corrupt(self.path.clone(), format!("run {id}: {e:?}")))?;
            }
        }
        Ok(total)
    }

    /// Names run `id` `name` (replacing what the name named before).
    pub fn set_baseline(&mut self, name: &str, id: i64) -> Result<(), HistoryError> {
        self.run(id)?;
        self.conn
            .execute(
                "INSERT INTO baselines(name, run_id) VALUES (?1, ?2) ON CONFLICT(name) DO UPDATE SET run_id = ?2",
                params![name, id],
            )
            .map_err(|e| self.sql(e))?;
        Ok(())
    }

    /// The run the baseline `name` names.
    pub fn baseline(&self, name: &str) -> Result<i64, HistoryError> {
        self.conn
            .query_row("SELECT run_id FROM baselines WHERE name = ?1", [name], |r| r.get(0))
            .optional()
            .map_err(|e| self.sql(e))?
            .ok_or_else(|| {
                HistoryError::NotFound(format!("no baseline named '{name}' (history baseline set NAME RUN)"))
            })
    }

    /// Every baseline: name and run.
    pub fn baselines(&self) -> Result<Vec<(String, i64)>, HistoryError> {
        let mut q = self.conn.prepare("SELECT name, run_id FROM baselines ORDER BY name").map_err(|e| self.sql(e))?;
        let rows = q.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).map_err(|e| self.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sql(e))
    }

    /// Adds a note at `at_ms`, about `series` or all.
    pub fn annotate(&mut self, at_ms: u64, series: Option<i64>, text: &str) -> Result<(), HistoryError> {
        self.conn
            .execute(
                "INSERT INTO annotations(at_ms, series_id, text) VALUES (?1, ?2, ?3)",
                params![at_ms as i64, series, text],
            )
            .map_err(|e| self.sql(e))?;
        Ok(())
    }

    /// The notes about `series` (and those about all), oldest first.
    pub fn annotations(&self, series: Option<i64>) -> Result<Vec<Annotation>, HistoryError> {
        let mut q = self
            .conn
            .prepare(
                "SELECT at_ms, series_id, text FROM annotations WHERE series_id IS NULL OR ?1 IS NULL OR series_id = ?1
                 ORDER BY at_ms",
            )
            .map_err(|e| self.sql(e))?;
        let rows = q
            .query_map([series], |r| {
                Ok(Annotation { at_ms: r.get::<_, i64>(0)? as u64, series: r.get(1)?, text: r.get(2)? })
            })
            .map_err(|e| self.sql(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.sql(e))
    }

    /// Removes all but the newest `keep` runs of each series (baselines are kept); how many
    /// were removed.
    pub fn gc(&mut self, keep: usize) -> Result<usize, HistoryError> {
        let removed = self
            .conn
            .execute(
                "DELETE FROM runs WHERE id IN (
                   SELECT id FROM (SELECT id, row_number() OVER (PARTITION BY series_id ORDER BY started_ms DESC, id DESC) AS k FROM runs)
                   WHERE k > ?1) AND id NOT IN (SELECT run_id FROM baselines)",
                [keep as i64],
            )
            .map_err(|e| self.sql(e))?;
        self.conn
            .execute("DELETE FROM series WHERE id NOT IN (SELECT DISTINCT series_id FROM runs)", [])
            .map_err(|e| self.sql(e))?;
        Ok(removed)
    }

    fn parse<T: serde::de::DeserializeOwned>(&self, text: &str) -> Result<T, HistoryError> {
        serde_json::from_str(text).map_err(|e| HistoryError::Corrupt(self.path.clone(), e.to_string()))
    }
}

fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("labels, study and environment serialise")
}

/// Now, ms since the Unix epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// Makes `path` ready for SQLite: its directory created for this user alone, and a file
/// that is there is a regular file of this user's, not a link another user planted.
fn prepare(path: &Path) -> Result<(), HistoryError> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
    let io = |e| HistoryError::Io(path.to_path_buf(), e);
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(io)?;
    }
    let refuse = |why: &str| Err(HistoryError::Refused(path.to_path_buf(), why.to_string()));
    // SQLite writes beside it (`-wal`, `-shm`, `-journal`): one another user planted, or a
    // link, would be written through.
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut beside = path.as_os_str().to_owned();
        beside.push(suffix);
        match std::fs::symlink_metadata(&beside) {
            Ok(m) if m.file_type().is_symlink() || !m.is_file() => {
                return refuse(&format!("its {suffix} file is not a regular file"))
            }
            // SAFETY: geteuid has no preconditions and cannot fail.
            Ok(m) if m.uid() != unsafe { libc::geteuid() } => {
                return refuse(&format!("its {suffix} file is another user's"))
            }
            _ => {}
        }
    }
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => return refuse("a symbolic link: give the file itself"),
        Ok(m) if !m.is_file() => return refuse("not a regular file"),
        // SAFETY: geteuid has no preconditions and cannot fail.
        Ok(m) if m.uid() != unsafe { libc::geteuid() } => return refuse("owned by another user"),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // Created here, for this user alone, before SQLite opens it; one another process
            // created meanwhile is fine.
            match std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path) {
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return prepare(path),
                Err(e) => return Err(io(e)),
            }
        }
        Err(e) => return Err(io(e)),
    }
    Ok(())
}

/// The history's default place: `$BARRAGE_HISTORY`, else `$XDG_DATA_HOME/barrage/history.db`,
/// else `~/.local/share/barrage/history.db`; `None` when there is no home to put it in.
pub fn default_path() -> Option<PathBuf> {
    let var = |k| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(p) = var("BARRAGE_HISTORY") {
        return Some(p);
    }
    let data = var("XDG_DATA_HOME").or_else(|| var("HOME").map(|h| h.join(".local/share")))?;
    Some(data.join("barrage").join("history.db"))
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
