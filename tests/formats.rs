//! On-disk format versions. A frozen tiny data directory per `format_version` lives under
//! tests/fixtures/formats/ (made by `regenerate_format_fixtures` below, see its comment); each
//! must load into exactly the data of today's format's fixture (the tiny dataset of one seed),
//! today's writers must still produce the frozen files byte for byte from that data, and the first changeset on an older
//! layout (a chunked generation labelled version 1, a single-file generation) and on the
//! committed demo must leave every untouched row as it was.
#![cfg_attr(test, allow(clippy::unwrap_used))] // tests may unwrap

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use vegdb::changeset::working::ObjectState;
use vegdb::generate::{generate_into, Scale};
use vegdb::generation::Generation;
use vegdb::snapshot::columns::RoadNetwork;
use vegdb::snapshot::manifest::{FileEntry, Manifest};

/// Seed of the frozen fixtures (`vegdb generate --scale tiny --seed 21`).
const SEED: u64 = 21;
/// `created` of the fixtures' manifests (fixed so that regenerating them is reproducible).
const CREATED: &str = "2026-11-01T00:00:00Z";

/// A fixture's data directory (CURRENT + gen-000001, like snapshots/demo).
fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/formats")
        .join(name)
}

fn fixture_generation(name: &str) -> PathBuf {
    fixture(name).join("gen-000001")
}

/// Today's format's fixture (format 7: history, the network attributes, the road system
/// references and the road system objects' ids, none in this data).
const TODAY: &str = "v7-road-system-objects";
/// The fixture before `TODAY`, whose loaded data `rewrite_todays_fixture` writes anew.
const PREVIOUS: &str = "v6-road-system-references";

/// Make the fixture of today's format (`TODAY`: `vegdb generate --scale tiny --seed 21` as it
/// is, with its history, the manifest's `created` the fixed time above). Run by hand after an
/// intended format change, as a NEW version's directory (the older ones, `v1-single-file`,
/// `v2-chunked`, `v3-open` (format 3 before placements had `lanes`), `v3-lanes` (format 3,
/// no history), `v4-history` (format 4, no network attributes) and `v5-network-attributes`
/// (format 5, no road system references), were written by older
/// writers and stay as they are: they pin that old generations still load), then review and
/// commit:
/// `cargo test --test formats -- --ignored regenerate_format_fixtures`. The older fixtures
/// must load into the new one's data: when the generator's data has changed since `TODAY` was
/// made, write `TODAY`'s loaded data with the new writer instead (as
/// `todays_writer_reproduces_the_frozen_files` does).
#[test]
#[ignore]
fn regenerate_format_fixtures() {
    let tmp = tempfile::tempdir().unwrap();
    let generated = generate_into(Scale::Tiny, SEED, tmp.path()).unwrap();
    let manifest = Manifest::read(&generated).unwrap();
    let name = TODAY;
    let to_dir = fixture_generation(name);
    let _ = std::fs::remove_dir_all(fixture(name));
    for f in &manifest.files {
        let to = to_dir.join(&f.path);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(generated.join(&f.path), to).unwrap();
    }
    let m = Manifest {
        created: CREATED.into(),
        ..manifest
    };
    write_manifest(&to_dir, &m);
    std::fs::write(fixture(name).join("CURRENT"), "1\n").unwrap();
}

fn write_manifest(dir: &Path, m: &Manifest) {
    let text = serde_json::to_string_pretty(m).unwrap();
    std::fs::write(dir.join("MANIFEST.json"), text + "\n").unwrap();
}

