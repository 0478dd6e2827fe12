//! The commands that move data out of a data directory or between it and an object store:
//! `vegdb export` (GIS files) and `vegdb snapshot push|pull`.

use std::path::{Path, PathBuf};

use crate::generation::Generation;
use crate::snapshot::store::DataDir;

/// `vegdb export`: reads the current generation (read-only, pinned) and writes one type.
pub fn run_export(
    type_id: u32,
    format: crate::export::Format,
    srid: Option<&str>,
    kommune: Vec<u16>,
    out: Option<PathBuf>,
    data: &Path,
) -> anyhow::Result<()> {
    use crate::export::{export, ExportOptions, Format};
    let srid = match srid {
        Some(s) => crate::geo::srid::Srid::parse(s).map_err(|_| {
            anyhow::anyhow!("unknown --srid {s} (32633, 25833, 5973, 6173, 4326, 25832, 25835)")
        })?,
        None => format.default_srid(),
    };
    let ext = match format {
        Format::Fgb => "fgb",
        Format::Geojson => "geojson",
        Format::Geoparquet => "parquet",
    };
    let out = out.unwrap_or_else(|| PathBuf::from(format!("type-{type_id}.{ext}")));
    let data = DataDir::read_only(data);
    let pinned = data.pin_current_or(None)?;
    let started = std::time::Instant::now();
    let (g, _) = Generation::load(&pinned.dir, &|_| {})?;
    let loaded = started.elapsed();
    let opts = ExportOptions {
        type_id,
        format,
        srid,
        municipalities: kommune,
    };
    let r = export(&g, &opts, &out)?;
    println!(
        "exported {} features of type {type_id} (generation {}) to {} ({} bytes, srid {}) in {:.2} s (+ {:.2} s loading)",
        r.features,
        g.id,
        out.display(),
        r.bytes,
        srid.code(),
        (started.elapsed() - loaded).as_secs_f64(),
        loaded.as_secs_f64()
    );
    Ok(())
}

/// `vegdb export --segmentert 105,540`: the overlay of the types over the current network (or
/// `--kommune`'s rows) as GeoParquet.
pub fn run_export_segmented(
    types: &[u32],
    egenskaper: Option<&str>,
    format: crate::export::Format,
    srid: Option<&str>,
    kommune: &[u16],
    out: Option<PathBuf>,
    data: &Path,
) -> anyhow::Result<()> {
    if format != crate::export::Format::Geoparquet {
        anyhow::bail!("--segmentert writes --format geoparquet only");
    }
    if types.is_empty() || types.len() > 10 {
        anyhow::bail!("--segmentert takes 1 to 10 object type ids");
    }
    let srid = match srid {
        Some(s) => crate::geo::srid::Srid::parse(s)
            .map_err(|_| anyhow::anyhow!("unknown --srid {s} (32633, 25833, 4326)"))?,
        None => format.default_srid(),
    };
    let names: Vec<String> = types.iter().map(u32::to_string).collect();
    let out =
        out.unwrap_or_else(|| PathBuf::from(format!("segmentert-{}.parquet", names.join("-"))));
    let data = DataDir::read_only(data);
    let pinned = data.pin_current_or(None)?;
    let started = std::time::Instant::now();
    let (g, _) = Generation::load(&pinned.dir, &|_| {})?;
    let loaded = started.elapsed();
    let values =
        crate::api::read::segmentert::chosen_values(g.catalog, types, egenskaper.unwrap_or(""))
            .map_err(|e| anyhow::anyhow!("--egenskaper: {}", e.message))?;
    let r = crate::export::segmented::export_segmented(&g, types, &values, kommune, srid, &out)?;
    println!(
        "exported {} pieces of the network cut by types {} (generation {}) to {} ({} bytes, srid {}) in {:.2} s (+ {:.2} s loading)",
        r.features,
        names.join(","),
        g.id,
        out.display(),
        r.bytes,
        srid.code(),
        (started.elapsed() - loaded).as_secs_f64(),
        loaded.as_secs_f64()
    );
    Ok(())
}

/// `vegdb snapshot push`.
pub fn run_push(data: &Path, to: &str, generation: Option<u64>) -> anyhow::Result<()> {
    let remote = crate::remote::Remote::open(to)?;
    let data = DataDir::read_only(data);
    let started = std::time::Instant::now();
    let report = crate::remote::runtime()?
        .block_on(crate::remote::push::push(&data, &remote, generation))?;
    let secs = started.elapsed().as_secs_f64();
    println!(
        "generation {} -> {to}: {} file(s) uploaded ({:.1} MB), {} copied in the store, {} already there; CURRENT {} ({:.1} s, {:.1} MB/s)",
        report.generation,
        report.uploaded,
        report.uploaded_bytes as f64 / 1e6,
        report.copied,
        report.present,
        if report.made_current { "moved" } else { "unchanged (the store's is as new or newer)" },
        secs,
        report.uploaded_bytes as f64 / 1e6 / secs.max(1e-9)
    );
    Ok(())
}

/// `vegdb snapshot pull`.
pub fn run_pull(from: &str, data: &Path, generation: Option<u64>) -> anyhow::Result<()> {
    use anyhow::Context;
    let remote = crate::remote::Remote::open(from)?;
    let dir = DataDir::open(data).with_context(|| {
        format!(
            "vegdb snapshot pull writes into {} and needs to own it",
            data.display()
        )
    })?;
    let started = std::time::Instant::now();
    let report =
        crate::remote::runtime()?.block_on(crate::remote::push::pull(&dir, &remote, generation))?;
    let secs = started.elapsed().as_secs_f64();
    if report.already_there {
        println!(
            "generation {} of {from} is already in {} (CURRENT)",
            report.generation,
            data.display()
        );
    } else {
        println!(
            "generation {} <- {from}: {} file(s) downloaded ({:.1} MB), {} taken from local generations ({:.1} s, {:.1} MB/s)",
            report.generation,
            report.downloaded,
            report.downloaded_bytes as f64 / 1e6,
            report.linked,
            secs,
            report.downloaded_bytes as f64 / 1e6 / secs.max(1e-9)
        );
    }
    Ok(())
}
