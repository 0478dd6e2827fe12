//! On-disk format versions. A frozen tiny generation per `format_version` lives under
//! tests/fixtures/formats/ (made by `regenerate_format_fixtures` below, see its comment); each
//! must load into exactly what the generator makes today from the same seed, and today's writer
//! must still produce the frozen chunked files byte for byte.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use vegdb::changeset::working::ObjectState;
use vegdb::generate::{generate_into, Scale};
use vegdb::snapshot::columns::RoadNetwork;
use vegdb::snapshot::generation::Generation;
use vegdb::snapshot::manifest::{FileEntry, Manifest};

/// Seed of the frozen fixtures (`vegdb generate --scale tiny --seed 21`).
const SEED: u64 = 21;
/// `created` of the fixtures' manifests (fixed so that regenerating them is reproducible).
const CREATED: &str = "2026-11-01T00:00:00Z";

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/formats")
        .join(name)
}

/// Rewrite the fixtures (run by hand after an intended format change, then review and commit):
/// `cargo test --test formats -- --ignored regenerate_format_fixtures`.
/// - `v1-single-file`: the tiny dataset (seed 21) with one `objects/type-<id>.parquet` per type
///   (the first layout), manifest `format_version: 1`;
/// - `v2-chunked`: `vegdb generate --scale tiny --seed 21` as it is (chunk files
///   `objects/type-<id>-<first id>.parquet`), manifest `format_version: 2`.
///
/// Both manifests get the fixed `created` time above.
#[test]
#[ignore]
fn regenerate_format_fixtures() {
    use vegdb::snapshot::parquet_write::{write_deleted, write_network, write_objects};
    let tmp = tempfile::tempdir().unwrap();
    let generated = generate_into(Scale::Tiny, SEED, tmp.path()).unwrap();
    let manifest = Manifest::read(&generated).unwrap();

    let v2 = fixture("v2-chunked");
    let _ = std::fs::remove_dir_all(&v2);
    for f in &manifest.files {
        let to = v2.join(&f.path);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(generated.join(&f.path), to).unwrap();
    }
    let m2 = Manifest {
        format_version: 2,
        created: CREATED.into(),
        ..manifest.clone()
    };
    write_manifest(&v2, &m2);

    let (g, _) = Generation::load(&generated, &|_| {}).unwrap();
    let v1 = fixture("v1-single-file");
    let _ = std::fs::remove_dir_all(&v1);
    let mut files: Vec<FileEntry> = vec![write_network(&v1, &g.network).unwrap()];
    for d in g.objects.values() {
        files.push(write_objects(&v1, &d.table).unwrap());
    }
    files.push(write_deleted(&v1, &g.deleted).unwrap());
    let m1 = Manifest {
        format_version: 1,
        created: CREATED.into(),
        files,
        ..manifest
    };
    write_manifest(&v1, &m1);
}

fn write_manifest(dir: &Path, m: &Manifest) {
    let text = serde_json::to_string_pretty(m).unwrap();
    std::fs::write(dir.join("MANIFEST.json"), text + "\n").unwrap();
}