/// Every stored value of two generations is equal: the network (all columns), each type's
/// objects row by row, the deleted objects; with `history`, also the closed versions and the
/// network's closed rows.
fn assert_same_data(
    got: &Generation,
    want: &Generation,
    what: &str,
    history: bool,
    attributes: Attributes,
) {
    let expected = |n: &RoadNetwork| match attributes {
        Attributes::Stored => n.clone(),
        Attributes::SystemRefsDerived => with_derived_system_refs(n),
        Attributes::Derived => with_derived_attributes(n),
    };
    assert_same_network(&got.network, &expected(&want.network), what);
    if history {
        assert_same_network(&got.network_history, &expected(&want.network_history), what);
        assert_eq!(
            got.history.keys().collect::<Vec<_>>(),
            want.history.keys().collect::<Vec<_>>(),
            "{what}: types with history"
        );
        for (t, h) in &want.history {
            let a = &got.history[t];
            assert_eq!(a.len(), h.len(), "{what}: closed versions of type {t}");
            assert!(
                (0..a.len()).all(|r| same_row(a, r, h, r)),
                "{what}: closed versions of type {t}"
            );
        }
    } else {
        assert!(got.history.is_empty() && got.network_history.is_empty());
    }
    assert_eq!(
        got.objects.keys().collect::<Vec<_>>(),
        want.objects.keys().collect::<Vec<_>>(),
        "{what}: types"
    );
    for (t, d) in &want.objects {
        let (a, b) = (&got.objects[t].table, &d.table);
        assert_eq!(a.len(), b.len(), "{what}: rows of type {t}");
        for r in 0..a.len() {
            assert!(
                same_row(a, r, b, r),
                "{what}: type {t} row {r} (id {})",
                a.id[r]
            );
        }
    }
    assert!(
        format!("{:?}", got.deleted) == format!("{:?}", want.deleted),
        "{what}: deleted objects differ"
    );
}

/// Two rows hold the same object (compared printed: surfaces separate rings with NaN).
fn same_row(
    a: &vegdb::snapshot::columns::ObjectTable,
    ra: usize,
    b: &vegdb::snapshot::columns::ObjectTable,
    rb: usize,
) -> bool {
    format!("{:?}", ObjectState::from_row(a, ra)) == format!("{:?}", ObjectState::from_row(b, rb))
}

/// Whether a generation's files hold the network attributes (format 5) or it reads them
/// derived.
#[derive(Clone, Copy)]
enum Attributes {
    Stored,
    /// Format 5: the network attributes stored, the road system references derived.
    SystemRefsDerived,
    Derived,
}

/// `n` as a generation written before format 5 reads: the network attributes derived from the
/// other columns (`RoadNetwork::derive_absent`) or defaulted.
fn with_derived_attributes(n: &RoadNetwork) -> RoadNetwork {
    use vegdb::snapshot::columns::{DETAIL_ABSENT, SEPARATE_NO, TRAFFIC_ABSENT};
    let mut n = n.clone();
    n.detail_level.fill(DETAIL_ABSENT);
    n.traffic_group.fill(TRAFFIC_ABSENT);
    n.side_facility.fill(false);
    n.separate_carriageways.fill(SEPARATE_NO);
    without_system_refs(&mut n);
    n.derive_absent();
    n
}

/// The road system references as a file before format 6 reads them: absent (the markers
/// `derive_absent` replaces).
fn without_system_refs(n: &mut RoadNetwork) {
    use vegdb::snapshot::columns::{METRE_ABSENT, SECTION_ABSENT, SYSTEM_ABSENT};
    n.system_category.fill(SYSTEM_ABSENT);
    n.system_phase.fill(SYSTEM_ABSENT);
    n.system_number.fill(METRE_ABSENT);
    n.section.fill(SECTION_ABSENT);
    n.subsection.fill(SECTION_ABSENT);
    n.section_from_m.fill(METRE_ABSENT);
    n.section_to_m.fill(METRE_ABSENT);
    n.section_against.fill(false);
    n.arm.fill(false);
}

/// `n` as a format 5 generation reads: the road system references derived from the v2
/// reference (`RoadNetwork::derive_absent`).
fn with_derived_system_refs(n: &RoadNetwork) -> RoadNetwork {
    let mut n = n.clone();
    without_system_refs(&mut n);
    n.derive_absent();
    n
}

fn assert_same_network(a: &RoadNetwork, b: &RoadNetwork, what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: network rows");
    // every column, exactly (Debug prints f64 round-trip exact)
    assert!(
        format!("{a:?}") == format!("{b:?}"),
        "{what}: network differs"
    );
}

