//! MANIFEST.json: what a generation holds. Written last when publishing, so a directory with a
//! manifest is complete.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{EngineError, Result};

/// Layout 1: each object type in one file, `objects/type-<id>.parquet` (the first
/// generations). Builds before layout 2 existed also wrote chunk files under version 1 (the
/// committed demo is such a generation, and a changeset applied to a single-file generation
/// shared the untouched types' single files beside the touched types' chunks), so under
/// version 1 the layout is detected per object file: an entry with `first_id` is a chunk, one
/// without is its type's single file.
pub const FORMAT_SINGLE_FILE: u32 = 1;
/// Layout 2: every object type in chunk files by id range,
/// `objects/type-<id>-<first id:015>.parquet`, each manifest entry with its `first_id`.
pub const FORMAT_CHUNKED: u32 = 2;
/// Layout 3, the open-data files: chunks in one hive-style directory per type,
/// `objects/type=<id>/part-<first id:015>.parquet`, each with its located geometry (lines for
/// line-placed types), the GeoParquet `bbox` covering column, rows in spatial order, the
/// derived `length_m` and `municipalities`; `dictionary.json` and `DICTIONARY.md` beside the
/// manifest. Columns read by the loader are those of layouts 1 and 2.
pub const FORMAT_OPEN: u32 = 3;
/// Layout 4, history: layout 3 plus every version that is no longer current. Each type's
/// closed versions in `history/type=<id>/versions.parquet` (the chunks' columns, rows in
/// (id, version) order), the network's closed rows in `network/history.parquet` and an
/// `end_date` column in both network files. A version 3 generation reads as one without
/// history (the files are absent, `end_date` reads as open).
pub const FORMAT_HISTORY: u32 = 4;
/// Layout 5, network attributes: layout 4 plus four columns in both network files,
/// `detail_level` (detaljnivå), `traffic_group` (trafikantgruppe), `side_facility`
/// (sideanlegg) and `separate_carriageways` (adskilte løp). A version 3 or 4 generation reads
/// with them derived (`RoadNetwork::derive_absent`: detail level from the topology level,
/// traffic group G on status G or typeVeg gang- og sykkelveg, else K) or defaulted (no side
/// facility, adskilte løp Nei); `vegdb snapshot upgrade` rewrites it with them stored.
pub const FORMAT_NETWORK_ATTRIBUTES: u32 = 5;
/// Layout 6, road system references: layout 5 plus the vegsystemreferanse in both network
/// files (`system_category`, `system_phase`, `system_number`, `section`, `subsection`,
/// `section_from_m`, `section_to_m`, `section_against`, `arm`). A version 3 to 5 generation
/// reads with them derived from the v2 reference (`RoadNetwork::derive_absent`: strekning
/// hp / 100, delstrekning hp % 100, the rest the same or defaulted); `vegdb snapshot upgrade`
/// rewrites it with them stored.
pub const FORMAT_ROAD_SYSTEM_REFS: u32 = 6;
/// Layout 7, road system objects: layout 6 plus the 915 Vegsystem's and the 916 Strekning's
/// id and version each row's vegsystemreferanse comes from (`system_id`, `system_version`,
/// `section_id`, `section_version`; null = none) in both network files. A version 3 to 6
/// generation reads with none (the API then leaves `id` and `versjon` out, as for a row no 916
/// covers); `vegdb snapshot upgrade` rewrites it with the columns (still none: the ids are not
/// in the older files).
pub const FORMAT_SYSTEM_OBJECTS: u32 = 7;
/// The layout this build writes (`generate`, `import`; the writer once every object file is
/// a chunk of layout 3 to 7, see `Manifest::version_for`).
pub const FORMAT_VERSION: u32 = FORMAT_SYSTEM_OBJECTS;
pub const MANIFEST_FILE: &str = "MANIFEST.json";

