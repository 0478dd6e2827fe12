//! The journal against its promises: results on disk, compaction, torn lines, retention.

use super::*;
use std::io::Write;
use std::sync::Arc;

use super::archive::segment_name;
use crate::changeset::validate::{ObjectResult, Outcome};

fn changeset() -> Changeset {
    serde_json::from_str(r#"{"effektDato":"2026-11-01","datakatalogversjon":"2.38"}"#).unwrap()
}

#[test]
fn large_results_of_finished_changesets_live_on_disk_and_survive_reopening() {
    let tmp = tempfile::tempdir().unwrap();
    let j = Journal::open(tmp.path()).unwrap();
    let r = j
        .register(
            changeset(),
            Record::new("a".into(), "kari".into(), None, 150),
        )
        .unwrap();
    assert_eq!(j.get(&r.id).unwrap().progress, Progress::NotStarted);
    let outcome = Outcome {
        objects: (0..150)
            .map(|i| ObjectResult {
                temp_id: Some(i.to_string()),
                nvdb_id: Some(1000 + i),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    // a refused transition changes nothing
    let refused = j
        .transition("a", |r| r.progress == Progress::Waiting, |_| {})
        .unwrap();
    assert!(matches!(refused, Transition::Refused(_)));
    let changed = j
        .transition(
            "a",
            |r| r.progress == Progress::NotStarted,
            |r| {
                r.progress = Progress::DoneAndVisible;
                r.outcome = Arc::new(outcome.clone());
            },
        )
        .unwrap();
    assert!(matches!(changed, Transition::Changed(_)));
    let slim = j.get("a").unwrap();
    assert!(slim.outcome_elided && slim.outcome.objects.is_empty());
    assert_eq!(*j.get_full("a").unwrap().unwrap().outcome, outcome);
    // interrupted registrations (one file without the other) are dropped at reopening
    std::fs::write(tmp.path().join("b.content.json"), b"{}").unwrap();
    let state = std::fs::read(tmp.path().join("a.state.json")).unwrap();
    std::fs::write(tmp.path().join("c.state.json"), state).unwrap();
    let j = Journal::open(tmp.path()).unwrap();
    assert!(!tmp.path().join("b.content.json").exists());
    assert!(!tmp.path().join("c.state.json").exists());
    assert!(j.get("b").is_none() && j.get("c").is_none());
    assert!(j.get("a").unwrap().outcome_elided);
    assert_eq!(*j.get_full("a").unwrap().unwrap().outcome, outcome);
    assert_eq!(j.content("a").unwrap().id.as_deref(), Some("a"));
}

fn finish(j: &Journal, id: &str, progress: Progress) {
    let changed = j
        .transition(
            id,
            |_| true,
            |r| {
                r.progress = progress;
                r.outcome = Arc::new(Outcome {
                    objects: vec![ObjectResult {
                        temp_id: Some(id.into()),
                        nvdb_id: Some(7),
                        ..Default::default()
                    }],
                    ..Default::default()
                });
            },
        )
        .unwrap();
    assert!(matches!(changed, Transition::Changed(_)));
}

/// What the API shows of every changeset: records with all results, and contents.
fn shown(j: &Journal) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = j
        .list()
        .iter()
        .map(|r| {
            let full = j.get_full(&r.id).unwrap().unwrap();
            let content = j.content(&r.id).unwrap();
            (
                serde_json::to_string(&full).unwrap(),
                serde_json::to_string(&content).unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

fn files(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    v.sort();
    v
}

#[test]
fn compaction_keeps_what_is_shown_and_bounds_the_files() {
    let tmp = tempfile::tempdir().unwrap();
    let policy = Retention {
        compact_after: 10,
        segment_entries: 25,
        ..Retention::default()
    };
    let j = Journal::open_with(tmp.path(), policy).unwrap();
    for i in 0..60 {
        let id = format!("c{i:03}");
        let n = if i % 7 == 0 { 150 } else { 1 }; // some with results kept on disk only
        j.register(changeset(), Record::new(id.clone(), "kari".into(), None, n))
            .unwrap();
        match i % 4 {
            0 => finish(&j, &id, Progress::DoneAndVisible),
            1 => finish(&j, &id, Progress::Rejected),
            2 => finish(&j, &id, Progress::Cancelled),
            _ => {} // stays IKKE_STARTET
        }
    }
    // 15 unfinished (2 files each), segments, fewer than `compact_after` loose finished
    let names = files(tmp.path());
    let loose = names.iter().filter(|n| n.ends_with(".json")).count();
    let segments = names.iter().filter(|n| n.ends_with(".jsonl")).count();
    assert!(loose <= 2 * 15 + 2 * 10, "{names:?}");
    assert!((1..=2).contains(&segments), "{names:?}");
    let before = shown(&j);
    j.compact().unwrap();
    assert_eq!(shown(&j), before, "compaction changes nothing shown");
    assert_eq!(
        files(tmp.path())
            .iter()
            .filter(|n| n.ends_with(".json"))
            .count(),
        2 * 15
    );
    // reopening reads the same from the segments
    drop(j);
    let j = Journal::open_with(tmp.path(), policy).unwrap();
    assert_eq!(shown(&j), before);
    // an unfinished one still changes state, and is compacted once finished
    finish(&j, "c003", Progress::Cancelled);
    j.compact().unwrap();
    assert!(!tmp.path().join("c003.state.json").exists());
    assert_eq!(j.get("c003").unwrap().progress, Progress::Cancelled);
    // a compacted one cannot change any more
    assert!(j.transition("c000", |_| true, |_| {}).is_err());
}

#[test]
fn interrupted_compaction_and_torn_lines_lose_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let policy = Retention {
        compact_after: usize::MAX,
        ..Retention::default()
    };
    let j = Journal::open_with(tmp.path(), policy).unwrap();
    for id in ["a", "b", "c"] {
        j.register(changeset(), Record::new(id.into(), "kari".into(), None, 1))
            .unwrap();
        finish(&j, id, Progress::DoneAndVisible);
    }
    let before = shown(&j);
    // a crash after appending, before removing the loose files: keep the loose copies
    let loose: Vec<(String, Vec<u8>)> = files(tmp.path())
        .into_iter()
        .map(|n| (n.clone(), std::fs::read(tmp.path().join(&n)).unwrap()))
        .collect();
    j.compact().unwrap();
    drop(j);
    for (n, b) in &loose {
        std::fs::write(tmp.path().join(n), b).unwrap();
    }
    // and a torn line at the end of the segment (a crash while appending more)
    let seg = tmp.path().join(segment_name(1));
    let mut f = fs::OpenOptions::new().append(true).open(&seg).unwrap();
    f.write_all(br#"{"record": {"id": "d", "rec"#).unwrap();
    drop(f);
    let j = Journal::open_with(tmp.path(), policy).unwrap();
    assert_eq!(shown(&j), before, "each changeset once, nothing lost");
    assert_eq!(files(tmp.path()), vec![segment_name(1)]);
    // appending after the torn line starts on a fresh line
    j.register(changeset(), Record::new("e".into(), "kari".into(), None, 1))
        .unwrap();
    finish(&j, "e", Progress::Rejected);
    j.compact().unwrap();
    drop(j);
    let j = Journal::open_with(tmp.path(), policy).unwrap();
    assert_eq!(j.list().len(), 4);
    assert_eq!(j.get("e").unwrap().progress, Progress::Rejected);
    assert_eq!(j.content("e").unwrap().id.as_deref(), Some("e"));
}

#[test]
fn retention_drops_whole_old_segments_only() {
    let tmp = tempfile::tempdir().unwrap();
    let policy = Retention {
        keep_days: 30,
        keep_entries: 20,
        compact_after: usize::MAX,
        segment_entries: 10,
    };
    let j = Journal::open_with(tmp.path(), policy).unwrap();
    let old = chrono::Utc::now().timestamp_millis() - 40 * 86_400_000;
    for i in 0..45 {
        let id = format!("r{i:03}");
        let mut r = Record::new(id.clone(), "kari".into(), None, 1);
        if i < 10 {
            r.received_ms = old + i; // the first segment is past keep_days
        }
        j.register(changeset(), r).unwrap();
        finish(&j, &id, Progress::DoneAndVisible);
    }
    j.register(
        changeset(),
        Record::new("open".into(), "kari".into(), None, 1),
    )
    .unwrap();
    j.compact().unwrap();
    // segments of 10: r000-r009 (expired), r010-r019 (surplus: 25 newer), r020-r029,
    // r030-r039, r040-r044 (open segment)
    let ids: Vec<String> = j.list().into_iter().map(|r| r.id).collect();
    assert!(!ids.contains(&"r000".to_string()) && !ids.contains(&"r019".to_string()));
    assert!(ids.contains(&"r020".to_string()) && ids.contains(&"r044".to_string()));
    assert!(
        ids.contains(&"open".to_string()),
        "unfinished ones are never dropped"
    );
    assert_eq!(ids.len(), 25 + 1);
    assert_eq!(
        files(tmp.path())
            .iter()
            .filter(|n| n.ends_with(".jsonl"))
            .count(),
        3
    );
    assert!(j.last_start_seq() == 0);
}

#[test]
fn retention_keeps_changesets_whose_generation_is_not_in_the_store() {
    use std::sync::atomic::{AtomicU64, Ordering};
    let tmp = tempfile::tempdir().unwrap();
    let policy = Retention {
        keep_days: 30,
        keep_entries: 0,
        compact_after: usize::MAX,
        segment_entries: 10,
    };
    let published = Arc::new(AtomicU64::new(0));
    let j = Journal::open_holding(tmp.path(), policy, Some(published.clone())).unwrap();
    for i in 0..25u64 {
        let id = format!("r{i:03}");
        j.register(changeset(), Record::new(id.clone(), "kari".into(), None, 1))
            .unwrap();
        finish(&j, &id, Progress::DoneAndVisible);
        // changeset i went into generation i + 1
        j.transition(&id, |_| true, |r| r.generation = Some(i + 1))
            .unwrap();
    }
    let count = |j: &Journal| j.list().len();
    j.compact().unwrap();
    // past the retention (keep_entries 0), but no generation is in the store yet
    assert_eq!(count(&j), 25);
    // generation 15 is in the store: the first segment (generations 1-10) may go, the second
    // (11-20) not yet
    published.store(15, Ordering::SeqCst);
    j.compact().unwrap();
    assert_eq!(count(&j), 15);
    assert!(j.get("r009").is_none() && j.get("r010").is_some());
    published.store(25, Ordering::SeqCst);
    j.compact().unwrap();
    // the open (last) segment always stays
    assert_eq!(count(&j), 5);
}
