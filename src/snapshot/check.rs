//! Consistency checks of a loaded generation (used by `snapshot verify` and tests): every
//! placement refers to an existing link range, children exist, network references are sane.

use crate::snapshot::generation::Generation;

pub fn consistency(g: &Generation) -> Vec<String> {
    let mut problems = Vec::new();
    let n = &g.network;
    for r in 0..n.len() {
        if !(0.0..=1.0).contains(&n.from_pos[r])
            || n.from_pos[r] >= n.to_pos[r]
            || n.to_pos[r] > 1.0
        {
            problems.push(format!(
                "network row {r}: bad positions {}..{}",
                n.from_pos[r], n.to_pos[r]
            ));
        }
        if n.geometry(r).len() < 2 {
            problems.push(format!(
                "network row {r}: geometry with fewer than two points"
            ));
        }
        if n.from_m[r] > n.to_m[r] {
            problems.push(format!("network row {r}: meters decrease"));
        }
    }
    if !n.link_id.windows(2).all(|w| w[0] <= w[1]) {
        problems.push("network rows are not sorted by link id".into());
    }
    for (type_id, d) in &g.objects {
        let t = &d.table;
        if g.catalog.object_type(*type_id).is_none() {
            problems.push(format!("type {type_id} is not in the catalogue"));
        }
        for row in 0..t.len() {
            for p in t.placements(row) {
                let (link, from, to) = (t.loc_link[p], t.loc_from[p], t.loc_to[p]);
                if n.rows_of_link(link).is_empty() {
                    problems.push(format!("object {}: unknown link {link}", t.id[row]));
                } else if !(0.0..=1.0).contains(&from) || !(0.0..=1.0).contains(&to) || from > to {
                    problems.push(format!(
                        "object {}: bad range {from}..{to}@{link}",
                        t.id[row]
                    ));
                }
            }
            for c in t.children(row) {
                let ok = g
                    .objects
                    .get(&t.child_type[c])
                    .is_some_and(|d| d.table.row_of(t.child_id[c]).is_some());
                if !ok {
                    problems.push(format!(
                        "object {}: missing child {}",
                        t.id[row], t.child_id[c]
                    ));
                }
            }
            if problems.len() > 1000 {
                return problems;
            }
        }
    }
    problems
}
