//! [`StudyDir`]: the one owner of an experiment's results directory and its format
//! (versioned, like the results file). `experiment` writes it, `--resume` continues it,
//! `compare` reads it; nothing else knows its file names.
//!
//! ```text
//! DIR/experiment.json                 the manifest: version, the resolved cases, repeats, ...
//! DIR/TC0.r1.brg                      case TC0, repeat 1, measured
//! DIR/TC0.r1.fill.brg                 ... phase fill (cases with phases)
//! DIR/TC0.r1.background.brg           ... its background load
//! DIR/TC0.r1.brg.part                 a run not finished (interrupted): redone by --resume
//! DIR/TC0.r1.brg/shard-0.brg …        or the run made elsewhere, split over machines: the
//!                                     shards of one complete split (`run --shard I/N`)
//! DIR/summary.txt, matrix.csv, comparisons.csv, report.html
//! ```

use crate::StudyError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The version of the directory format this build writes. Version 1 (no `version` key)
/// is still read.
pub const DIR_VERSION: u32 = 2;

/// The manifest's file name.
pub const MANIFEST: &str = "experiment.json";

/// Largest manifest read: a directory from another machine must not exhaust memory.
const MAX_MANIFEST_BYTES: u64 = 16 << 20;

/// A case as the manifest records it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ManifestCase {
    /// `TC0`, `TC1`, ...
    pub id: String,
    /// Factor → level.
    #[serde(default)]
    pub levels: BTreeMap<String, String>,
    /// The measured run's settings as `run` flags.
    #[serde(default)]
    pub run: Vec<String>,
    /// The background load's flags, if any.
    #[serde(default)]
    pub background: Option<Vec<String>>,
    /// The testbed it runs against, if any.
    #[serde(default)]
    pub testbed: Option<String>,
    /// Its phases (fill, measure), if any.
    #[serde(default)]
    pub phases: Vec<String>,
}

impl ManifestCase {
    /// The case as a manifest written redacted shows it: what `--resume` compares, so that
    /// a directory first run with `--show-secrets` (or by a barrage that showed custom
    /// header values) resumes without it, and the other way round.
    fn redacted(&self) -> ManifestCase {
        let r = barrage_metrics::secrets::Redaction::default();
        ManifestCase {
            run: r.args(&self.run),
            background: self.background.as_deref().map(|b| r.args(b)),
            ..self.clone()
        }
    }
}

/// What `experiment.json` holds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// The directory format's version; 1 when absent.
    #[serde(default = "v1")]
    pub version: u32,
    /// The experiment's name.
    #[serde(default)]
    pub name: String,
    /// Runs per case.
    #[serde(default)]
    pub repeats: u32,
    /// Warm-up before each run, as written.
    #[serde(default)]
    pub warmup: Option<String>,
    /// Pause between runs, as written.
    #[serde(default)]
    pub pause: Option<String>,
    /// `sequential` or `random`.
    #[serde(default)]
    pub order: String,
    /// Seed of the random order.
    #[serde(default)]
    pub seed: u64,
    /// Factors compared along.
    #[serde(default)]
    pub compare: Vec<String>,
    /// Objectives of every case.
    #[serde(default)]
    pub slo: Vec<String>,
    /// A case runs with `--no-redact`: its flags here, its results and the reports beside
    /// them may hold secrets (and are their owner's alone).
    #[serde(default)]
    pub unredacted: bool,
    /// The cases.
    #[serde(default)]
    pub cases: Vec<ManifestCase>,
}

fn v1() -> u32 {
    1
}

/// Which run of a case's repeat a file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The measured run.
    Measured,
    /// The background load beside it.
    Background,
}

/// An experiment's results directory.
#[derive(Clone, Debug)]
pub struct StudyDir {
    /// Where it is.
    pub path: PathBuf,
    /// Its manifest.
    pub manifest: Manifest,
}

