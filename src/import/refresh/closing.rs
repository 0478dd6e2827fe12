//! What a refresh closes: the stored versions its changes replace or remove (into their
//! type's history) and the network rows of removed sequences and of closed veglenker (into
//! the network's history). See the module doc of `refresh`.

use std::collections::{BTreeMap, HashSet};

use arrow_array::{new_null_array, Array, ArrayRef};
use arrow_schema::DataType;
use arrow_select::concat::concat;

use super::{merge_network, Change, Named, ObjectChanges, Rederived, RefreshSummary};
use crate::error::{EngineError, Result};
use crate::generation::Generation;
use crate::snapshot::columns::{Days, ObjectTable, PropertyColumn, RoadNetwork, OPEN_END};

/// The day of `seconds` since 1970 (UTC).
pub(super) fn day_of(seconds: i64) -> Days {
    Days::try_from(seconds.div_euclid(86_400)).unwrap_or(Days::MAX)
}

/// Step 4, continued: the network's new history (None when it did not change): the rows of
/// the closed veglenker of the sequences mapped again replace theirs, and the current rows of
/// removed sequences join it, closed at the event's day.
pub(super) fn network_history(
    base: &Generation,
    named: &Named,
    rederived: &Rederived,
    closed: RoadNetwork,
    summary: &mut RefreshSummary,
) -> Option<RoadNetwork> {
    let mut gone = RoadNetwork {
        geom_offsets: vec![0],
        ..Default::default()
    };
    for id in &rederived.removed {
        let rows = base.network.rows_of_link(*id);
        let day = named.sequences.get(id).copied().map(day_of);
        gone.append_rows(&base.network, rows.clone());
        let n = gone.end_date.len();
        for end in &mut gone.end_date[n - rows.len()..] {
            *end = day.unwrap_or(*end);
        }
    }
    gone.build_link_index();
    let replaced: HashSet<u64> = rederived.sequences.keys().copied().collect();
    let had = replaced
        .iter()
        .any(|l| !base.network_history.rows_of_link(*l).is_empty());
    if gone.is_empty() && closed.is_empty() && !had {
        return None;
    }
    summary.closed_link_rows += gone.len() + closed.len();
    let added = merge_network(&closed, &HashSet::new(), &gone);
    Some(merge_network(&base.network_history, &replaced, &added))
}

/// The stored version an object change closes, as a one-row table with its end set (None
/// when the change does not close one: a new object, or a change within the same version).
fn closed_row(table: &ObjectTable, row: usize, change: &Change) -> Option<ObjectTable> {
    let own = table.end_date[row];
    let end = match change {
        Change::Put(one) => {
            if one.version.first().is_none_or(|&v| v <= table.version[row]) {
                return None;
            }
            one.start_date.first().copied().unwrap_or(own)
        }
        Change::Remove { at, end } => end.unwrap_or_else(|| day_of(*at)),
    };
    let mut closed = table.slice(row..row + 1);
    closed.end_date = vec![if own == OPEN_END { end } else { own }];
    Some(closed)
}

/// Step 6, continued: per type where a stored version was closed, its complete new history
/// (the stored history and the closed versions, in (id, version) order).
pub(super) fn closed_versions(
    base: &Generation,
    changes: &ObjectChanges,
    summary: &mut RefreshSummary,
) -> Result<BTreeMap<u32, ObjectTable>> {
    let mut out = BTreeMap::new();
    for (&t, c) in changes {
        let Some(td) = base.objects.get(&t) else {
            continue;
        };
        let closed: Vec<ObjectTable> = c
            .iter()
            .filter_map(|(&id, ch)| closed_row(&td.table, td.table.row_of(id)?, ch))
            .collect();
        if closed.is_empty() {
            continue;
        }
        *summary.versions_closed.entry(t).or_default() += closed.len();
        let history = with_closed(t, base.history.get(&t).map(|h| &**h), closed)?;
        out.insert(t, history);
    }
    Ok(out)
}

/// `history` (type `t`'s closed versions, if any) with the `closed` rows, in (id, version)
/// order.
fn with_closed(
    t: u32,
    history: Option<&ObjectTable>,
    closed: Vec<ObjectTable>,
) -> Result<ObjectTable> {
    let mut parts: Vec<ObjectTable> = history.map(|h| vec![h.clone()]).unwrap_or_default();
    parts.extend(closed);
    let all = stack(t, &parts)?;
    let mut order: Vec<usize> = (0..all.len()).collect();
    order.sort_by_key(|&r| (all.id[r], all.version[r]));
    all.take(&order)
        .map_err(|e| EngineError::Internal(e.to_string()))
}

/// The rows of `parts` (tables of type `t`) one after the other as one table, a property
/// missing from a part null there. Unlike `ObjectTable::concat` the ids need not ascend: a
/// history holds several versions of an id.
fn stack(t: u32, parts: &[ObjectTable]) -> Result<ObjectTable> {
    let mut out = ObjectTable::new(t);
    let mut kinds: BTreeMap<u32, DataType> = BTreeMap::new();
    for p in parts {
        out.append_rows(p, 0..p.len());
        for c in &p.properties {
            kinds
                .entry(c.property_id)
                .or_insert_with(|| c.values.data_type().clone());
        }
    }
    for (pid, kind) in kinds {
        let arrays: Vec<ArrayRef> = parts
            .iter()
            .map(|p| match p.property(pid) {
                Some(c) => c.values.clone(),
                None => new_null_array(&kind, p.len()),
            })
            .collect();
        let refs: Vec<&dyn Array> = arrays.iter().map(|a| a.as_ref()).collect();
        let values = concat(&refs)
            .map_err(|e| EngineError::Internal(format!("type {t}: property {pid}: {e}")))?;
        out.properties.push(PropertyColumn {
            property_id: pid,
            values,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Int64Array;
    use std::sync::Arc;

    /// A table of (id, version) rows with property 1 = id * 10 + version when `with_value`.
    fn rows(pairs: &[(u64, u32)], with_value: bool) -> ObjectTable {
        let mut t = ObjectTable::new(105);
        for &(id, v) in pairs {
            t.id.push(id);
            t.version.push(v);
            t.start_date.push(0);
            t.end_date.push(1);
            t.last_modified.push(0);
            t.loc_offsets.push(0);
            t.geom_offsets.push(0);
            t.child_offsets.push(0);
        }
        if with_value {
            let values = pairs.iter().map(|&(id, v)| id as i64 * 10 + v as i64);
            t.properties.push(PropertyColumn {
                property_id: 1,
                values: Arc::new(Int64Array::from_iter_values(values)),
            });
        }
        t
    }

    #[test]
    fn closed_rows_join_the_history_in_id_and_version_order() {
        let history = rows(&[(5, 1), (5, 2), (9, 1)], true);
        // the closed rows: 5's version 3, 7's version 1 (without the property)
        let closed = vec![rows(&[(5, 3)], true), rows(&[(7, 1)], false)];
        let got = with_closed(105, Some(&history), closed).unwrap();
        let keys: Vec<(u64, u32)> = (0..got.len())
            .map(|r| (got.id[r], got.version[r]))
            .collect();
        assert_eq!(keys, vec![(5, 1), (5, 2), (5, 3), (7, 1), (9, 1)]);
        let col = got.property(1).unwrap();
        let values: Vec<Option<i64>> = (0..got.len())
            .map(
                |r| match crate::changeset::working::value_at(&col.values, r) {
                    Some(crate::value::Value::Int(v)) => Some(v),
                    _ => None,
                },
            )
            .collect();
        assert_eq!(values, vec![Some(51), Some(52), Some(53), None, Some(91)]);
    }
}
