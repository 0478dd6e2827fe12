//! Building a generation: the one path from a producer's tables to a published generation.
//! `generate`, `import`, `refresh`, the writer and `snapshot upgrade` all build through a
//! `GenerationBuilder`; each keeps only its own logic (what the tables hold, what its manifest
//! says about its origin) and the builder owns the rest:
//!
//! - the layout: which tables are written (network, object chunks, deleted objects, the
//!   changesets' results) and which of the parent's files are shared unchanged (hard links,
//!   `snapshot::plan` deciding per chunk);
//! - the data dictionary (`snapshot::dictionary`), written beside the tables, or shared with
//!   the parent when its content is the same;
//! - the manifest: its format version, lineage (parent, `created`, catalogue version) and
//!   files, with the producer's `Description`;
//! - publishing (`DataDir::publish`: the crash-safe steps, and the numbering of a hand-off).
//!
//! Three kinds of generation: `fresh` (no parent: every table written), `derive` (a parent's
//! tables changed: only the touched chunks written, the rest shared) and `rewrite` (a
//! parent's tables written again in today's format, its other files shared, its manifest
//! kept). Columns are the writers' (`parquet_write`, `plan::write_chunks`), so a new column
//! flows through every producer untouched here.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use sha2::{Digest, Sha256};

use super::columns::{DeletedTable, ObjectTable, RoadNetwork};
use super::dictionary::{self, DICTIONARY_JSON, DICTIONARY_MD};
use super::manifest::{FileEntry, Manifest, Provenance};
use super::parquet_write::{
    history_file, history_type_of, write_deleted, write_history, write_network,
    write_network_history, write_type, DELETED_FILE, NETWORK_FILE, NETWORK_HISTORY_FILE,
};
use super::plan::{plan, write_chunks, Touched};
use super::store::{generation_id, DataDir, Staging};
use crate::area::Areas;
use crate::catalog::Catalog;
use crate::error::Result;
use crate::util::hex;

/// Results of the changesets a generation applied (inside the generation directory). A derived
/// generation never shares its parent's: it writes its own or none.
pub const RESULTS_FILE: &str = "changesets.json";

/// The generation a new one is made from: a loaded generation's parts
/// (`Generation::as_parent`).
#[derive(Clone, Copy)]
pub struct Parent<'p> {
    pub id: u64,
    pub dir: &'p Path,
    pub manifest: &'p Manifest,
    pub network: &'p RoadNetwork,
    pub catalog: &'p Catalog,
    pub areas: &'p Areas,
}

/// What a producer says about its generation in the manifest; the builder fills in the rest.
#[derive(Debug, Clone, Default)]
pub struct Description {
    /// How the data was made, e.g. "vegdb generate --scale demo --seed 42".
    pub origin: String,
    pub provenance: Provenance,
    /// Changeset ids applied (the writer; a rewrite keeps its parent's).
    pub changesets: Vec<String>,
    /// Last upstream event id per stream.
    pub last_event_ids: BTreeMap<String, u64>,
}

/// A type whose table a derived generation replaces: the new table and the ids its edits
/// touched (ascending); chunks of the parent no edit falls in are shared.
#[derive(Debug, Clone, Copy)]
pub struct TouchedTable<'t> {
    pub table: &'t ObjectTable,
    pub edited_ids: &'t [u64],
}

/// What a derived generation changes of its parent.
pub struct Changes<'t> {
    /// Per touched type, its new table.
    pub tables: BTreeMap<u32, TouchedTable<'t>>,
    /// The new network, when it changed (else the parent's is shared).
    pub network: Option<&'t RoadNetwork>,
    /// The new deleted objects, when they changed (else the parent's are shared).
    pub deleted: Option<&'t DeletedTable>,
    /// Per type whose closed versions changed, all of them (its history file is written
    /// anew, or left out when empty; the other types' are shared).
    pub history: BTreeMap<u32, &'t ObjectTable>,
    /// The network's closed rows, when they changed.
    pub network_history: Option<&'t RoadNetwork>,
    /// Rows per new chunk file (`plan::write_chunks`).
    pub chunk_rows: usize,
}

/// Files a derived generation shared with its parent and wrote (chunks, network, deleted; the
/// dictionary not counted), for the producers' reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Layout {
    pub shared: usize,
    pub written: usize,
}

