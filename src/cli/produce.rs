//! The producers of generations: `generate`, `import` and `refresh`, each with its progress
//! display and a word when another process owns the data directory (the hand-off).

use std::path::{Path, PathBuf};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

use crate::generate::{self, Scale};
use crate::snapshot::manifest::Manifest;
use crate::snapshot::store::DataDir;

pub(super) fn spinner(msg: &str) -> ProgressBar {
    let pb = ProgressBar::new_spinner();
    pb.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed}] {msg}").expect("static template"),
    );
    pb.enable_steady_tick(Duration::from_millis(120));
    pb.set_message(msg.to_string());
    pb
}

/// `generate` publishes into `--data`: as its owner, or, when a server owns it, by handing the
/// generation to that server, which publishes it in sequence with its changesets.
pub fn run_generate(scale: Scale, seed: u64, data: &Path) -> anyhow::Result<()> {
    use anyhow::Context;
    let data = DataDir::open_for_publishing(data).with_context(|| {
        format!(
            "vegdb generate publishes a generation into {}",
            data.display()
        )
    })?;
    announce_handoff(&data);
    let pb = spinner(&format!(
        "generating {} dataset (seed {seed}): road network",
        scale.name()
    ));
    let report = generate::generate(scale, seed, &data, &|step| {
        pb.set_message(match step {
            "network" => "objects".to_string(),
            "objects" => "writing Parquet".to_string(),
            other => other.to_string(),
        })
    })?;
    pb.finish_and_clear();
    println!(
        "generation {}: {} links ({} segment rows, {:.0} km), {} objects of {} types, {} deleted; history: {} closed versions of {} objects, {} closed link rows; in {:.1} s -> {}",
        report.generation,
        report.links,
        report.segments,
        report.km,
        report.objects,
        report.types,
        report.deleted,
        report.history_versions,
        report.history_objects,
        report.closed_link_rows,
        report.seconds,
        data.generation_dir(report.generation).display()
    );
    Ok(())
}

pub fn run_import(
    source: &str,
    download_dir: Option<PathBuf>,
    data: &Path,
    types: &crate::import::TypeSelection,
    concurrency: u8,
    history: bool,
) -> anyhow::Result<()> {
    use crate::import::download::{download_versions, DownloadOptions, Versions};
    let url = source.starts_with("http://") || source.starts_with("https://");
    if history && !url {
        anyhow::bail!(
            "--history applies to a URL source (it downloads the paged list of every version); a directory import keeps every version its files hold"
        );
    }
    let data = DataDir::open_for_publishing(data)?;
    announce_handoff(&data);
    let source = if url {
        let dest = download_dir.unwrap_or_else(|| data.root.join("import-download"));
        let ids: Vec<u32> = match types {
            crate::import::TypeSelection::Only(ids) => ids.clone(),
            crate::import::TypeSelection::AllKnown => crate::catalog::Catalog::embedded()
                .types
                .iter()
                .map(|t| t.id)
                .collect(),
        };
        let opts = DownloadOptions {
            concurrency: concurrency as usize,
            ..DownloadOptions::default()
        };
        let started = std::time::Instant::now();
        // the newest event ids first, so a later refresh misses nothing
        crate::import::download::download_latest_events(source, &dest, &ids, &opts)?;
        // one progress bar per stream: records, rate, calls, retries
        let bars = indicatif::MultiProgress::new();
        let by_stream: std::sync::Mutex<std::collections::HashMap<String, ProgressBar>> =
            Default::default();
        let versions = if history {
            Versions::All
        } else {
            Versions::Active
        };
        let reports = download_versions(source, &dest, &ids, &opts, versions, &|r| {
            let mut map = by_stream.lock().unwrap_or_else(|e| e.into_inner());
            let pb = map.entry(r.name.clone()).or_insert_with(|| {
                let pb = bars.add(ProgressBar::new_spinner());
                pb.set_style(
                    ProgressStyle::with_template("{spinner} [{elapsed}] {msg}")
                        .expect("static template"),
                );
                pb.enable_steady_tick(Duration::from_millis(200));
                pb
            });
            pb.set_message(format!(
                "{}: {} records ({:.0}/s), {} calls, {} retries",
                r.name,
                r.records,
                r.records as f64 / pb.elapsed().as_secs_f64().max(1e-3),
                r.calls,
                r.retries
            ))
        })?;
        let _ = bars.clear();
        let seconds = started.elapsed().as_secs_f64().max(1e-3);
        for r in &reports {
            println!(
                "downloaded {}: {} records ({:.0}/s over the download) in {} calls ({} retries){}",
                r.name,
                r.records,
                r.records as f64 / seconds,
                r.calls,
                r.retries,
                r.resumed_from
                    .map(|id| format!(", resumed after id {id}"))
                    .unwrap_or_default()
            );
        }
        dest
    } else {
        PathBuf::from(source)
    };
    let source = source.as_path();
    let pb = spinner(&format!("importing {}", source.display()));
    let summary = crate::import::import_dir(source, &data, types, &|step| {
        pb.set_message(format!("importing {}: {step} done", source.display()))
    })?;
    pb.finish_and_clear();
    print!("{}", summary.render());
    Ok(())
}

/// Say when the generation goes to the server that owns the directory.
fn announce_handoff(data: &DataDir) {
    if let Some(owner) = data.handed_to() {
        eprintln!(
            "{} is owned by a running server ({owner}): the generation is handed to it and published in sequence with its changesets",
            data.root.display()
        );
    }
}

/// `vegdb refresh`: the events since the current generation's last event ids, applied.
pub fn run_refresh(source: &str, data: &Path) -> anyhow::Result<()> {
    use crate::import::download::{download_events, DownloadOptions};
    let data = DataDir::open_for_publishing(data)?;
    announce_handoff(&data);
    let origin = format!("vegdb refresh --source {source}");
    let dir = if source.starts_with("http://") || source.starts_with("https://") {
        let current = data
            .current()?
            .ok_or_else(|| anyhow::anyhow!("no generation to refresh: run vegdb import first"))?;
        let manifest = Manifest::read(&data.generation_dir(current))?;
        let mut types: Vec<u32> = manifest
            .files
            .iter()
            .filter_map(|f| f.type_id)
            .chain(
                manifest
                    .last_event_ids
                    .keys()
                    .filter_map(|k| k.strip_prefix("vegobjekter/").and_then(|t| t.parse().ok())),
            )
            .collect();
        types.sort_unstable();
        types.dedup();
        let dest = data.root.join("refresh-download");
        let under = crate::import::refresh::road_system_sequences(&data.generation_dir(current))?;
        let pb = spinner(&format!("downloading events from {source}"));
        let reports = download_events(
            source,
            &dest,
            &manifest.last_event_ids,
            &types,
            &|id| under.get(&id).cloned().unwrap_or_default(),
            &DownloadOptions::default(),
            &|r| {
                pb.set_message(format!(
                    "{}: {} events, {} calls, {} retries",
                    r.name, r.records, r.calls, r.retries
                ))
            },
        )?;
        pb.finish_and_clear();
        for r in reports.iter().filter(|r| r.records > 0 || r.retries > 0) {
            println!(
                "downloaded {}: {} events in {} calls ({} retries)",
                r.name, r.records, r.calls, r.retries
            );
        }
        dest
    } else {
        PathBuf::from(source)
    };
    let summary = crate::import::refresh::refresh_dir(&dir, &data, &origin)?;
    print!("{}", summary.render());
    Ok(())
}