impl StudyDir {
    /// Creates the directory for `manifest`, or with `resume` continues it: earlier results
    /// are refused unless resuming, and a resumed directory must hold the same cases and
    /// repeats (case ids are positions in the matrix: an edited file would give old
    /// results new meanings).
    pub fn create(path: &Path, manifest: Manifest, resume: bool) -> Result<StudyDir, StudyError> {
        let io = |e| StudyError::Io(path.to_path_buf(), e);
        std::fs::create_dir_all(path).map_err(io)?;
        let has_results = std::fs::read_dir(path).map_err(io)?.flatten().any(|f| is_results(&f.path()));
        if has_results && !resume {
            return Err(StudyError::Dir(format!(
                "{} holds results of an earlier run: --resume to finish it, or -o another directory",
                path.display()
            )));
        }
        let manifest = Manifest { version: DIR_VERSION, ..manifest };
        if resume {
            if let Ok(earlier) = StudyDir::open(path) {
                let m = &earlier.manifest;
                let redacted = |cases: &[ManifestCase]| cases.iter().map(ManifestCase::redacted).collect::<Vec<_>>();
                if redacted(&m.cases) != redacted(&manifest.cases) || m.repeats != manifest.repeats {
                    return Err(StudyError::Dir(format!(
                        "{}: the experiment file changed since the first run (cases or repeats differ): run it into another directory",
                        path.display()
                    )));
                }
            }
        }
        let text = serde_json::to_string_pretty(&manifest).expect("a manifest serialises");
        barrage_metrics::secrets::write(&path.join(MANIFEST), text, manifest.unredacted).map_err(io)?;
        Ok(StudyDir { path: path.to_path_buf(), manifest })
    }

    /// Opens an experiment directory written by this or an earlier version.
    pub fn open(path: &Path) -> Result<StudyDir, StudyError> {
        let file = path.join(MANIFEST);
        let io = |e| StudyError::Io(file.clone(), e);
        let size = std::fs::metadata(&file).map_err(io)?.len();
        if size > MAX_MANIFEST_BYTES {
            return Err(StudyError::Dir(format!(
                "{}: over {} MiB: not a manifest",
                file.display(),
                MAX_MANIFEST_BYTES >> 20
            )));
        }
        // Read through the cap too: the size of a pipe or device says nothing.
        let text = barrage_metrics::limits::read_capped(&file, MAX_MANIFEST_BYTES).map_err(io)?;
        let manifest: Manifest = serde_json::from_slice(&text)
            .map_err(|e| StudyError::Dir(format!("{}: not an experiment manifest: {e}", file.display())))?;
        if manifest.version > DIR_VERSION {
            return Err(StudyError::Dir(format!(
                "{}: directory format {} is newer than this barrage reads ({DIR_VERSION})",
                file.display(),
                manifest.version
            )));
        }
        Ok(StudyDir { path: path.to_path_buf(), manifest })
    }

    /// Whether `path` is an experiment directory.
    pub fn is_one(path: &Path) -> bool {
        path.join(MANIFEST).is_file()
    }

    /// The results file of a case's repeat, phase and role.
    pub fn file(&self, id: &str, repeat: u32, phase: Option<&str>, role: Role) -> PathBuf {
        let mut name = format!("{id}.r{repeat}");
        if let Some(p) = phase {
            name.push('.');
            name.push_str(p);
        }
        if role == Role::Background {
            name.push_str(".background");
        }
        name.push_str(".brg");
        self.path.join(name)
    }

    /// Where a run is written until it is complete.
    pub fn part(file: &Path) -> PathBuf {
        let mut name = file.as_os_str().to_owned();
        name.push(".part");
        PathBuf::from(name)
    }

    /// The measured runs of a case (and phase) that exist, by repeat: each a results file
    /// or a directory of shard files ([`run_files`] reads either).
    pub fn measured(&self, id: &str, phase: Option<&str>) -> Vec<PathBuf> {
        let repeats = if self.manifest.repeats > 0 { self.manifest.repeats } else { self.count_repeats(id) };
        (1..=repeats).map(|r| self.file(id, r, phase, Role::Measured)).filter(|f| f.exists()).collect()
    }

    /// The background files of a case (and phase) that exist, by repeat.
    pub fn background(&self, id: &str, phase: Option<&str>) -> Vec<PathBuf> {
        (1..=self.manifest.repeats).map(|r| self.file(id, r, phase, Role::Background)).filter(|f| f.is_file()).collect()
    }

    /// A version-1 manifest may lack `repeats`: count the files.
    fn count_repeats(&self, id: &str) -> u32 {
        (1..=10_000).take_while(|r| self.file(id, *r, None, Role::Measured).is_file()).count() as u32
    }

    /// The phases of a case (`[None]` without phases).
    pub fn phases(&self, id: &str) -> Vec<Option<String>> {
        let case = self.manifest.cases.iter().find(|c| c.id == id);
        match case.map(|c| &c.phases) {
            Some(p) if !p.is_empty() => p.iter().map(|p| Some(barrage_plan::phases::name(p).to_string())).collect(),
            _ => vec![None],
        }
    }
}