/// A published generation.
#[derive(Debug, Clone)]
pub struct Published {
    /// Its id: for a hand-off, the number the owner gave it.
    pub id: u64,
    pub dir: PathBuf,
}

enum Lineage<'p> {
    /// No parent: the catalogue's version, published now, parent CURRENT (set by `publish`).
    Fresh {
        catalog: &'p Catalog,
        areas: &'p Areas,
    },
    /// A changed parent: its catalogue version, published now.
    Derived(Parent<'p>),
    /// A parent written again: its manifest kept, under `parent`.
    Rewrite {
        source: Parent<'p>,
        parent: Option<u64>,
    },
}

/// A generation being built in a staging directory (see the module doc).
pub struct GenerationBuilder<'p> {
    staging: Staging,
    lineage: Lineage<'p>,
}

impl<'p> GenerationBuilder<'p> {
    /// A generation without a parent, built as the next generation of `data`.
    pub fn fresh(
        data: &DataDir,
        catalog: &'p Catalog,
        areas: &'p Areas,
    ) -> Result<GenerationBuilder<'p>> {
        let staging = data.begin(data.next_id()?)?;
        Ok(GenerationBuilder {
            staging,
            lineage: Lineage::Fresh { catalog, areas },
        })
    }

    /// A generation changing `parent`, built in `staging` (begun before the parent was
    /// loaded, so a hand-off's base stays CURRENT).
    pub fn derive(staging: Staging, parent: Parent<'p>) -> GenerationBuilder<'p> {
        GenerationBuilder {
            staging,
            lineage: Lineage::Derived(parent),
        }
    }

    /// `source` written again in today's format in `staging`, published under `parent`.
    pub fn rewrite(
        staging: Staging,
        source: Parent<'p>,
        parent: Option<u64>,
    ) -> GenerationBuilder<'p> {
        GenerationBuilder {
            staging,
            lineage: Lineage::Rewrite { source, parent },
        }
    }

    /// The staging directory.
    pub fn dir(&self) -> &Path {
        &self.staging.dir
    }

    fn reference(&self) -> (&'p Catalog, &'p Areas) {
        match &self.lineage {
            Lineage::Fresh { catalog, areas } => (catalog, areas),
            Lineage::Derived(p) | Lineage::Rewrite { source: p, .. } => (p.catalog, p.areas),
        }
    }

    /// Write every table (in parallel): the network, each type's chunks, the deleted objects
    /// when given; then the dictionary of the types with objects.
    pub fn write_tables<'t>(
        &mut self,
        network: &RoadNetwork,
        tables: impl IntoIterator<Item = &'t ObjectTable>,
        deleted: Option<&DeletedTable>,
    ) -> Result<()> {
        let tables: Vec<&ObjectTable> = tables.into_iter().collect();
        let dir = self.staging.dir.clone();
        let (net_entry, object_entries) = rayon::join(
            || write_network(&dir, network),
            || {
                tables
                    .par_iter()
                    .map(|t| write_type(&dir, t, network))
                    .collect::<Result<Vec<_>>>()
            },
        );
        self.staging.files.push(net_entry?);
        self.staging
            .files
            .extend(object_entries?.into_iter().flatten());
        if let Some(d) = deleted {
            self.staging.files.push(write_deleted(&dir, d)?);
        }
        let types: Vec<u32> = tables
            .iter()
            .filter(|t| !t.is_empty())
            .map(|t| t.type_id)
            .collect();
        self.write_dictionary(&types, &[])?;
        Ok(())
    }

    /// Write the dictionary of a generation holding `types`, except files `parent` has with
    /// the same content; returns the paths written.
    fn write_dictionary(
        &mut self,
        types: &[u32],
        parent: &[FileEntry],
    ) -> Result<Vec<&'static str>> {
        let (catalog, areas) = self.reference();
        let (written, _) = dictionary::write(&self.staging.dir, catalog, areas, types, parent)?;
        let paths = written
            .iter()
            .map(|f| {
                if f.path == DICTIONARY_JSON {
                    DICTIONARY_JSON
                } else {
                    DICTIONARY_MD
                }
            })
            .collect();
        self.staging.files.extend(written);
        Ok(paths)
    }

    /// Write what is no longer current (format version 4): each type's closed versions (its
    /// `history_file`, for the types with any) and the network's closed rows (when there are
    /// any), located on `network`.
    pub fn write_history<'t>(
        &mut self,
        network: &RoadNetwork,
        network_history: &RoadNetwork,
        tables: impl IntoIterator<Item = &'t ObjectTable>,
    ) -> Result<()> {
        let tables: Vec<&ObjectTable> = tables.into_iter().filter(|t| !t.is_empty()).collect();
        let dir = self.staging.dir.clone();
        let entries = tables
            .par_iter()
            .map(|t| write_history(&dir, t, network))
            .collect::<Result<Vec<_>>>()?;
        self.staging.files.extend(entries);
        if !network_history.is_empty() {
            self.staging
                .files
                .push(write_network_history(&dir, network_history)?);
        }
        Ok(())
    }

    /// Share the files of the source of a rewrite that `write_tables` did not write again
    /// (the changesets' results and anything else not a table or the dictionary).
    pub fn share_untouched(&mut self) -> Result<()> {
        let Lineage::Rewrite { source, .. } = &self.lineage else {
            return Ok(());
        };
        let rewritten = |f: &FileEntry| {
            f.type_id.is_some()
                || history_type_of(&f.path).is_some()
                || [
                    NETWORK_FILE,
                    NETWORK_HISTORY_FILE,
                    DELETED_FILE,
                    DICTIONARY_JSON,
                    DICTIONARY_MD,
                ]
                .contains(&f.path.as_str())
        };
        let (dir, files) = (source.dir, &source.manifest.files);
        for f in files.iter().filter(|f| !rewritten(f)) {
            self.staging.share_from(dir, f)?;
        }
        Ok(())
    }

    /// Write what `changes` changes of the parent of a derived generation and share the rest:
    /// the dictionary (shared unless the set of types changed), the parent's files no change
    /// falls in, the touched chunks, the network and deleted objects when given. The parent's
    /// changesets' results are never shared (`write_results` writes this generation's).
    pub fn write_changes(&mut self, changes: &Changes) -> Result<Layout> {
        let Lineage::Derived(parent) = self.lineage else {
            return Err(crate::error::EngineError::Internal(
                "write_changes builds on a parent (GenerationBuilder::derive)".into(),
            ));
        };
        let touched: BTreeMap<u32, Touched> = changes
            .tables
            .iter()
            .map(|(&t, c)| {
                let touched = Touched {
                    ids: &c.table.id,
                    edited_ids: c.edited_ids,
                };
                (t, touched)
            })
            .collect();
        let history_paths: Vec<String> = changes.history.keys().map(|&t| history_file(t)).collect();
        let mut replaced = vec![RESULTS_FILE];
        if changes.deleted.is_some() {
            replaced.push(DELETED_FILE);
        }
        if changes.network.is_some() {
            replaced.push(NETWORK_FILE);
        }
        if changes.network_history.is_some() {
            replaced.push(NETWORK_HISTORY_FILE);
        }
        replaced.extend(history_paths.iter().map(String::as_str));
        let types = dictionary::types_after(
            &parent.manifest.files,
            changes
                .tables
                .iter()
                .map(|(&t, c)| (t, !c.table.is_empty())),
        );
        replaced.extend(self.write_dictionary(&types, &parent.manifest.files)?);
        let layout = plan(&parent.manifest.files, &touched, &replaced);
        let mut counts = Layout::default();
        for entry in layout.shared {
            self.staging.share_from(parent.dir, entry)?;
            counts.shared += 1;
        }
        let dir = self.staging.dir.clone();
        let network = changes.network.unwrap_or(parent.network);
        let written: Vec<Vec<FileEntry>> = layout
            .rewrite
            .par_iter()
            .map(|(t, rows)| {
                write_chunks(
                    &dir,
                    network,
                    changes.tables[t].table,
                    rows.clone(),
                    changes.chunk_rows,
                )
            })
            .collect::<Result<_>>()?;
        let written: Vec<FileEntry> = written.into_iter().flatten().collect();
        counts.written += written.len();
        self.staging.files.extend(written);
        if let Some(n) = changes.network {
            self.staging.files.push(write_network(&dir, n)?);
            counts.written += 1;
        }
        if let Some(d) = changes.deleted {
            self.staging.files.push(write_deleted(&dir, d)?);
            counts.written += 1;
        }
        let before = self.staging.files.len();
        let empty = RoadNetwork::default();
        self.write_history(
            network,
            changes.network_history.unwrap_or(&empty),
            changes.history.values().copied(),
        )?;
        counts.written += self.staging.files.len() - before;
        Ok(counts)
    }

    /// Write the results of the changesets this generation applied (`RESULTS_FILE`).
    pub fn write_results(&mut self, bytes: &[u8]) -> Result<()> {
        crate::durable::write_durably(&self.staging.dir.join(RESULTS_FILE), bytes)?;
        self.staging.files.push(FileEntry {
            path: RESULTS_FILE.into(),
            rows: 0,
            bytes: bytes.len() as u64,
            sha256: hex(&Sha256::digest(bytes)),
            type_id: None,
            first_id: None,
        });
        Ok(())
    }

    /// The format version of the files built so far (`Manifest::version_for`).
    pub fn format_version(&self) -> u32 {
        Manifest::version_for(&self.staging.files)
    }

    /// The manifest of the generation: the producer's `what`, the lineage's parent, time and
    /// catalogue version (`generation` and `files` are set by publishing).
    fn manifest(&self, what: Description) -> Manifest {
        let now = || chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        let (parent, created, datakatalog_versjon) = match &self.lineage {
            Lineage::Fresh { catalog, .. } => (None, now(), catalog.version.version.clone()),
            Lineage::Derived(p) => (Some(p.id), now(), p.manifest.datakatalog_versjon.clone()),
            Lineage::Rewrite { source, parent } => (
                *parent,
                source.manifest.created.clone(),
                source.manifest.datakatalog_versjon.clone(),
            ),
        };
        Manifest {
            format_version: self.format_version(),
            generation: self.staging.id,
            parent,
            created,
            datakatalog_versjon,
            origin: what.origin,
            provenance: what.provenance,
            changesets: what.changesets,
            last_event_ids: what.last_event_ids,
            files: Vec::new(),
        }
    }

    /// Publish the generation into `data` (`DataDir::publish`: manifest last, rename, CURRENT;
    /// through a hand-off when another process owns `data`, which numbers it).
    pub fn publish(self, data: &DataDir, what: Description) -> Result<Published> {
        let manifest = self.manifest(what);
        let id = self.staging.id;
        let dir = data.publish(self.staging, manifest)?;
        Ok(Published {
            id: generation_id(&dir).unwrap_or(id),
            dir,
        })
    }
}

