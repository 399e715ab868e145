//! The order in which pods are updated, shared by CloneSet, Advanced StatefulSet (unordered
//! updates) and SidecarSet (spec §1.0 UpdatePriorityStrategy/UpdateScatterStrategy, §5.5 step 5;
//! kruise's `pkg/util/updatesort`):
//! - priority: with `weightPriority`, the sum of the weights of the terms whose selector matches
//!   the pod, higher first; with `orderPriority`, the first `orderedKey` the pod carries decides its
//!   level (earlier key first) and, within a level, the integer suffix of the label value, higher
//!   first. Quirk kept: a pod carrying none of the keys gets level −1 and so comes FIRST. Ties keep
//!   their order (kruise sorts stably);
//! - scatter: for each `key=value` term, the pods matching it are spread evenly among the others.
//!
//! Both sort indexes into a pod list; pods are given by their labels, and a missing pod (an
//! Advanced StatefulSet's reserved ordinal) is `None`.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use crate::apis::common::{UpdatePriorityStrategy, UpdateScatterTerm};
use crate::compat::selector::Selector;

/// A pod's labels, or `None` for a missing pod.
pub type PodLabels<'a> = Option<&'a BTreeMap<String, String>>;

static EMPTY: BTreeMap<String, String> = BTreeMap::new();

fn labels_of<'a>(pods: &[PodLabels<'a>], i: usize) -> &'a BTreeMap<String, String> {
    pods.get(i).copied().flatten().unwrap_or(&EMPTY)
}

/// `getIntFromStringSuffix`: the trailing digits of a label value (0 when none or too large).
pub fn int_suffix(v: &str) -> i64 {
    let digits = v.bytes().rev().take_while(u8::is_ascii_digit).count();
    v[v.len() - digits..].parse().unwrap_or(0)
}

fn weight(strategy: &UpdatePriorityStrategy, labels: &BTreeMap<String, String>) -> i64 {
    strategy
        .weight_priority
        .iter()
        .filter(|t| Selector::from_validated(Some(&t.match_selector)).is_ok_and(|s| s.matches(labels)))
        .map(|t| i64::from(t.weight))
        .sum()
}

fn order_level(strategy: &UpdatePriorityStrategy, labels: &BTreeMap<String, String>) -> (i64, i64) {
    for (i, term) in strategy.order_priority.iter().enumerate() {
        if let Some(v) = labels.get(&term.ordered_key) {
            return (i as i64, int_suffix(v));
        }
    }
    (-1, 0)
}

/// kruise's `prioritySort.compare` as an order: `Less` means `a` is updated first, `Equal` a tie.
pub fn priority_order(
    strategy: &UpdatePriorityStrategy,
    a: &BTreeMap<String, String>,
    b: &BTreeMap<String, String>,
) -> Ordering {
    if !strategy.weight_priority.is_empty() {
        return weight(strategy, b).cmp(&weight(strategy, a));
    }
    if !strategy.order_priority.is_empty() {
        let ((la, oa), (lb, ob)) = (order_level(strategy, a), order_level(strategy, b));
        return la.cmp(&lb).then(ob.cmp(&oa));
    }
    Ordering::Equal
}

