//! The entries of one area kind's runs (`pieces::AreaRuns`: one per object and area) ordered
//! by area code, then by an enumerated property's value: the clustered index a grouping by
//! area and property over every object reads. Each (area, value) group is then one stretch
//! of entries, counted by its length and measured by summing its lengths in order, as a
//! database reads a B-tree on (area, value) that includes the length.

use std::ops::Range;

use super::pieces::AreaRuns;

/// The entries of [`AreaRuns`] by (area code, value rank), each with its object and length.
#[derive(Debug)]
pub struct AreaValueRuns {
    /// The object row of each entry, in (code, rank) order.
    pub owners: Vec<u32>,
    /// The length of each entry inside its area, meters, in the same order.
    pub length_m: Vec<f64>,
    /// The stretches of one (code, rank), in order: the code, the rank and the stretch's end.
    pub groups: Vec<(u32, u16, u32)>,
}

impl AreaValueRuns {
    /// The entries of `runs` ordered by area code, then by `rank(owner)` (the property's value
    /// as a rank), then as they were: two stable counting sorts, by rank and then by code
    /// (codes of the run kinds fit in 16 bits, as ranks do).
    pub fn build(runs: &AreaRuns, rank: impl Fn(usize) -> u16) -> AreaValueRuns {
        let n = runs.codes.len();
        let ranks: Vec<u16> = runs.owners.iter().map(|&o| rank(o as usize)).collect();
        let by_rank = counting_sort(0..n as u32, |e| usize::from(ranks[e as usize]));
        let order = counting_sort(by_rank.into_iter(), |e| runs.codes[e as usize] as usize);
        let mut out = AreaValueRuns {
            owners: Vec::with_capacity(n),
            length_m: Vec::with_capacity(n),
            groups: Vec::new(),
        };
        let key = |e: u32| (runs.codes[e as usize], ranks[e as usize]);
        for (k, &e) in order.iter().enumerate() {
            out.owners.push(runs.owners[e as usize]);
            out.length_m.push(runs.length_m[e as usize]);
            if order.get(k + 1).is_none_or(|&next| key(next) != key(e)) {
                let (code, r) = key(e);
                out.groups.push((code, r, k as u32 + 1));
            }
        }
        out
    }

    /// The entries of group `i` of [`Self::groups`].
    pub fn entries(&self, i: usize) -> Range<usize> {
        let start = if i == 0 {
            0
        } else {
            self.groups[i - 1].2 as usize
        };
        start..self.groups[i].2 as usize
    }
}

/// The items of `items` ordered by `bucket` (stable: in their order within a bucket).
fn counting_sort(
    items: impl ExactSizeIterator<Item = u32> + Clone,
    bucket: impl Fn(u32) -> usize,
) -> Vec<u32> {
    let buckets = items.clone().map(&bucket).max().map_or(0, |m| m + 1);
    let mut starts = vec![0u32; buckets + 1];
    for i in items.clone() {
        starts[bucket(i) + 1] += 1;
    }
    for b in 1..=buckets {
        starts[b] += starts[b - 1];
    }
    let mut out = vec![0u32; items.len()];
    for i in items {
        let at = &mut starts[bucket(i)];
        out[*at as usize] = i;
        *at += 1;
    }
    out
}

/// The sum of `xs` in four interleaved partial sums (the adds of one do not wait on the
/// others), added at the end.
pub fn sum(xs: &[f64]) -> f64 {
    let mut lanes = [0.0f64; 4];
    let chunks = xs.chunks_exact(4);
    let rest: f64 = chunks.remainder().iter().sum();
    for c in chunks {
        for (l, x) in lanes.iter_mut().zip(c) {
            *l += x;
        }
    }
    (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]) + rest
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each group holds exactly the entries of its (code, rank), every entry once; the sum
    /// adds as a plain sum does, within rounding.
    #[test]
    fn groups_hold_their_entries() {
        // 5 objects: codes by entry, the fourth object in two areas
        let runs = AreaRuns::from_entries(
            &[0, 1, 2, 3, 3, 4],
            &[7, 3, 7, 3, 7, 3],
            &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0],
        );
        let ranks = [2u16, 0, 2, 1, 0];
        let c = AreaValueRuns::build(&runs, |o| ranks[o]);
        let mut seen = Vec::new();
        for (i, &(code, rank, _)) in c.groups.iter().enumerate() {
            for e in c.entries(i) {
                let o = c.owners[e] as usize;
                assert_eq!(ranks[o], rank);
                let k = (0..6).find(|&k| runs.owners[k] as usize == o && runs.codes[k] == code);
                let k = k.expect("an entry of its own");
                assert_eq!(c.length_m[e], runs.length_m[k]);
                seen.push(k);
            }
        }
        seen.sort_unstable();
        assert_eq!(seen, (0..6).collect::<Vec<_>>());
        // the order a plain sort by (code, rank, entry) gives
        let mut sorted: Vec<(u32, u16, usize)> = (0..6)
            .map(|k| (runs.codes[k], ranks[runs.owners[k] as usize], k))
            .collect();
        sorted.sort_unstable();
        let owners: Vec<u32> = sorted.iter().map(|&(_, _, k)| runs.owners[k]).collect();
        assert_eq!(c.owners, owners);
        let keys: Vec<(u32, u16)> = c.groups.iter().map(|g| (g.0, g.1)).collect();
        assert_eq!(keys, [(3, 0), (3, 1), (7, 1), (7, 2)]);
        for n in 0..40 {
            let xs: Vec<f64> = (0..n).map(|k| f64::from(k) * 0.37 + 1e-3).collect();
            let plain: f64 = xs.iter().sum();
            assert!((sum(&xs) - plain).abs() <= 1e-9 * plain.max(1.0), "{n}");
        }
    }
}