/// Every frozen format version loads into the same data as today's format's fixture: all of
/// them hold the tiny dataset of seed 21 as the generator made it when `TODAY` was frozen (the
/// generator's data has changed since, e.g. objects starting no earlier than their links:
/// the fixtures pin the formats, `tests/generator.rs` the generator's round trip).
#[test]
fn each_format_version_loads_into_the_same_data() {
    let (want, _) = Generation::load(&fixture_generation(TODAY), &|_| {}).unwrap();
    assert!(want.object_count() > 1000 && want.network.len() > 1000);
    for (name, version, chunked) in [
        ("v1-single-file", 1, false),
        ("v2-chunked", 2, true),
        ("v3-open", 3, true),
        ("v3-lanes", 3, true),
        ("v4-history", 4, true),
        ("v5-network-attributes", 5, true),
        (PREVIOUS, 6, true),
        (TODAY, 7, true),
    ] {
        let dir = fixture_generation(name);
        let m = Manifest::read(&dir).unwrap();
        assert_eq!(m.format_version, version, "{name}");
        assert_eq!(m.is_chunked(), chunked, "{name}");
        let object_files: Vec<&FileEntry> =
            m.files.iter().filter(|f| f.type_id.is_some()).collect();
        assert_eq!(
            object_files.len(),
            want.objects.len(),
            "{name}: one file per type"
        );
        for f in &object_files {
            let t = f.type_id.unwrap();
            let expected = match version {
                3..=7 => format!("objects/type={t}/part-{:015}.parquet", f.first_id.unwrap()),
                2 => format!("objects/type-{t}-{:015}.parquet", f.first_id.unwrap()),
                _ => format!("objects/type-{t}.parquet"),
            };
            assert_eq!(f.path, expected, "{name}");
        }
        let (got, _) = Generation::load(&dir, &|_| {}).unwrap();
        // before format 5 the network attributes are not in the files: derived, as documented
        let attributes = match version {
            ..5 => Attributes::Derived,
            5 => Attributes::SystemRefsDerived,
            _ => Attributes::Stored,
        };
        assert_same_data(&got, &want, name, version >= 4, attributes);
        assert_eq!(got.next_object_id, want.next_object_id, "{name}");
    }
}

fn hashes(files: &[FileEntry]) -> BTreeMap<String, (u64, u64, String)> {
    files
        .iter()
        .map(|f| (f.path.clone(), (f.rows, f.bytes, f.sha256.clone())))
        .collect()
}

/// Write generation `g`'s tables and history with today's writers into a fresh data
/// directory in `tmp`; the published generation's directory.
fn write_with_todays_writer(g: Generation, tmp: &Path) -> PathBuf {
    use vegdb::snapshot::builder::{Description, GenerationBuilder};
    use vegdb::snapshot::store::DataDir;
    let data = DataDir::open(tmp).unwrap();
    let mut b = GenerationBuilder::fresh(&data, g.catalog, g.areas).unwrap();
    let tables: Vec<&vegdb::snapshot::columns::ObjectTable> =
        g.objects.values().map(|d| &*d.table).collect();
    b.write_tables(&g.network, tables, Some(&g.deleted))
        .unwrap();
    b.write_history(
        &g.network,
        &g.network_history,
        g.history.values().map(|h| &**h),
    )
    .unwrap();
    b.publish(&data, Description::default()).unwrap().dir
}

/// Make `TODAY` from `PREVIOUS`' loaded data written by today's writers (what to do after a
/// format change when the generator's data has changed since `PREVIOUS` was made, so that
/// every older fixture still loads into `TODAY`'s data); the manifest keeps `PREVIOUS`' origin
/// and `created`. Run by hand, then review and commit:
/// `cargo test --test formats -- --ignored rewrite_todays_fixture`.
#[test]
#[ignore]
fn rewrite_todays_fixture() {
    let (g, _) = Generation::load(&fixture_generation(PREVIOUS), &|_| {}).unwrap();
    let previous = Manifest::read(&fixture_generation(PREVIOUS)).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let written = write_with_todays_writer(g, tmp.path());
    let manifest = Manifest::read(&written).unwrap();
    let to_dir = fixture_generation(TODAY);
    let _ = std::fs::remove_dir_all(fixture(TODAY));
    for f in &manifest.files {
        let to = to_dir.join(&f.path);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(written.join(&f.path), to).unwrap();
    }
    let m = Manifest {
        created: CREATED.into(),
        origin: previous.origin,
        ..manifest
    };
    write_manifest(&to_dir, &m);
    std::fs::write(fixture(TODAY).join("CURRENT"), "1\n").unwrap();
}