/// Whether a file path is a format-version-3 chunk (`objects/type=<id>/part-<first>.parquet`).
pub fn is_open_chunk(path: &str) -> bool {
    path.starts_with("objects/type=")
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FileEntry {
    /// Path relative to the generation directory.
    pub path: String,
    pub rows: u64,
    pub bytes: u64,
    /// Lower-case hex SHA-256 of the file.
    pub sha256: String,
    /// Object type id for object partitions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub type_id: Option<u32>,
    /// First object id of a chunk file (`objects/type-<id>-<first>.parquet`); the chunk
    /// holds the type's ids from here up to the next chunk's first id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_id: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Manifest {
    pub format_version: u32,
    pub generation: u64,
    pub parent: Option<u64>,
    /// RFC 3339 time of publication (datagrunnlag.sist_oppdatert).
    pub created: String,
    pub datakatalog_versjon: String,
    /// How the data was made, e.g. "generate --scale demo --seed 42".
    pub origin: String,
    /// What made this generation and from which upstream source (absent in manifests written
    /// before it existed: then inferred from `origin`, see `Manifest::made_by`).
    #[serde(default)]
    pub provenance: Provenance,
    /// Changeset ids applied in this generation (write path).
    #[serde(default)]
    pub changesets: Vec<String>,
    /// Last upstream (Uberiket) event id applied per event stream ("veglenkesekvenser",
    /// "vegobjekter/<typeId>"), set by import and refresh, carried by changeset generations.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub last_event_ids: std::collections::BTreeMap<String, u64>,
    pub files: Vec<FileEntry>,
}

/// How a generation was made.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum MadeBy {
    /// Not recorded (a manifest older than the field, whose origin says nothing known).
    #[default]
    Unknown,
    /// `vegdb generate`.
    Generated,
    /// `vegdb import`.
    Imported,
    /// `vegdb refresh` (upstream events applied to an imported generation).
    Refreshed,
    /// The writer (changesets of the write API).
    Changeset,
}

/// Where a generation came from. Changeset generations carry the `source` of their parent,
/// so the served generation still names the import it descends from.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct Provenance {
    #[serde(default)]
    pub made_by: MadeBy,
    /// The upstream source of an import or refresh (a base URL or directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

impl Provenance {
    pub fn new(made_by: MadeBy, source: Option<String>) -> Provenance {
        Provenance { made_by, source }
    }

    /// A changeset generation on top of `parent`: keeps the parent's source.
    pub fn changeset(parent: &Manifest) -> Provenance {
        Provenance {
            made_by: MadeBy::Changeset,
            source: parent.provenance.source.clone(),
        }
    }
}

impl Manifest {
    /// Read and check a generation's manifest. Versions 1 and 2 are read (see
    /// `FORMAT_SINGLE_FILE`, `FORMAT_CHUNKED`); any other is refused before the rest of the
    /// manifest is interpreted, and a version 2 manifest must list only chunk files.
    pub fn read(dir: &Path) -> Result<Manifest> {
        let path = dir.join(MANIFEST_FILE);
        let text = std::fs::read_to_string(&path).map_err(|e| EngineError::io(&path, e))?;
        Manifest::parse(&path, &text)
    }

