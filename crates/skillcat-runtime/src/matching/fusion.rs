//! Normalised score fusion of a lexical and a dense ranking.
//!
//! Per query: each ranking's best [`FUSION_DEPTH`] hits, each list min-max normalised to 0..1 on
//! its own, then `weight · lexical + (1 − weight) · dense` over the union (a skill missing from
//! one list scores 0 there). Scores of different rankers are not comparable; their order within
//! one query is, and min-max keeps it. Reciprocal-rank fusion was measured and did worse (see
//! `docs/matching.md`).

use super::{Hit, top_k};

/// How many hits of each ranking take part in a fusion.
pub const FUSION_DEPTH: usize = 50;

/// Fuses two rankings (each best first, as rankers return them) into the best `k`, with
/// `weight` the lexical share (clamped to 0..=1). Only the first [`FUSION_DEPTH`] hits of each
/// list are read.
pub fn fuse(lexical: &[Hit], dense: &[Hit], weight: f32, k: usize) -> Vec<Hit> {
    let weight = if weight.is_nan() {
        0.5
    } else {
        weight.clamp(0.0, 1.0)
    };
    let mut merged: Vec<(usize, f32)> = Vec::with_capacity(2 * FUSION_DEPTH);
    for (list, share) in [(lexical, weight), (dense, 1.0 - weight)] {
        let list = &list[..list.len().min(FUSION_DEPTH)];
        let (lo, hi) = list
            .iter()
            .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), h| {
                (lo.min(h.score), hi.max(h.score))
            });
        for h in list {
            // One hit, or all equal: each is the best of its list.
            let norm = if hi > lo {
                (h.score - lo) / (hi - lo)
            } else {
                1.0
            };
            match merged.iter_mut().find(|(i, _)| *i == h.index) {
                Some((_, s)) => *s += share * norm,
                None => merged.push((h.index, share * norm)),
            }
        }
    }
    top_k(merged.into_iter(), k)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hits(list: &[(usize, f32)]) -> Vec<Hit> {
        list.iter()
            .map(|&(index, score)| Hit { index, score })
            .collect()
    }

    fn order(list: &[Hit]) -> Vec<usize> {
        list.iter().map(|h| h.index).collect()
    }

    #[test]
    fn table() {
        let lexical = hits(&[(1, 9.0), (2, 5.0), (3, 1.0)]);
        let dense = hits(&[(3, 0.9), (2, 0.8), (4, 0.1)]);
        // Lexical only, dense only, then a blend where 2 (second in both) wins; 1 and 3 tie.
        assert_eq!(order(&fuse(&lexical, &dense, 1.0, 2)), [1, 2]);
        assert_eq!(order(&fuse(&lexical, &dense, 0.0, 2)), [3, 2]);
        let blend = fuse(&lexical, &dense, 0.5, 4);
        assert_eq!(order(&blend), [2, 1, 3, 4]);
        // 2: 0.5 · 0.5 + 0.5 · 0.875; 4 is last in dense and absent from lexical.
        assert!((blend[0].score - (0.25 + 0.4375)).abs() < 1e-6);
        assert_eq!(blend[3].score, 0.0);
    }

    #[test]
    fn empty_and_single_lists() {
        let one = hits(&[(7, 0.3)]);
        assert_eq!(order(&fuse(&[], &one, 0.5, 3)), [7]);
        assert_eq!(fuse(&[], &one, 0.5, 3)[0].score, 0.5);
        assert!(fuse(&[], &[], 0.5, 3).is_empty());
        // A weight out of range is clamped.
        assert_eq!(fuse(&one, &[], 7.0, 1)[0].score, 1.0);
    }

    #[test]
    fn only_the_first_fifty_count() {
        let long: Vec<Hit> = (0..80)
            .map(|i| Hit {
                index: i,
                score: 100.0 - i as f32,
            })
            .collect();
        let fused = fuse(&long, &[], 1.0, 100);
        assert_eq!(fused.len(), FUSION_DEPTH);
    }
}
