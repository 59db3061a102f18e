use super::*;
use barrage_metrics::testing::{header, interval, sample};
use barrage_metrics::{Outcome, Recorder, ResultsWriter, RunFooter};

/// A results file of `seconds` one-second intervals, each of 100 requests taking
/// `base_us`, `base_us + step_us`, ... µs.
pub(crate) fn results_file(dir: &Path, name: &str, start_ms: u64, seconds: u32, base_us: u64) -> PathBuf {
    let path = dir.join(name);
    let mut h = header(start_ms);
    h.settings_json = r#"{"plan":{"load":{"closed":{"workers":4,"think_time_s":0.0}},"duration_s":10.0}}"#.into();
    let mut w = ResultsWriter::create(&path, &h).unwrap();
    for i in 0..seconds {
        let mut r = Recorder::new();
        for k in 0..100 {
            r.record(&sample(Duration::from_micros(base_us + k * 10 + u64::from(i)), Outcome::Status(200)));
        }
        w.write_interval(&interval(i, start_ms + u64::from(i) * 1000, r)).unwrap();
    }
    w.finish(&RunFooter { attack_us: u64::from(seconds) * 1_000_000, ..Default::default() }).unwrap();
    path
}

fn entry(path: &Path, env: &Environment) -> Entry {
    Entry::of_files(&[path.to_path_buf()], "run", &[], &[], env).unwrap()
}

fn env() -> Environment {
    Environment { host: "m1".into(), ..Default::default() }
}

#[test]
fn a_run_reads_back_with_its_figures_and_exact_histograms() {
    let dir = tempfile::tempdir().unwrap();
    let a = results_file(dir.path(), "a.brg", 1_000_000, 3, 1000);
    let b = results_file(dir.path(), "b.brg", 2_000_000, 2, 5000);
    let db = dir.path().join("h").join("history.db");
    let mut store = Store::open(&db).unwrap();
    let (ea, eb) = (entry(&a, &env()), entry(&b, &env()));
    let ia = store.record(&ea).unwrap();
    let ib = store.record(&eb).unwrap();
    drop(store);
    let store = Store::open(&db).unwrap();
    let row = store.run(ia).unwrap();
    assert_eq!(row.figures, ea.figures);
    assert_eq!(row.labels, ea.fingerprint.labels);
    assert_eq!(row.series, store.run(ib).unwrap().series, "same plan, same machine: one series");
    // Any percentile, of one run or of both pooled, is the histograms' own.
    let summary = barrage_metrics::summary::summarize(std::slice::from_ref(&a)).unwrap();
    let h = store.histogram(&[ia], false).unwrap();
    assert_eq!(h.len(), 300);
    assert_eq!(h.value_at_quantile(0.99), summary.latency.corrected.p99_us);
    let pooled = store.histogram(&[ia, ib], false).unwrap();
    let both = barrage_metrics::summary::summarize_with(&[a.clone(), b.clone()], true).unwrap();
    assert_eq!(pooled.len(), 500);
    assert_eq!(pooled.value_at_quantile(0.5), both.latency.corrected.p50_us);
    assert_eq!(pooled.value_at_quantile(0.999), both.latency.corrected.p999_us);
    let points = store.points(row.series, "p99", 10).unwrap();
    assert_eq!(points.iter().map(|p| p.run).collect::<Vec<_>>(), vec![ia, ib], "oldest first");
}

#[test]
fn files_that_are_not_its_own_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.db");
    std::fs::write(&junk, b"not sqlite at all, not at all, no").unwrap();
    assert!(Store::open(&junk).is_err());
    // Another program's SQLite file is left alone.
    let other = dir.path().join("other.db");
    Connection::open(&other).unwrap().execute_batch("CREATE TABLE t(x)").unwrap();
    let e = Store::open(&other).err().unwrap().to_string();
    assert!(e.contains("not a barrage history file"), "{e}");
    // A link is not followed.
    let real = dir.path().join("real.db");
    Store::open(&real).unwrap();
    let link = dir.path().join("link.db");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let e = Store::open(&link).err().unwrap().to_string();
    assert!(e.contains("symbolic link"), "{e}");
    // Nor one planted beside it, where SQLite would write.
    let beside = dir.path().join("beside.db");
    std::os::unix::fs::symlink(dir.path().join("victim"), dir.path().join("beside.db-wal")).unwrap();
    let e = Store::open(&beside).err().unwrap().to_string();
    assert!(e.contains("-wal file is not a regular file"), "{e}");
    assert!(!dir.path().join("victim").exists());
    // A newer barrage's file is not changed.
    Connection::open(&real).unwrap().execute_batch("PRAGMA user_version=99").unwrap();
    let e = Store::open(&real).err().unwrap().to_string();
    assert!(e.contains("newer barrage"), "{e}");
    // Created for this user alone.
    use std::os::unix::fs::PermissionsExt;
    let fresh = dir.path().join("d").join("fresh.db");
    Store::open(&fresh).unwrap();
    assert_eq!(std::fs::metadata(&fresh).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(std::fs::metadata(dir.path().join("d")).unwrap().permissions().mode() & 0o777, 0o700);
}

#[test]
fn writers_at_the_same_moment_all_land() {
    let dir = tempfile::tempdir().unwrap();
    let file = results_file(dir.path(), "a.brg", 1_000_000, 2, 1000);
    let db = dir.path().join("history.db");
    let e = entry(&file, &env());
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let (db, e) = (db.clone(), e.clone());
            std::thread::spawn(move || {
                let mut store = Store::open(&db).unwrap();
                for _ in 0..25 {
                    store.record(&e).unwrap();
                }
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    let store = Store::open(&db).unwrap();
    assert_eq!(store.runs(None, 0, 1000).unwrap().len(), 100);
    assert_eq!(store.series().unwrap().len(), 1);
}

#[test]
fn gc_keeps_the_newest_of_each_series_and_every_baseline() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("history.db");
    let mut store = Store::open(&db).unwrap();
    let mut ids = Vec::new();
    for k in 0..6u64 {
        let f = results_file(dir.path(), &format!("{k}.brg"), 1_000_000 + k * 100_000, 1, 1000);
        ids.push(store.record(&entry(&f, &env())).unwrap());
    }
    store.set_baseline("release-1", ids[0]).unwrap();
    assert_eq!(store.gc(2).unwrap(), 3);
    let left: Vec<i64> = store.runs(None, 0, 100).unwrap().iter().map(|r| r.id).collect();
    assert_eq!(left, vec![ids[5], ids[4], ids[0]]);
    assert_eq!(store.baseline("release-1").unwrap(), ids[0]);
    assert!(store.intervals(ids[1]).unwrap().is_empty(), "a removed run's intervals go with it");
    assert!(store.baseline("nope").is_err());
}
