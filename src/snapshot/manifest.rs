//! MANIFEST.json: what a generation holds. Written last when publishing, so a directory with a
//! manifest is complete.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{EngineError, Result};

pub const FORMAT_VERSION: u32 = 1;
pub const MANIFEST_FILE: &str = "MANIFEST.json";

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
    pub fn read(dir: &Path) -> Result<Manifest> {
        let path = dir.join(MANIFEST_FILE);
        let text = std::fs::read_to_string(&path).map_err(|e| EngineError::io(&path, e))?;
        let m: Manifest = serde_json::from_str(&text)
            .map_err(|e| EngineError::corrupt(&path, format!("bad manifest: {e}")))?;
        if m.format_version != FORMAT_VERSION {
            return Err(EngineError::corrupt(
                &path,
                format!(
                    "format version {} (this build reads {FORMAT_VERSION})",
                    m.format_version
                ),
            ));
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

    pub fn total_rows(&self, prefix: &str) -> u64 {
        self.files
            .iter()
            .filter(|f| f.path.starts_with(prefix))
            .map(|f| f.rows)
            .sum()
    }
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
}
