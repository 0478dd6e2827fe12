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
    /// Changeset ids applied in this generation (write path).
    #[serde(default)]
    pub changesets: Vec<String>,
    /// Last upstream (Uberiket) event id applied per event stream ("veglenkesekvenser",
    /// "vegobjekter/<typeId>"), set by import and refresh, carried by changeset generations.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub last_event_ids: std::collections::BTreeMap<String, u64>,
    pub files: Vec<FileEntry>,
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

    pub fn total_rows(&self, prefix: &str) -> u64 {
        self.files
            .iter()
            .filter(|f| f.path.starts_with(prefix))
            .map(|f| f.rows)
            .sum()
    }
}