/// The summaries of the runs at `places` (each as [`run_files`] reads it), in order: a case's
/// repeats, or its backgrounds.
pub fn summaries(places: &[PathBuf]) -> Result<Vec<barrage_metrics::RunSummary>, StudyError> {
    places.iter().map(|p| Ok(barrage_metrics::summary::summarize(&run_files(p)?)?)).collect()
}

/// The results files of a run's place in the directory: the file the experiment wrote, or
/// the run made elsewhere by several machines, a directory of its shards' files
/// (`shard-I.brg`, as the Ansible playbook fetches them). The shards must be one complete
/// split (every shard of I/N once, one plan), or the run is refused in one line naming
/// the place: an experiment has no `--force`, its figures must be whole runs'.
pub fn run_files(place: &Path) -> Result<Vec<PathBuf>, StudyError> {
    if !place.is_dir() {
        return Ok(vec![place.to_path_buf()]);
    }
    let io = |e| StudyError::Io(place.to_path_buf(), e);
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(place).map_err(io)?.flatten().map(|e| e.path()).filter(|p| is_brg(p)).collect();
    files.sort();
    let refuse = |why: String| StudyError::Dir(format!("{}: not one complete split run: {why}", place.display()));
    if files.is_empty() {
        return Err(refuse("no shard files (*.brg) in it".into()));
    }
    let readers = files.iter().map(|f| barrage_metrics::ResultsReader::open(f)).collect::<Result<Vec<_>, _>>()?;
    if let Some(r) = readers.iter().find(|r| r.header().launch.shard.is_none()) {
        return Err(refuse(format!("{} is not a shard (`run --shard I/N`)", r.path().display())));
    }
    let headers: Vec<_> = readers.iter().map(|r| (r.path(), r.header())).collect();
    barrage_metrics::shards::check(&headers).map_err(|why| {
        // The merge's hint names `report --force`, which an experiment does not have.
        refuse(why.split(" (--force").next().unwrap_or(&why).to_string())
    })?;
    Ok(files)
}

fn is_brg(p: &Path) -> bool {
    p.extension().is_some_and(|e| e == "brg")
}

fn is_results(p: &Path) -> bool {
    let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    name.ends_with(".brg") || name.ends_with(".brg.part")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest() -> Manifest {
        Manifest {
            name: "t".into(),
            repeats: 2,
            cases: vec![ManifestCase { id: "TC0".into(), ..Default::default() }],
            ..Default::default()
        }
    }

    #[test]
    fn files_are_named_by_case_repeat_phase_and_role() {
        let d = StudyDir { path: "/x".into(), manifest: manifest() };
        assert_eq!(d.file("TC0", 1, None, Role::Measured), Path::new("/x/TC0.r1.brg"));
        assert_eq!(d.file("TC3", 2, Some("fill"), Role::Background), Path::new("/x/TC3.r2.fill.background.brg"));
        assert_eq!(StudyDir::part(Path::new("/x/TC0.r1.brg")), Path::new("/x/TC0.r1.brg.part"));
    }

    #[test]
    fn create_refuses_old_results_and_a_changed_file_on_resume() {
        let tmp = tempfile::tempdir().unwrap();
        let d = StudyDir::create(tmp.path(), manifest(), false).unwrap();
        assert_eq!(StudyDir::open(tmp.path()).unwrap().manifest.version, DIR_VERSION);
        std::fs::write(d.file("TC0", 1, None, Role::Measured), b"x").unwrap();
        let e = StudyDir::create(tmp.path(), manifest(), false).unwrap_err().to_string();
        assert!(e.contains("--resume"), "{e}");
        StudyDir::create(tmp.path(), manifest(), true).unwrap();
        let changed = Manifest { repeats: 3, ..manifest() };
        let e = StudyDir::create(tmp.path(), changed, true).unwrap_err().to_string();
        assert!(e.contains("changed since the first run"), "{e}");
        assert_eq!(d.measured("TC0", None).len(), 1);
    }

    #[test]
    fn a_version_1_manifest_is_read_and_a_newer_one_refused() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join(MANIFEST), r#"{"name":"old","repeats":1,"cases":[{"id":"TC0","levels":{"f":"a"},"run":["-c","1"],"background":null,"testbed":null}]}"#).unwrap();
        let d = StudyDir::open(tmp.path()).unwrap();
        assert_eq!((d.manifest.version, d.manifest.cases[0].levels["f"].as_str()), (1, "a"));
        std::fs::write(tmp.path().join(MANIFEST), r#"{"version":99}"#).unwrap();
        assert!(StudyDir::open(tmp.path()).unwrap_err().to_string().contains("newer"));
    }
}