/// Today's writer reproduces the frozen files of today's format (`TODAY`) byte for byte from
/// the data they hold (same columns, types, row order, row groups, GeoParquet metadata,
/// dictionary, history), so the format does not change unnoticed.
#[test]
fn todays_writer_reproduces_the_frozen_files() {
    let (g, _) = Generation::load(&fixture_generation(TODAY), &|_| {}).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let dir = write_with_todays_writer(g, tmp.path());
    let frozen = Manifest::read(&fixture_generation(TODAY)).unwrap();
    let now = Manifest::read(&dir).unwrap();
    assert_eq!(
        now.format_version, 7,
        "generate writes the road system objects layout"
    );
    assert!(now.files.iter().any(|f| f.path.starts_with("history/")));
    assert_eq!(hashes(&now.files), hashes(&frozen.files), "open layout");
}

#[test]
fn unknown_format_versions_are_refused_when_loading() {
    let tmp = tempfile::tempdir().unwrap();
    let src = fixture_generation("v3-open");
    let text = std::fs::read_to_string(src.join("MANIFEST.json")).unwrap();
    let mut m: serde_json::Value = serde_json::from_str(&text).unwrap();
    m["format_version"] = 8.into();
    std::fs::write(tmp.path().join("MANIFEST.json"), m.to_string()).unwrap();
    let e = Generation::load(tmp.path(), &|_| {})
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("format version 8 is newer than this build reads"),
        "{e}"
    );
}

