//! Write the current generation of a data directory as Uberiket-shaped NDJSON files (the
//! import's input layout): `cargo run --release --example export_uberiket -- DATA DEST`.
//! Used by `tools/import_bench.sh`; see `vegdb::import::export` for what is written.

use std::path::PathBuf;

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let (Some(data), Some(dest)) = (args.next(), args.next()) else {
        anyhow::bail!("usage: export_uberiket DATA_DIR DEST_DIR");
    };
    let data = vegdb::snapshot::store::DataDir::read_only(PathBuf::from(data));
    let pinned = data.pin_current_or(None)?;
    let started = std::time::Instant::now();
    let (g, _) = vegdb::generation::Generation::load(&pinned.dir, &|_| {})?;
    eprintln!(
        "loaded generation {} in {:.1} s",
        g.id,
        started.elapsed().as_secs_f64()
    );
    let started = std::time::Instant::now();
    let s = vegdb::import::export::export_generation(&g, std::path::Path::new(&dest))?;
    println!(
        "exported {} veglenkesekvenser and {} objects of {} types in {:.1} s",
        s.sequences,
        s.objects.values().sum::<usize>(),
        s.objects.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
