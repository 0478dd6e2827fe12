//! The archive of finished changesets: append-only JSON-lines segments, compaction of loose
//! files into them, and retention of whole segments.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::record::{slim, Record};
use super::Journal;
use crate::durable::fsync_dir;
use crate::error::{EngineError, Result};

pub(super) const SEGMENT_PREFIX: &str = "archive-";
pub(super) const SEGMENT_SUFFIX: &str = ".jsonl";

pub(super) fn segment_name(n: u64) -> String {
    format!("{SEGMENT_PREFIX}{n:06}{SEGMENT_SUFFIX}")
}

/// Where an archived changeset's line is.
#[derive(Debug, Clone, Copy)]
pub(super) struct Location {
    pub(super) segment: u64,
    pub(super) offset: u64,
    pub(super) len: u64,
}

#[derive(Debug, Default)]
pub(super) struct Segment {
    pub(super) ids: Vec<String>,
    pub(super) newest_received_ms: i64,
    pub(super) bytes: u64,
}

#[derive(Debug, Default)]
pub(super) struct Archive {
    pub(super) segments: BTreeMap<u64, Segment>,
    pub(super) locations: HashMap<String, Location>,
}

/// One line of a segment.
#[derive(Serialize, Deserialize)]
pub(super) struct ArchivedEntry {
    pub(super) record: Record,
    pub(super) content: serde_json::Value,
}

/// A segment line read for its record only.
#[derive(Deserialize)]
pub(super) struct ArchivedRecord {
    pub(super) record: Record,
}

impl Journal {
    /// Move every finished changeset from its loose files into the segments, then apply the
    /// retention. Returns how many were moved.
    pub fn compact(&self) -> Result<usize> {
        let mut archive = self.archive.lock().expect("archive lock");
        let mut ids: Vec<String> = self
            .loose_finished
            .lock()
            .expect("journal lock")
            .iter()
            .cloned()
            .collect();
        ids.sort_by_key(|id| (self.get(id).map_or(0, |r| r.received_ms), id.clone()));
        let mut moved = 0;
        for batch in ids.chunks(self.retention.segment_entries.max(1)) {
            moved += self.compact_batch(&mut archive, batch)?;
        }
        self.apply_retention(&mut archive)?;
        Ok(moved)
    }