/// Drive the writer as `vegdb serve` does: returns a closure applying one changeset to the
/// store's current generation and waiting until it is visible.
fn run_changeset(writer: &vegdb::changeset::writer::Writer, cs: serde_json::Value) {
    use vegdb::changeset::journal::{Progress, Record};
    let cs = serde_json::from_value(cs).unwrap();
    let r = writer
        .journal
        .register(
            cs,
            Record::new(uuid::Uuid::new_v4().to_string(), "t".into(), None, 1),
        )
        .unwrap();
    writer.start_changeset(&r.id).unwrap();
    let started = std::time::Instant::now();
    loop {
        let p = writer.journal.get(&r.id).unwrap().progress;
        if p.is_final() {
            assert_eq!(p, Progress::DoneAndVisible);
            return;
        }
        assert!(
            started.elapsed().as_secs() < 120,
            "changeset never finished"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// Update one Skiltpunkt's text property (10854) to "endret".
fn update_sign(id: u64, version: u32) -> serde_json::Value {
    serde_json::json!({"effektDato": "2026-11-01", "datakatalogversjon": "2.38",
        "delvisOppdater": {"vegObjekter": [{"typeId": 95, "nvdbId": id, "versjon": version,
        "egenskaper": [{"typeId": 10854, "verdi": ["endret"], "operasjon": "oppdater"}]}]}})
}

/// Start a data directory from `source` (as `serve` does with the demo), apply one changeset
/// touching one sign (type 95) through the writer, and check the new generation against the
/// old one: the touched object changed, every other object and every link reads back as
/// before, from the files on disk. Returns the old and new manifests.
fn first_write_keeps_untouched_rows(source: &Path) -> (Manifest, Manifest) {
    use std::sync::Arc;
    use vegdb::changeset::writer::Writer;
    use vegdb::generation::GenerationStore;
    use vegdb::snapshot::store::DataDir;

    let tmp = tempfile::tempdir().unwrap();
    let data = DataDir::open(tmp.path()).unwrap();
    let first = data.init_from(&DataDir::read_only(source)).unwrap();
    let (old, _) = Generation::load(&data.generation_dir(first), &|_| {}).unwrap();
    let old_manifest = old.manifest.clone();
    let signs = &old.objects[&95].table;
    let row = signs.len() / 2;
    let (touched, version) = (signs.id[row], signs.version[row]);
    let before = ObjectState::from_row(signs, row);
    // the oracle: the old generation's rows, read again from its files afterwards
    let store = Arc::new(GenerationStore::new(old));
    let writer = Writer::start(data.clone(), store.clone()).unwrap();
    run_changeset(&writer, update_sign(touched, version));
    let published = store.current();
    assert_ne!(published.id, first, "a new generation");

    let (old, _) = Generation::load(&data.generation_dir(first), &|_| {}).unwrap();
    let (new, _) = Generation::load(&published.dir, &|_| {}).unwrap();
    assert_same_network(&new.network, &old.network, "links");
    assert!(
        format!("{:?}", new.deleted) == format!("{:?}", old.deleted),
        "deleted objects differ"
    );
    assert_eq!(new.object_count(), old.object_count());
    let mut seen_touched = false;
    for (t, d) in &old.objects {
        let (a, b) = (&d.table, &new.objects[t].table);
        assert_eq!(a.id, b.id, "ids of type {t}");
        for r in 0..a.len() {
            if a.id[r] != touched {
                assert!(
                    same_row(a, r, b, r),
                    "type {t} row {r} (id {}) is untouched",
                    a.id[r]
                );
                continue;
            }
            let (was, now) = (ObjectState::from_row(a, r), ObjectState::from_row(b, r));
            {
                seen_touched = true;
                assert_eq!(was, before);
                assert_eq!(now.version, was.version + 1, "the touched sign's version");
                assert_eq!(
                    now.values.get(&10854),
                    Some(&vegdb::generate::values::Value::Text("endret".into()))
                );
                assert_ne!(was.values.get(&10854), now.values.get(&10854));
                assert_eq!(now.placements, was.placements);
            }
        }
    }
    assert!(seen_touched);
    // what the writer swapped in is what is on disk
    for (t, d) in &new.objects {
        let live = &published.objects[t].table;
        assert_eq!(d.table.len(), live.len());
        for r in 0..live.len() {
            assert!(
                same_row(&d.table, r, live, r),
                "type {t} row {r}: disk and memory"
            );
        }
    }
    (old_manifest, new.manifest.clone())
}

/// The path every default `vegdb serve` takes: the committed demo (format version 7, with its
/// history, network attributes, road system references and their objects' ids, since it was
/// generated anew) copied into a fresh data directory, then a first changeset. The new
/// generation stays format version 7, shares every chunk but the touched one, and reads back
/// identical elsewhere.
#[test]
fn the_demo_stays_open_data_on_its_first_write() {
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("snapshots/demo");
    let (old, new) = first_write_keeps_untouched_rows(&demo);
    assert_eq!(old.format_version, 7, "the committed demo is format 7");
    assert_eq!(new.format_version, 7);
    assert_only_type_95_rewritten(&old, &new);
}

/// A chunked generation whose manifest says format version 1 (written before version 2
/// existed, as the committed demo was until `snapshot upgrade`): made from `v2-chunked` with
/// the older number. Its first write gives format version 2 (the untouched chunks keep their
/// names) and only the touched chunk is rewritten.
#[test]
fn a_chunked_version_1_generation_converts_on_its_first_write() {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&fixture("v2-chunked"), tmp.path());
    let gen = tmp.path().join("gen-000001");
    let m = Manifest::read(&gen).unwrap();
    write_manifest(
        &gen,
        &Manifest {
            format_version: 1,
            ..m
        },
    );
    let (old, new) = first_write_keeps_untouched_rows(tmp.path());
    assert_eq!(old.format_version, 1);
    assert!(old.is_chunked(), "written in chunks");
    assert_eq!(new.format_version, 2);
    assert!(new.is_chunked());
    assert_only_type_95_rewritten(&old, &new);
}

fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dst.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), dst.join(e.file_name())).unwrap();
        }
    }
}

fn assert_only_type_95_rewritten(old: &Manifest, new: &Manifest) {
    let old_files = hashes_by_path(old);
    let rewritten: Vec<&FileEntry> = new
        .files
        .iter()
        .filter(|f| f.type_id.is_some() && old_files.get(&f.path) != Some(&f.sha256))
        .collect();
    assert_eq!(rewritten.len(), 1, "only the touched chunk: {rewritten:?}");
    assert_eq!(rewritten[0].type_id, Some(95));
}