/// A manifest holding `files` and saying nothing else (tests, and tools that assemble one
/// from parts): format `format_version`, generation `generation`, no parent, empty texts.
pub fn bare_manifest(format_version: u32, generation: u64, files: Vec<FileEntry>) -> Manifest {
    Manifest {
        format_version,
        generation,
        parent: None,
        created: String::new(),
        datakatalog_versjon: String::new(),
        origin: String::new(),
        provenance: Provenance::default(),
        changesets: Vec::new(),
        last_event_ids: BTreeMap::new(),
        files,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generation::Generation;
    use crate::snapshot::parquet_write::CHUNK_ROWS;

    fn load(data: &DataDir, id: u64) -> Generation {
        Generation::load(&data.generation_dir(id), &|_| {})
            .unwrap()
            .0
    }

    fn describe(origin: &str, changesets: &[&str]) -> Description {
        Description {
            origin: origin.into(),
            provenance: Provenance::new(crate::snapshot::manifest::MadeBy::Changeset, None),
            changesets: changesets.iter().map(|s| s.to_string()).collect(),
            last_event_ids: [("veglenkesekvenser".to_string(), 7)].into(),
        }
    }

    fn fixture() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/formats/v7-road-system-objects")
    }

    /// The three kinds of generation over the committed fixture of today's format (6, with
    /// history, the network attributes and the road system references): a derived one shares
    /// every file no change touches (the dictionary too) but never its parent's results, and
    /// takes its parent's catalogue version; a rewrite keeps its source's manifest and writes
    /// the same bytes for a generation already in today's format.
    #[test]
    fn derived_and_rewritten_generations_share_and_keep_what_they_should() {
        let tmp = tempfile::tempdir().unwrap();
        let data = DataDir::open(tmp.path()).unwrap();
        let first = data.init_from(&DataDir::read_only(fixture())).unwrap();
        let g1 = load(&data, first);
        assert!(!g1.manifest.files.iter().any(|f| f.path == RESULTS_FILE));
        let unchanged = Changes {
            tables: BTreeMap::new(),
            network: None,
            deleted: None,
            history: BTreeMap::new(),
            network_history: None,
            chunk_rows: CHUNK_ROWS,
        };
        let begin = || data.begin(data.next_id().unwrap()).unwrap();

        // derived, with results: everything of the parent shared, the results written
        let mut b = GenerationBuilder::derive(begin(), g1.as_parent());
        let layout = b.write_changes(&unchanged).unwrap();
        let shared = g1.manifest.files.len();
        assert_eq!(layout, Layout { shared, written: 0 });
        b.write_results(b"{}").unwrap();
        let p2 = b.publish(&data, describe("one", &["a"])).unwrap();
        assert_eq!(p2.id, first + 1);
        let m2 = Manifest::read(&p2.dir).unwrap();
        assert_eq!(m2.generation, p2.id);
        assert_eq!(m2.parent, Some(first));
        assert_eq!(m2.format_version, g1.manifest.format_version);
        assert_eq!(m2.datakatalog_versjon, g1.manifest.datakatalog_versjon);
        assert_eq!(m2.origin, "one");
        assert_eq!(m2.changesets, vec!["a".to_string()]);
        assert_eq!(m2.last_event_ids.get("veglenkesekvenser"), Some(&7));
        let results = m2.files.iter().find(|f| f.path == RESULTS_FILE).unwrap();
        let mut expected = g1.manifest.files.clone();
        expected.push(results.clone());
        expected.sort_by(|a, b| a.path.cmp(&b.path));
        assert_eq!(m2.files, expected);

        // derived again, without results: the parent's results are not shared
        let g2 = load(&data, p2.id);
        let mut b = GenerationBuilder::derive(begin(), g2.as_parent());
        let layout = b.write_changes(&unchanged).unwrap();
        assert_eq!(layout.shared, g1.manifest.files.len());
        let p3 = b.publish(&data, describe("two", &[])).unwrap();
        assert_eq!(Manifest::read(&p3.dir).unwrap().files, g1.manifest.files);

        // a rewrite keeps its source's manifest and shares the results
        let mut b = GenerationBuilder::rewrite(begin(), g2.as_parent(), Some(g2.id));
        let tables = g2.objects.values().map(|d| &*d.table);
        b.write_tables(&g2.network, tables, Some(&g2.deleted))
            .unwrap();
        let history = g2.history.values().map(|t| &**t);
        b.write_history(&g2.network, &g2.network_history, history)
            .unwrap();
        b.share_untouched().unwrap();
        let p4 = b.publish(&data, describe("three", &["a"])).unwrap();
        let m4 = Manifest::read(&p4.dir).unwrap();
        assert_eq!(m4.parent, Some(g2.id));
        assert_eq!(m4.created, m2.created);
        assert_eq!(m4.datakatalog_versjon, m2.datakatalog_versjon);
        assert_eq!(m4.files, m2.files, "the same files, byte for byte");
    }

    /// A fresh generation: no parent, the catalogue's version, and from the tables (and
    /// history) of the generated fixture the same files `generate` wrote (dictionary included).
    #[test]
    fn a_fresh_generation_says_the_catalogue_version_and_has_no_parent() {
        let source = DataDir::read_only(fixture());
        let g = load(&source, source.current().unwrap().unwrap());
        let tmp = tempfile::tempdir().unwrap();
        let data = DataDir::open(tmp.path()).unwrap();
        let catalog = Catalog::embedded();
        let mut b = GenerationBuilder::fresh(&data, catalog, Areas::embedded()).unwrap();
        let tables = g.objects.values().map(|d| &*d.table);
        b.write_tables(&g.network, tables, Some(&g.deleted))
            .unwrap();
        let history = g.history.values().map(|t| &**t);
        b.write_history(&g.network, &g.network_history, history)
            .unwrap();
        let p = b.publish(&data, describe("fresh", &[])).unwrap();
        let m = Manifest::read(&p.dir).unwrap();
        assert_eq!((m.generation, m.parent), (1, None));
        assert_eq!(m.datakatalog_versjon, catalog.version.version);
        assert_eq!(m.format_version, crate::snapshot::manifest::FORMAT_VERSION);
        assert_eq!(m.files, g.manifest.files);
    }
}