    /// Append `ids` (finished, loose) to the open segment (a new one when it is full), fsync,
    /// then remove their loose files.
    pub(super) fn compact_batch(&self, archive: &mut Archive, ids: &[String]) -> Result<usize> {
        let mut lines: Vec<(String, i64, Vec<u8>)> = Vec::new();
        for id in ids {
            let state = self.state_path(id);
            let record: Record = match fs::read(&state) {
                Ok(b) => serde_json::from_slice(&b)
                    .map_err(|e| EngineError::corrupt(&state, e.to_string()))?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(EngineError::io(&state, e)),
            };
            if !record.progress.is_final() {
                continue;
            }
            let content_path = self.content_path(id);
            let content: serde_json::Value = fs::read(&content_path)
                .map_err(|e| EngineError::io(&content_path, e))
                .and_then(|b| {
                    serde_json::from_slice(&b)
                        .map_err(|e| EngineError::corrupt(&content_path, e.to_string()))
                })?;
            let received = record.received_ms;
            let mut line = serde_json::to_vec(&ArchivedEntry { record, content })
                .map_err(|e| EngineError::Internal(e.to_string()))?;
            line.push(b'\n');
            lines.push((id.clone(), received, line));
        }
        if lines.is_empty() {
            return Ok(0);
        }
        let open = archive
            .segments
            .iter()
            .next_back()
            .filter(|(_, s)| s.ids.len() + lines.len() <= self.retention.segment_entries.max(1))
            .map(|(n, _)| *n);
        let (number, fresh) = match open {
            Some(n) => (n, false),
            None => (
                archive.segments.keys().next_back().map_or(1, |n| n + 1),
                true,
            ),
        };
        let path = self.dir.join(segment_name(number));
        let mut file = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .open(&path)
            .map_err(|e| EngineError::io(&path, e))?;
        let mut offset = file
            .seek(SeekFrom::End(0))
            .map_err(|e| EngineError::io(&path, e))?;
        let start = offset;
        // after a torn line (a crash or a full disk while appending), start on a fresh line
        let mut prefix = Vec::new();
        if offset > 0 {
            let mut last = [0u8; 1];
            file.seek(SeekFrom::Start(offset - 1))
                .and_then(|_| file.read_exact(&mut last))
                .map_err(|e| EngineError::io(&path, e))?;
            if last[0] != b'\n' {
                prefix.push(b'\n');
            }
        }
        let mut buf = prefix.clone();
        offset += prefix.len() as u64;
        let mut placed = Vec::new();
        for (id, received, line) in &lines {
            placed.push((
                id.clone(),
                *received,
                Location {
                    segment: number,
                    offset,
                    len: line.len() as u64 - 1,
                },
            ));
            offset += line.len() as u64;
            buf.extend_from_slice(line);
        }
        let written = file.write_all(&buf).and_then(|_| file.sync_all());
        if let Err(e) = written {
            // leave no half line behind when possible; the loose files still hold everything
            let _ = file.set_len(start);
            return Err(EngineError::io(&path, e));
        }
        if fresh {
            fsync_dir(&self.dir)?;
        }
        crate::failpoints::fail_point("journal-after-append");
        let segment = archive.segments.entry(number).or_default();
        segment.bytes = offset;
        for (id, received, loc) in &placed {
            segment.ids.push(id.clone());
            segment.newest_received_ms = segment.newest_received_ms.max(*received);
            archive.locations.insert(id.clone(), *loc);
        }
        {
            let mut loose = self.loose_finished.lock().expect("journal lock");
            for (id, _, _) in &placed {
                loose.remove(id);
            }
        }
        for (id, _, _) in &placed {
            for p in [self.state_path(id), self.content_path(id)] {
                match fs::remove_file(&p) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(EngineError::io(&p, e)),
                }
            }
        }
        fsync_dir(&self.dir)?;
        Ok(placed.len())
    }

    /// Drop sealed segments past the retention (every changeset in them older than
    /// `keep_days`, or `keep_entries` newer finished changesets without them).
    pub(super) fn apply_retention(&self, archive: &mut Archive) -> Result<()> {
        let cutoff =
            chrono::Utc::now().timestamp_millis() - self.retention.keep_days as i64 * 86_400_000;
        let loose = self.loose_finished.lock().expect("journal lock").len();
        let mut total: usize = loose
            + archive
                .segments
                .values()
                .map(|s| s.ids.len())
                .sum::<usize>();
        let last = archive.segments.keys().next_back().copied();
        let mut doomed = Vec::new();
        for (&n, seg) in &archive.segments {
            if Some(n) == last {
                break; // the open segment is never dropped
            }
            let expired = seg.newest_received_ms < cutoff;
            let surplus = total - seg.ids.len() >= self.retention.keep_entries;
            if !(expired || surplus) || !self.in_store(seg) {
                break;
            }
            total -= seg.ids.len();
            doomed.push(n);
        }
        for n in doomed {
            let seg = archive.segments.remove(&n).expect("listed");
            {
                let mut records = self.records.lock().expect("journal lock");
                for id in &seg.ids {
                    records.remove(id);
                    archive.locations.remove(id);
                }
            }
            let path = self.dir.join(segment_name(n));
            tracing::info!(segment = %path.display(), changesets = seg.ids.len(), "dropping finished changesets past the retention");
            fs::remove_file(&path).map_err(|e| EngineError::io(&path, e))?;
            fsync_dir(&self.dir)?;
        }
        Ok(())
    }

    /// Whether every changeset of a segment is in the store's generations (always, without a
    /// store): only then may retention drop it.
    fn in_store(&self, seg: &Segment) -> bool {
        let Some(published) = &self.published else {
            return true;
        };
        let published = published.load(std::sync::atomic::Ordering::SeqCst);
        let records = self.records.lock().expect("journal lock");
        seg.ids.iter().all(|id| {
            records
                .get(id)
                .and_then(|r| r.generation)
                .is_none_or(|g| g <= published)
        })
    }

    /// Compact when enough finished changesets are loose (called after state changes; never
    /// waits for a compaction already running).
    pub(super) fn maybe_compact(&self) {
        let due = self.loose_finished.lock().expect("journal lock").len()
            >= self.retention.compact_after.max(1);
        if due {
            if let Err(e) = self.compact() {
                tracing::warn!(error = %e, "compacting the changeset journal failed; the loose files stay");
            }
        }
    }

    /// A record became final (loose until the next compaction).
    pub(super) fn note_final(&self, r: &Record) {
        if r.progress.is_final() {
            self.loose_finished
                .lock()
                .expect("journal lock")
                .insert(r.id.clone());
        }
    }

    pub(super) fn archived_at(&self, id: &str) -> Option<Location> {
        self.archive
            .lock()
            .expect("archive lock")
            .locations
            .get(id)
            .copied()
    }

    pub(super) fn read_line(&self, loc: Location) -> Result<Vec<u8>> {
        let path = self.dir.join(segment_name(loc.segment));
        let mut f = fs::File::open(&path).map_err(|e| EngineError::io(&path, e))?;
        let mut buf = vec![0u8; loc.len as usize];
        f.seek(SeekFrom::Start(loc.offset))
            .and_then(|_| f.read_exact(&mut buf))
            .map_err(|e| EngineError::io(&path, e))?;
        Ok(buf)
    }

    pub(super) fn read_archived(&self, id: &str) -> Result<Option<ArchivedEntry>> {
        let Some(loc) = self.archived_at(id) else {
            return Ok(None);
        };
        let line = self.read_line(loc)?;
        serde_json::from_slice(&line).map(Some).map_err(|e| {
            EngineError::corrupt(self.dir.join(segment_name(loc.segment)), e.to_string())
        })
    }

    /// The loose file, or the archived entry when compaction moved it meanwhile.
    pub(super) fn read_loose_or_archived<T>(
        &self,
        id: &str,
        path: &Path,
        loose: impl Fn(&[u8]) -> Result<T>,
        archived: impl Fn(ArchivedEntry) -> Result<T>,
    ) -> Result<Option<T>> {
        if let Some(e) = self.read_archived(id)? {
            return archived(e).map(Some);
        }
        match fs::read(path) {
            Ok(b) => loose(&b).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => match self.read_archived(id)? {
                Some(e) => archived(e).map(Some),
                None => Ok(None),
            },
            Err(e) => Err(EngineError::io(path, e)),
        }
    }
}