    pub fn parse(path: &Path, text: &str) -> Result<Manifest> {
        let value: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| EngineError::corrupt(path, format!("bad manifest: {e}")))?;
        let version = value
            .get("format_version")
            .and_then(|v| v.as_u64())
            .ok_or_else(|| EngineError::corrupt(path, "bad manifest: no format_version"))?;
        check_version(version).map_err(|e| EngineError::corrupt(path, e))?;
        let m: Manifest = serde_json::from_value(value)
            .map_err(|e| EngineError::corrupt(path, format!("bad manifest: {e}")))?;
        if m.format_version >= FORMAT_OPEN {
            if let Some(f) = m
                .files
                .iter()
                .find(|f| f.type_id.is_some() && (f.first_id.is_none() || !is_open_chunk(&f.path)))
            {
                return Err(EngineError::corrupt(
                    path,
                    format!(
                        "format version {} lists {} which is not an objects/type=<id>/ chunk",
                        m.format_version, f.path
                    ),
                ));
            }
        }
        if m.format_version == FORMAT_CHUNKED {
            if let Some(f) = m
                .files
                .iter()
                .find(|f| f.type_id.is_some() && f.first_id.is_none())
            {
                return Err(EngineError::corrupt(
                    path,
                    format!(
                        "format version {FORMAT_CHUNKED} (chunked) lists {} without a first id",
                        f.path
                    ),
                ));
            }
        }
        Ok(m)
    }

    /// How the generation was made: the recorded provenance, or for older manifests what their
    /// `origin` says (`vegdb generate …`, `vegdb import …`, `N changeset(s)`).
    pub fn made_by(&self) -> MadeBy {
        if self.provenance.made_by != MadeBy::Unknown {
            return self.provenance.made_by;
        }
        let o = self.origin.as_str();
        if o.starts_with("vegdb generate") || o.starts_with("generate ") {
            MadeBy::Generated
        } else if o.starts_with("vegdb import") {
            MadeBy::Imported
        } else if o.starts_with("vegdb refresh") {
            MadeBy::Refreshed
        } else if o.ends_with("changeset(s)") || !self.changesets.is_empty() {
            MadeBy::Changeset
        } else {
            MadeBy::Unknown
        }
    }

    /// The format version of a generation holding `files`: today's (6) when every object
    /// file is a chunk of the open layout (3 to 6 differ only in the files and columns the
    /// later ones add, which read as absent or derived from an older generation's files), else chunked when every object file is a chunk,
    /// else single-file (version 1, read per file). A changeset on an older generation shares
    /// its untouched files, so the generation keeps the older number until every chunk has
    /// been rewritten.
    pub fn version_for(files: &[FileEntry]) -> u32 {
        let objects = || files.iter().filter(|f| f.type_id.is_some());
        if objects().all(|f| f.first_id.is_some() && is_open_chunk(&f.path)) {
            FORMAT_VERSION
        } else if objects().all(|f| f.first_id.is_some()) {
            FORMAT_CHUNKED
        } else {
            FORMAT_SINGLE_FILE
        }
    }

    /// Whether every object file is a chunk (a version 2 or 3 generation, or a version 1
    /// one written in chunks).
    pub fn is_chunked(&self) -> bool {
        Manifest::version_for(&self.files) != FORMAT_SINGLE_FILE
    }

    pub fn total_rows(&self, prefix: &str) -> u64 {
        self.files
            .iter()
            .filter(|f| f.path.starts_with(prefix))
            .map(|f| f.rows)
            .sum()
    }
}

/// Versions this build reads: 1 to 5. Newer ones come from a newer vegdb.
fn check_version(version: u64) -> std::result::Result<(), VersionError> {
    match version {
        v if (FORMAT_SINGLE_FILE as u64..=FORMAT_VERSION as u64).contains(&v) => Ok(()),
        v if v > FORMAT_VERSION as u64 => Err(VersionError::Newer { version: v }),
        v => Err(VersionError::Unknown { version: v }),
    }
}

