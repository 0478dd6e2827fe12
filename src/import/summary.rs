//! What an import or a refresh read, kept, changed and skipped (and why).

use std::collections::BTreeMap;

#[derive(Debug, Default, Clone, PartialEq)]
pub struct Summary {
    pub generation: u64,
    /// Sequences read and sequences that gave at least one network row.
    pub sequences_read: usize,
    pub sequences_imported: usize,
    /// Veglenker read (current and closed).
    pub links_read: usize,
    /// Network rows (a veglenke split at road-reference changes).
    pub segments: usize,
    /// Rows of closed veglenker kept in the network's history.
    pub closed_link_rows: usize,
    /// Objects read (every version) / imported (current table) per type.
    pub objects_read: BTreeMap<u32, usize>,
    pub objects_imported: BTreeMap<u32, usize>,
    /// Versions kept in the type's history per type (older versions, and every version of an
    /// object with no current version on the network).
    pub versions_in_history: BTreeMap<u32, usize>,
    /// Reason -> count of what was not imported (whole records, placements or values).
    pub skipped: BTreeMap<String, usize>,
    pub seconds: f64,
    /// Wall time per phase (road system, network, objects, publish), in order.
    pub phases: Vec<(String, f64)>,
}

impl Summary {
    pub fn skip(&mut self, reason: impl Into<String>) {
        *self.skipped.entry(reason.into()).or_default() += 1;
    }

    /// Add the counts of `other` (a part mapped in parallel).
    pub fn absorb(&mut self, other: Summary) {
        self.sequences_read += other.sequences_read;
        self.sequences_imported += other.sequences_imported;
        self.links_read += other.links_read;
        self.segments += other.segments;
        self.closed_link_rows += other.closed_link_rows;
        for (t, n) in other.versions_in_history {
            *self.versions_in_history.entry(t).or_default() += n;
        }
        for (t, n) in other.objects_read {
            *self.objects_read.entry(t).or_default() += n;
        }
        for (t, n) in other.objects_imported {
            *self.objects_imported.entry(t).or_default() += n;
        }
        for (r, n) in other.skipped {
            *self.skipped.entry(r).or_default() += n;
        }
    }

    /// The summary as printed by `vegdb import`.
    pub fn render(&self) -> String {
        let mut s = format!(
            "generation {}: {} of {} veglenkesekvenser ({} veglenker read, {} network rows, {} closed veglenke rows in history), {} objects ({} versions in history) in {:.1} s\n",
            self.generation,
            self.sequences_imported,
            self.sequences_read,
            self.links_read,
            self.segments,
            self.closed_link_rows,
            self.objects_imported.values().sum::<usize>(),
            self.versions_in_history.values().sum::<usize>(),
            self.seconds
        );
        if !self.phases.is_empty() {
            let p: Vec<String> = self
                .phases
                .iter()
                .map(|(name, s)| format!("{name} {s:.1} s"))
                .collect();
            s.push_str(&format!("  phases: {}\n", p.join(", ")));
        }
        for (t, read) in &self.objects_read {
            let kept = self.objects_imported.get(t).copied().unwrap_or(0);
            let old = self.versions_in_history.get(t).copied().unwrap_or(0);
            s.push_str(&format!(
                "  type {t}: {kept} of {read} objects imported ({old} versions kept in history)\n"
            ));
        }
        if !self.skipped.is_empty() {
            s.push_str("skipped (lines marked [kept] were stored after a conversion):\n");
            for (reason, n) in &self.skipped {
                s.push_str(&format!("  {n:>8}  {reason}\n"));
            }
        }
        s
    }
}

/// What a refresh read and changed.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct RefreshSummary {
    pub generation: u64,
    pub parent: u64,
    /// Events newer than the recorded last id, per stream.
    pub events: BTreeMap<String, usize>,
    /// The last event id per stream after this refresh (stored in the manifest).
    pub last_event_ids: BTreeMap<String, u64>,
    /// Sequences mapped again from the source / removed from the network.
    pub sequences_changed: usize,
    pub sequences_removed: usize,
    pub objects_created: BTreeMap<u32, usize>,
    pub objects_changed: BTreeMap<u32, usize>,
    pub objects_removed: BTreeMap<u32, usize>,
    /// Stored versions closed into their type's history (by a newer version or a removal).
    pub versions_closed: BTreeMap<u32, usize>,
    /// Rows of the network's history written for the sequences mapped again (their closed
    /// veglenker) and removed (their rows, closed at the event's day).
    pub closed_link_rows: usize,
    /// Files written anew / shared with the parent generation.
    pub files_written: usize,
    pub files_shared: usize,
    /// Reasons -> counts (the import's mapping reasons, and the refresh's own).
    pub skipped: BTreeMap<String, usize>,
    pub seconds: f64,
}

impl RefreshSummary {
    pub(super) fn note(&mut self, reason: impl Into<String>) {
        *self.skipped.entry(reason.into()).or_default() += 1;
    }

    /// The summary as printed by `vegdb refresh`.
    pub fn render(&self) -> String {
        let sum = |m: &BTreeMap<u32, usize>| m.values().sum::<usize>();
        let mut s = if self.generation == self.parent {
            format!(
                "nothing published: generation {} stays current ({} new events, none about a stored veglenkesekvens or object), in {:.1} s\n",
                self.generation,
                self.events.values().sum::<usize>(),
                self.seconds
            )
        } else {
            format!(
            "generation {} (from {}): {} events; {} veglenkesekvenser mapped again, {} removed ({} closed veglenke rows in history); objects {} created, {} changed, {} removed ({} versions closed into history); {} files written, {} shared, in {:.1} s\n",
            self.generation,
            self.parent,
            self.events.values().sum::<usize>(),
            self.sequences_changed,
            self.sequences_removed,
            self.closed_link_rows,
            sum(&self.objects_created),
            sum(&self.objects_changed),
            sum(&self.objects_removed),
            sum(&self.versions_closed),
            self.files_written,
            self.files_shared,
            self.seconds
        )
        };
        for (stream, n) in &self.events {
            let last = self
                .last_event_ids
                .get(stream)
                .map(|id| id.to_string())
                .unwrap_or_else(|| "-".into());
            s.push_str(&format!("  {stream}: {n} events, last event id {last}\n"));
        }
        if !self.skipped.is_empty() {
            s.push_str("notes (counted; lines marked [kept] were stored after a conversion):\n");
            for (reason, n) in &self.skipped {
                s.push_str(&format!("  {n:>8}  {reason}\n"));
            }
        }
        s
    }
}