/// A single-file (version 1) generation: the touched type is rewritten as chunks, the others
/// keep their single files (shared), so the generation stays version 1 with its layout read
/// per file, and reads back identical apart from the touched object.
#[test]
fn a_single_file_generation_converts_the_touched_type_on_its_first_write() {
    let (old, new) = first_write_keeps_untouched_rows(&fixture("v1-single-file"));
    assert_eq!(old.format_version, 1);
    assert!(!old.is_chunked());
    assert_eq!(
        new.format_version, 1,
        "untouched types are still single files"
    );
    let old_files = hashes_by_path(&old);
    for f in new.files.iter().filter(|f| f.type_id.is_some()) {
        if f.type_id == Some(95) {
            assert!(
                f.first_id.is_some(),
                "the touched type is chunked: {}",
                f.path
            );
            assert!(!old_files.contains_key(&f.path));
        } else {
            assert_eq!(f.first_id, None, "{}", f.path);
            assert_eq!(
                old_files.get(&f.path),
                Some(&f.sha256),
                "shared: {}",
                f.path
            );
        }
    }
}

fn hashes_by_path(m: &Manifest) -> BTreeMap<String, String> {
    m.files
        .iter()
        .map(|f| (f.path.clone(), f.sha256.clone()))
        .collect()
}

/// A generation of today's format stays so through the writer: only the touched chunk and
/// the touched type's history (the update closed a version) are rewritten (in the open
/// layout), every other file, the network, the other types' history and the data dictionary
/// are shared with the parent.
#[test]
fn an_open_generation_stays_open_through_the_writer() {
    let (old, new) = first_write_keeps_untouched_rows(&fixture(TODAY));
    assert_eq!(old.format_version, 7);
    assert_eq!(new.format_version, 7);
    let old_files = hashes_by_path(&old);
    let rewritten: Vec<&FileEntry> = new
        .files
        .iter()
        .filter(|f| old_files.get(&f.path) != Some(&f.sha256))
        .collect();
    let paths: Vec<&str> = rewritten.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(
        rewritten.len(),
        3,
        "the touched chunk, its type's history and changesets.json: {paths:?}"
    );
    assert!(paths.contains(&"changesets.json"), "{paths:?}");
    assert!(
        paths.contains(&"history/type=95/versions.parquet"),
        "{paths:?}"
    );
    let chunk = rewritten.iter().find(|f| f.type_id.is_some()).unwrap();
    assert_eq!(chunk.type_id, Some(95));
    assert!(
        chunk.path.starts_with("objects/type=95/part-"),
        "{}",
        chunk.path
    );
    let history = old_files
        .keys()
        .filter(|f| f.starts_with("history/") && !f.starts_with("history/type=95/"));
    for f in [
        "dictionary.json",
        "DICTIONARY.md",
        "network/links.parquet",
        "network/history.parquet",
    ]
    .into_iter()
    .chain(history.map(String::as_str))
    {
        assert!(
            old_files.contains_key(f) && new.files.iter().any(|n| n.path == f),
            "{f}"
        );
    }
}

/// The coordinates of an ISO WKB Point/LineString/MultiLineString Z (a test-side decoder).
fn wkb_coords(b: &[u8]) -> Vec<[f64; 3]> {
    let kind = u32::from_le_bytes(b[1..5].try_into().unwrap());
    let mut out = Vec::new();
    if kind == 1005 {
        let n = u32::from_le_bytes(b[5..9].try_into().unwrap()) as usize;
        let mut at = 9;
        for _ in 0..n {
            let k = vegdb::geo::wkb::decode_into(&b[at..], &mut out).unwrap();
            at += 9 + 24 * k;
        }
    } else {
        vegdb::geo::wkb::decode_into(b, &mut out).unwrap();
    }
    out
}

