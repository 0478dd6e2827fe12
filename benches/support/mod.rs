//! What several benches share: the generation they run on.

use vegdb::generate::{generate_into, Scale};
use vegdb::generation::Generation;
use vegdb::snapshot::store::DataDir;

/// The current generation of the data dir in `VEGDB_BENCH_DATA` ("national"), else the demo
/// preset (seed 42) generated into a temporary directory ("demo"), with its label.
pub fn load() -> (String, Generation) {
    if let Ok(root) = std::env::var("VEGDB_BENCH_DATA") {
        let data = DataDir::read_only(root);
        let dir = data.generation_dir(data.current().unwrap().expect("CURRENT"));
        return (
            "national".into(),
            Generation::load(&dir, &|_| {}).unwrap().0,
        );
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = generate_into(Scale::Demo, 42, tmp.path()).unwrap();
    let g = Generation::load(&dir, &|_| {}).unwrap().0;
    std::mem::forget(tmp);
    ("demo".into(), g)
}