/// Read every segment of `dir` into `records` (slim); the archive's index.
pub(super) fn read_archive(dir: &Path, records: &mut BTreeMap<String, Record>) -> Result<Archive> {
    let mut archive = Archive::default();
    let mut numbers = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| EngineError::io(dir, e))? {
        let entry = entry.map_err(|e| EngineError::io(dir, e))?;
        let name = entry.file_name().to_string_lossy().to_string();
        if let Some(n) = name
            .strip_prefix(SEGMENT_PREFIX)
            .and_then(|r| r.strip_suffix(SEGMENT_SUFFIX))
            .and_then(|n| n.parse::<u64>().ok())
        {
            numbers.push(n);
        }
    }
    numbers.sort_unstable();
    for n in numbers {
        let path = dir.join(segment_name(n));
        let bytes = fs::read(&path).map_err(|e| EngineError::io(&path, e))?;
        let mut segment = Segment {
            bytes: bytes.len() as u64,
            ..Segment::default()
        };
        let mut offset = 0usize;
        while offset < bytes.len() {
            let end = bytes[offset..]
                .iter()
                .position(|&b| b == b'\n')
                .map(|p| offset + p);
            let Some(end) = end else {
                tracing::warn!(segment = %path.display(), offset, "skipping a torn last line");
                break;
            };
            let line = &bytes[offset..end];
            match serde_json::from_slice::<ArchivedRecord>(line) {
                Ok(ArchivedRecord { record }) => {
                    let id = record.id.clone();
                    segment.newest_received_ms = segment.newest_received_ms.max(record.received_ms);
                    if !archive.locations.contains_key(&id) {
                        segment.ids.push(id.clone());
                    }
                    archive.locations.insert(
                        id.clone(),
                        Location {
                            segment: n,
                            offset: offset as u64,
                            len: line.len() as u64,
                        },
                    );
                    records.insert(id, slim(record));
                }
                Err(e) if !line.is_empty() => {
                    tracing::warn!(segment = %path.display(), offset, error = %e, "skipping a damaged line");
                }
                Err(_) => {}
            }
            offset = end + 1;
        }
        archive.segments.insert(n, segment);
    }
    Ok(archive)
}