/// Every object row of a version 3 generation's files, by type: (id, located?, WKB, length_m,
/// municipalities) in file order, and each file's row groups as (rows, bbox from the Parquet
/// column statistics).
type FileRows = Vec<(u64, bool, Option<Vec<u8>>, f64, Vec<(i32, f64)>)>;
type TypeFiles = BTreeMap<u32, (FileRows, Vec<(usize, [f64; 4])>)>;
fn open_rows(dir: &Path) -> TypeFiles {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float64Type, Int32Type, Int64Type};
    use arrow_array::Array;
    let m = Manifest::read(dir).unwrap();
    let mut out: TypeFiles = BTreeMap::new();
    for f in m.files.iter().filter(|f| f.type_id.is_some()) {
        let path = dir.join(&f.path);
        let entry = out.entry(f.type_id.unwrap()).or_default();
        for b in vegdb::snapshot::parquet_read::read_batches(&path).unwrap() {
            let ids = b["id"].as_primitive::<Int64Type>();
            let located = b["geometry_located"].as_boolean();
            let geom = b["geometry"].as_binary::<i32>();
            let length = b["length_m"].as_primitive::<Float64Type>();
            let munis = b["municipalities"].as_list::<i32>();
            for r in 0..b.num_rows() {
                let ms = munis.value(r);
                let ms = ms.as_struct();
                let k = ms.column(0).as_primitive::<Int32Type>();
                let l = ms.column(1).as_primitive::<Float64Type>();
                entry.0.push((
                    ids.value(r) as u64,
                    located.value(r),
                    (!geom.is_null(r)).then(|| geom.value(r).to_vec()),
                    length.value(r),
                    (0..k.len()).map(|i| (k.value(i), l.value(i))).collect(),
                ));
            }
        }
        let reader =
            parquet::file::reader::SerializedFileReader::new(std::fs::File::open(&path).unwrap())
                .unwrap();
        use parquet::file::reader::FileReader;
        for rg in reader.metadata().row_groups() {
            let stat = |name: &str, min: bool| -> f64 {
                let c = rg
                    .columns()
                    .iter()
                    .find(|c| c.column_path().string() == name)
                    .unwrap();
                match c.statistics().unwrap() {
                    parquet::file::statistics::Statistics::Double(s) => {
                        if min {
                            *s.min_opt().unwrap()
                        } else {
                            *s.max_opt().unwrap()
                        }
                    }
                    other => panic!("{name}: {other:?}"),
                }
            };
            entry.1.push((
                rg.num_rows() as usize,
                [
                    stat("bbox.xmin", true),
                    stat("bbox.ymin", true),
                    stat("bbox.xmax", false),
                    stat("bbox.ymax", false),
                ],
            ));
        }
    }
    out
}

/// The version 3 files carry, per object, what the API serves: the located geometry equals
/// `Generation::feature`'s (engineer geo's feature view, the API's `geometri`) coordinate for
/// coordinate, own geometries are marked as such, `length_m` is the engine's located length,
/// and `municipalities` lists exactly the municipalities whose bitmap (what `/statistikk
/// ?kommune=` counts) holds the object, with lengths summing to `length_m`.
#[test]
fn open_files_carry_the_api_geometry_and_the_statistics_inputs() {
    use vegdb::area::AreaKind;
    use vegdb::generation::feature::FeatureOptions;
    use vegdb::generation::rows::ObjectRow;
    let dir = fixture_generation(TODAY);
    let (g, _) = Generation::load(&dir, &|_| {}).unwrap();
    let files = open_rows(&dir);
    let mut located_lines = 0;
    for (t, (rows, _)) in &files {
        let d = &g.objects[t];
        assert_eq!(rows.len(), d.table.len(), "type {t}");
        for (id, located, wkb, length, munis) in rows {
            let row = d.table.row_of(*id).unwrap();
            let f = g
                .feature(ObjectRow::new(&d.table, row), &FeatureOptions::default())
                .unwrap();
            assert_eq!(*located, !f.own_geometry, "type {t} object {id}");
            assert_eq!(wkb.is_some(), f.geometry.is_some(), "type {t} object {id}");
            if *located {
                if let (Some(w), Some(geom)) = (wkb, &f.geometry) {
                    let want: Vec<[f64; 3]> = geom.coords().copied().collect();
                    assert_eq!(wkb_coords(w), want, "type {t} object {id}");
                    located_lines += usize::from(want.len() > 1);
                }
            }
            assert!(
                (length - d.index().length_m[row]).abs() < 1e-6,
                "type {t} object {id}: {length} vs {}",
                d.index().length_m[row]
            );
            let sum: f64 = munis.iter().map(|m| m.1).sum();
            assert!((sum - length).abs() < 1e-6);
            let in_bitmaps: Vec<i32> = d
                .index()
                .areas
                .iter()
                .filter(|((kind, _), rows)| {
                    *kind == AreaKind::Municipality && rows.contains(row as u32)
                })
                .map(|((_, k), _)| *k as i32)
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            let listed: Vec<i32> = munis.iter().map(|m| m.0).collect();
            assert_eq!(listed, in_bitmaps, "type {t} object {id}");
        }
    }
    assert!(
        located_lines > 1000,
        "line-placed objects have lines: {located_lines}"
    );
    // Fartsgrense (105) is line-placed: every object has a line
    assert!(files[&105].0.iter().all(|r| r.1 && r.2.is_some()));
}