/// A manifest's `format_version` this build does not read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum VersionError {
    #[error(
        "format version {version} is newer than this build reads \
         ({FORMAT_SINGLE_FILE} to {FORMAT_VERSION}): open it with a newer vegdb"
    )]
    Newer { version: u64 },
    #[error(
        "unknown format version {version} (this build reads {FORMAT_SINGLE_FILE} to {FORMAT_VERSION})"
    )]
    Unknown { version: u64 },
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A manifest as written before provenance and event ids existed (the committed demo).
    const OLD: &str = r#"{"format_version": 1, "generation": 3, "parent": 2,
        "created": "2026-11-23T20:41:33Z", "datakatalog_versjon": "2.38",
        "origin": "vegdb generate --scale demo --seed 42", "changesets": [], "files": []}"#;

    #[test]
    fn old_manifests_load_and_say_how_they_were_made() {
        let m: Manifest = serde_json::from_str(OLD).unwrap();
        assert_eq!(m.provenance, Provenance::default());
        assert!(m.last_event_ids.is_empty());
        assert_eq!(m.made_by(), MadeBy::Generated);
        let mut c = m.clone();
        c.origin = "2 changeset(s)".into();
        assert_eq!(c.made_by(), MadeBy::Changeset);
        c.origin = "vegdb import --source x".into();
        assert_eq!(c.made_by(), MadeBy::Imported);
        c.origin = "something else".into();
        assert_eq!(c.made_by(), MadeBy::Unknown);
        // recorded provenance wins over the origin text
        c.provenance = Provenance::new(MadeBy::Refreshed, Some("https://example/uberiket".into()));
        assert_eq!(c.made_by(), MadeBy::Refreshed);
        // and survives a round trip; a changeset generation keeps the source
        c.last_event_ids.insert("veglenkesekvenser".into(), 12);
        let back: Manifest = serde_json::from_slice(&serde_json::to_vec(&c).unwrap()).unwrap();
        assert_eq!(back, c);
        let child = Provenance::changeset(&back);
        assert_eq!(child.made_by, MadeBy::Changeset);
        assert_eq!(child.source.as_deref(), Some("https://example/uberiket"));
        // old files stay byte-compatible readers: the new keys are additive
        let text = serde_json::to_string(&m).unwrap();
        assert!(!text.contains("last_event_ids"), "{text}");
    }

    fn manifest(version: u64, files: serde_json::Value) -> String {
        serde_json::json!({
            "format_version": version, "generation": 1, "parent": null,
            "created": "2026-11-01T00:00:00Z", "datakatalog_versjon": "2.38",
            "origin": "test", "files": files,
        })
        .to_string()
    }
    fn single(t: u32) -> serde_json::Value {
        serde_json::json!({"path": format!("objects/type-{t}.parquet"), "rows": 1, "bytes": 1,
            "sha256": "00", "type_id": t})
    }
    fn chunk(t: u32, first: u64) -> serde_json::Value {
        serde_json::json!({"path": format!("objects/type-{t}-{first:015}.parquet"), "rows": 1,
            "bytes": 1, "sha256": "00", "type_id": t, "first_id": first})
    }
    fn parse(text: &str) -> Result<Manifest> {
        Manifest::parse(Path::new("MANIFEST.json"), text)
    }

    #[test]
    fn version_1_is_read_per_file_and_version_2_only_with_chunks() {
        let network = serde_json::json!({"path": "network/links.parquet", "rows": 1,
            "bytes": 1, "sha256": "00"});
        let m = parse(&manifest(1, serde_json::json!([network, single(3)]))).unwrap();
        assert!(!m.is_chunked());
        // an old build's chunked generation under version 1 (the committed demo)
        let m = parse(&manifest(1, serde_json::json!([network, chunk(3, 7)]))).unwrap();
        assert!(m.is_chunked());
        let m = parse(&manifest(
            2,
            serde_json::json!([network, chunk(3, 7), chunk(3, 9)]),
        ));
        assert!(m.unwrap().is_chunked());
        let e = parse(&manifest(2, serde_json::json!([chunk(3, 7), single(5)]))).unwrap_err();
        assert!(
            e.to_string()
                .contains("objects/type-5.parquet without a first id"),
            "{e}"
        );
    }

    #[test]
    fn unknown_versions_are_refused_before_the_rest_is_read() {
        // a future manifest may not even have today's fields
        let future = r#"{"format_version": 8, "tables": {}}"#;
        let e = parse(future).unwrap_err().to_string();
        assert!(
            e.contains("format version 8 is newer than this build reads (1 to 7)"),
            "{e}"
        );
        let e = parse(&manifest(0, serde_json::json!([])))
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown format version 0"), "{e}");
        let e = parse(r#"{"generation": 1}"#).unwrap_err().to_string();
        assert!(e.contains("no format_version"), "{e}");
    }

    #[test]
    fn the_writer_version_follows_the_files() {
        let files = |v: serde_json::Value| -> Vec<FileEntry> { serde_json::from_value(v).unwrap() };
        let results = serde_json::json!({"path": "changesets.json", "rows": 0, "bytes": 2,
            "sha256": "00"});
        assert_eq!(
            Manifest::version_for(&files(serde_json::json!([chunk(3, 1), results]))),
            FORMAT_CHUNKED
        );
        let open = serde_json::json!({"path": "objects/type=3/part-000000000000001.parquet",
            "rows": 1, "bytes": 1, "sha256": "00", "type_id": 3, "first_id": 1});
        assert_eq!(
            Manifest::version_for(&files(serde_json::json!([open.clone(), results.clone()]))),
            FORMAT_VERSION,
            "open chunks are today's layout (4 and 5 only add files and columns)"
        );
        // an older chunk shared beside a new one keeps the older number
        assert_eq!(
            Manifest::version_for(&files(serde_json::json!([open.clone(), chunk(4, 1)]))),
            FORMAT_CHUNKED
        );
        let e = parse(&manifest(3, serde_json::json!([open, chunk(4, 1)]))).unwrap_err();
        assert!(e.to_string().contains("objects/type-4-"), "{e}");
        assert_eq!(
            Manifest::version_for(&files(serde_json::json!([chunk(3, 1), single(4)]))),
            FORMAT_SINGLE_FILE
        );
    }
}