/// `prioritySort.Sort`: stable.
pub fn sort_by_priority(strategy: &UpdatePriorityStrategy, pods: &[PodLabels<'_>], indexes: &mut [usize]) {
    if strategy.weight_priority.is_empty() && strategy.order_priority.is_empty() {
        return;
    }
    indexes.sort_by(|&i, &j| priority_order(strategy, labels_of(pods, i), labels_of(pods, j)));
}

/// `scatterSort.Sort`.
pub fn sort_by_scatter(strategy: &[UpdateScatterTerm], pods: &[PodLabels<'_>], indexes: Vec<usize>) -> Vec<usize> {
    if strategy.is_empty() || indexes.len() <= 1 {
        return indexes;
    }
    let mut indexes = indexes;
    for term in scatter_terms(strategy, pods, &indexes) {
        indexes = scatter_by_term(&term, pods, &indexes);
    }
    indexes
}

/// `getScatterTerms`: the terms some waiting pod matches, most-matched first (stable).
pub fn scatter_terms(
    strategy: &[UpdateScatterTerm],
    pods: &[PodLabels<'_>],
    indexes: &[usize],
) -> Vec<UpdateScatterTerm> {
    if strategy.len() == 1 {
        return strategy.to_vec();
    }
    let mut terms: Vec<(UpdateScatterTerm, usize)> = Vec::new();
    for term in strategy {
        for &i in indexes {
            if labels_of(pods, i).get(&term.key) == Some(&term.value) {
                match terms.iter_mut().find(|(t, _)| t.key == term.key && t.value == term.value) {
                    Some((_, n)) => *n += 1,
                    None => terms.push((term.clone(), 1)),
                }
            }
        }
    }
    terms.sort_by_key(|t| std::cmp::Reverse(t.1));
    terms.into_iter().map(|(t, _)| t).collect()
}

#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct Group {
    count: usize,
    matched_size: usize,
    unmatched_size: usize,
    unmatched_remainder: usize,
}

fn go_round(x: f64) -> usize {
    // math.Round: half away from zero; the operands here are never negative.
    x.round() as usize
}

fn group(matched: usize, unmatched: usize) -> Group {
    let count = matched.min(unmatched);
    if count == 0 {
        return Group::default();
    }
    Group {
        count,
        matched_size: go_round(matched as f64 / count as f64),
        unmatched_size: go_round(unmatched as f64 / count as f64),
        unmatched_remainder: 0,
    }
}

/// `calculateGroupByDensity`.
fn group_by_density(
    total_matched: usize,
    total_unmatched: usize,
    update_matched: usize,
    update_unmatched: usize,
) -> Group {
    let total = group(total_matched, total_unmatched);
    let update = group(update_matched, update_unmatched);
    let density = |u: usize, m: usize| u as f32 / m as f32;
    if density(total_unmatched, total_matched) >= density(update_unmatched, update_matched) {
        return update;
    }
    let (ms, us) = (total.matched_size.max(1), total.unmatched_size.max(1));
    let count = (update_matched / ms).min(update_unmatched / us);
    Group {
        count,
        matched_size: total.matched_size,
        unmatched_size: total.unmatched_size,
        unmatched_remainder: update_unmatched.saturating_sub(count * total.unmatched_size),
    }
}

fn migrate(src: &mut Vec<usize>, dst: &mut Vec<usize>, size: usize) {
    let n = size.min(src.len());
    dst.extend(src.drain(..n));
}

/// `scatterPodsByRule`.
pub fn scatter_by_term(term: &UpdateScatterTerm, pods: &[PodLabels<'_>], indexes: &[usize]) -> Vec<usize> {
    let matches = |i: usize| labels_of(pods, i).get(&term.key) == Some(&term.value);
    let (mut matched, mut unmatched): (Vec<usize>, Vec<usize>) = indexes.iter().partition(|&&i| matches(i));
    if matched.len() <= 1 || unmatched.len() <= 1 {
        return indexes.to_vec();
    }
    let present = pods.iter().enumerate().filter(|(_, p)| p.is_some());
    let total_matched = present.clone().filter(|(i, _)| matches(*i)).count();
    let total_unmatched = present.count() - total_matched;

    // The last matched pod is kept for the very end.
    let last = matched.pop().unwrap_or_default();
    let g = group_by_density(total_matched - 1, total_unmatched, matched.len(), unmatched.len());
    let mut out = Vec::with_capacity(indexes.len());
    if g.unmatched_remainder > 0 {
        migrate(&mut unmatched, &mut out, g.unmatched_remainder);
    }
    for _ in 0..g.count {
        migrate(&mut matched, &mut out, g.matched_size);
        migrate(&mut unmatched, &mut out, g.unmatched_size);
    }
    out.append(&mut matched);
    out.append(&mut unmatched);
    out.push(last);
    out
}

#[cfg(test)]
mod tests;