/// Rows in spatial order make row groups a bbox read can skip: over windows around every
/// 50th object of the types with at least three row groups, the row groups whose bbox
/// statistics meet the window are at most 3/4 of all (a reader skips the rest), no more than
/// the same rows would give in id order (groups of the same sizes; the generator's ids are
/// already laid out along roads, so id order is a strong baseline), and never miss a row
/// whose box meets the window.
#[test]
fn spatial_row_order_lets_bbox_reads_skip_row_groups() {
    let dir = fixture_generation(TODAY);
    let files = open_rows(&dir);
    let (g, _) = Generation::load(&dir, &|_| {}).unwrap();
    let (mut spatial, mut by_id, mut windows, mut total) = (0usize, 0usize, 0usize, 0usize);
    for (t, (rows, groups)) in files.iter().filter(|(_, (_, groups))| groups.len() >= 3) {
        // each row's box, in file order and in id order
        let boxes: Vec<[f64; 4]> = rows
            .iter()
            .map(|r| {
                let c = wkb_coords(r.2.as_ref().unwrap());
                c.iter()
                    .fold([f64::MAX, f64::MAX, f64::MIN, f64::MIN], |b, p| {
                        [
                            b[0].min(p[0]),
                            b[1].min(p[1]),
                            b[2].max(p[0]),
                            b[3].max(p[1]),
                        ]
                    })
            })
            .collect();
        let mut order: Vec<usize> = (0..rows.len()).collect();
        order.sort_by_key(|&i| rows[i].0);
        let meets = |a: &[f64; 4], b: &[f64; 4]| {
            a[0] <= b[2] && b[0] <= a[2] && a[1] <= b[3] && b[1] <= a[3]
        };
        let union = |idx: &mut dyn Iterator<Item = usize>| {
            idx.fold([f64::MAX, f64::MAX, f64::MIN, f64::MIN], |b, i| {
                let p = boxes[i];
                [
                    b[0].min(p[0]),
                    b[1].min(p[1]),
                    b[2].max(p[2]),
                    b[3].max(p[3]),
                ]
            })
        };
        let mut id_groups = Vec::new();
        let mut at = 0;
        for (n, _) in groups {
            id_groups.push(union(&mut order[at..at + n].iter().copied()));
            at += n;
        }
        for i in (0..rows.len()).step_by(50) {
            let c = boxes[i];
            let w = [c[0] - 500.0, c[1] - 500.0, c[2] + 500.0, c[3] + 500.0];
            let mut at = 0;
            for (n, stats) in groups {
                let hit = meets(stats, &w);
                spatial += usize::from(hit);
                // statistics are sound: no row meeting the window is in a skipped group
                assert!(
                    hit || !(at..at + n).any(|r| meets(&boxes[r], &w)),
                    "type {t}"
                );
                at += n;
            }
            by_id += id_groups.iter().filter(|b| meets(b, &w)).count();
            total += groups.len();
            windows += 1;
        }
        assert_eq!(g.objects[t].table.len(), rows.len());
    }
    assert!(windows > 20, "{windows} windows");
    eprintln!(
        "row groups read: {spatial} in spatial order, {by_id} in id order, of {total} ({windows} windows)"
    );
    assert!(
        spatial * 4 <= total * 3,
        "spatial order reads {spatial} of {total} row groups"
    );
    assert!(
        spatial <= by_id,
        "spatial order reads {spatial} row groups, id order {by_id}"
    );
}
