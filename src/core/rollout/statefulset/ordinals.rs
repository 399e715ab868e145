//! Which ordinals an Advanced StatefulSet's replicas have (spec §6.1), kruise's
//! `getStatefulSetReplicasRange`, `getStartOrdinal`, `podInOrdinalRange` and
//! `apiutil.GetReserveOrdinalIntSet`, and the first step of `updateStatefulSet` that sorts pods
//! into replicas (in range, not reserved) and condemned ones (every other pod with an ordinal):
//! - the first ordinal is `spec.ordinals.start` with gate `StatefulSetStartOrdinal`, else 0;
//! - `reserveOrdinals` holds integers and `"a-b"` inclusive ranges; one entry that is not a
//!   valid range (`ParseRange`: two `strconv.Atoi` numbers, a ≤ b) makes kruise ignore the whole
//!   list — kept, the webhook rejects such lists;
//! - walking up from the first ordinal and skipping reserved ones until `replicas` ordinals are
//!   collected gives `[start, end)`; a pod is a replica when its ordinal is in it and not reserved.
//!
//! Ranges are kept as ranges, never expanded: `"0-2000000000"` costs nothing here (Go builds a
//! set of every integer). Where Go keeps a slice with a nil slot per reserved ordinal, a
//! [`Slot`] list carries each replica's ordinal instead; a slot's index in Go is
//! `ordinal - start`.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::identity;
use crate::apis::statefulset::v1beta1::StatefulSet;
use crate::compat::intstr::go_atoi;
use crate::core::features::{FeatureGates, Gate};
use crate::core::pods;

/// `ParseRange`: `"a-b"` with `a ≤ b`, each a Go `strconv.Atoi` integer.
pub fn parse_range(s: &str) -> Result<(i64, i64), String> {
    let parts: Vec<&str> = s.split('-').collect();
    let [a, b] = parts.as_slice() else { return Err(format!("invalid range {s}")) };
    let (start, end) = (go_atoi(a)?, go_atoi(b)?);
    if start > end {
        return Err(format!("invalid range {s}"));
    }
    Ok((start, end))
}

/// The reserved ordinals (`GetReserveOrdinalIntSet`), as inclusive ranges.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reserved {
    ranges: Vec<(i64, i64)>,
}

impl Reserved {
    /// Reads `reserveOrdinals`; any invalid range gives the empty set, as in kruise.
    pub fn parse(items: &[IntOrString]) -> Reserved {
        let mut ranges = Vec::with_capacity(items.len());
        for item in items {
            match item {
                IntOrString::Int(i) => ranges.push((i64::from(*i), i64::from(*i))),
                IntOrString::String(s) => match parse_range(s) {
                    Ok(r) => ranges.push(r),
                    Err(_) => return Reserved::default(),
                },
            }
        }
        Reserved { ranges }
    }

    /// Whether `ordinal` is reserved.
    pub fn contains(&self, ordinal: i64) -> bool {
        self.ranges.iter().any(|&(a, b)| a <= ordinal && ordinal <= b)
    }

    /// Whether nothing is reserved.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// The first ordinal at or above `ordinal` that is not reserved.
    pub fn next_free(&self, mut ordinal: i64) -> i64 {
        while let Some(&(_, b)) = self.ranges.iter().find(|&&(a, b)| a <= ordinal && ordinal <= b) {
            ordinal = b.saturating_add(1);
        }
        ordinal
    }
}

/// `getStartOrdinal`: `spec.ordinals.start` with gate `StatefulSetStartOrdinal`, else 0.
pub fn start_ordinal(set: &StatefulSet, gates: &FeatureGates) -> i64 {
    match &set.spec.ordinals {
        Some(o) if gates.enabled(Gate::StatefulSetStartOrdinal) => i64::from(o.start),
        _ => 0,
    }
}

/// `spec.replicas` (1 when unset, as defaulted; negative counts as 0).
pub fn replicas(set: &StatefulSet) -> i64 {
    i64::from(set.spec.replicas.unwrap_or(1)).max(0)
}

/// The ordinals of the replicas: `[start, end)` minus the reserved ones.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplicaRange {
    /// First ordinal (inclusive).
    pub start: i64,
    /// Last ordinal (exclusive).
    pub end: i64,
    /// Reserved ordinals.
    pub reserved: Reserved,
}

impl ReplicaRange {
    /// `getStatefulSetReplicasRange`.
    pub fn of(set: &StatefulSet, gates: &FeatureGates) -> ReplicaRange {
        let start = start_ordinal(set, gates);
        let reserved = Reserved::parse(&set.spec.reserve_ordinals);
        // Go walks one ordinal at a time; whole free runs are taken at once here.
        let (mut left, mut at) = (replicas(set), start);
        let end = if left == 0 {
            start
        } else {
            loop {
                at = reserved.next_free(at);
                let next_reserved = reserved.ranges.iter().map(|&(a, _)| a).filter(|&a| a > at).min();
                let run = next_reserved.map_or(i64::MAX, |a| a - at);
                if left <= run {
                    break at.saturating_add(left);
                }
                left -= run;
                at = next_reserved.unwrap_or(at);
            }
        };
        ReplicaRange { start, end, reserved }
    }

    /// `podInOrdinalRangeWithParams` on an ordinal.
    pub fn contains(&self, ordinal: i64) -> bool {
        ordinal >= self.start && ordinal < self.end && !self.reserved.contains(ordinal)
    }

    /// `podInOrdinalRange`: the pod's ordinal is a replica's.
    pub fn contains_pod(&self, pod: &Pod) -> bool {
        identity::pod_ordinal(pod).is_some_and(|o| self.contains(i64::from(o)))
    }

    /// The replicas' ordinals, ascending.
    pub fn ordinals(&self) -> impl Iterator<Item = i64> + '_ {
        let mut next = self.reserved.next_free(self.start);
        std::iter::from_fn(move || {
            if next >= self.end {
                return None;
            }
            let this = next;
            next = self.reserved.next_free(this.saturating_add(1));
            Some(this)
        })
    }

    /// Go's slot count `end - start` (reserved slots included).
    pub fn slots(&self) -> i64 {
        self.end - self.start
    }
}

/// One replica ordinal and its pod, if there is one.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Slot<'a> {
    /// The ordinal.
    pub ordinal: i64,
    /// Its pod.
    pub pod: Option<&'a Pod>,
}

/// The pods sorted as `updateStatefulSet` sorts them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Members<'a> {
    /// One slot per replica ordinal, ascending.
    pub replicas: Vec<Slot<'a>>,
    /// Pods with an ordinal outside the range or reserved, highest ordinal first.
    pub condemned: Vec<&'a Pod>,
    /// Pods whose ordinal another replica pod already holds (`web-01` beside `web-1`); Go lets
    /// the later one in list order overwrite the earlier, here the one named `<set>-<ordinal>`
    /// wins and the others are listed so no two pods ever share an ordinal.
    pub duplicates: Vec<&'a Pod>,
}

/// Sorts `pods` into replicas and condemned pods; pods whose name has no ordinal are ignored.
pub fn members<'a>(set: &StatefulSet, range: &ReplicaRange, pods: &[&'a Pod]) -> Members<'a> {
    let mut replicas: Vec<Slot<'a>> = range.ordinals().map(|ordinal| Slot { ordinal, pod: None }).collect();
    let mut condemned = Vec::new();
    let mut duplicates = Vec::new();
    for &pod in pods {
        let Some(ordinal) = identity::pod_ordinal(pod).map(i64::from) else { continue };
        if !range.contains(ordinal) {
            condemned.push(pod);
            continue;
        }
        let Ok(i) = replicas.binary_search_by_key(&ordinal, |s| s.ordinal) else { continue };
        let canonical = |p: &Pod| pods::name(p) == identity::pod_name(set, ordinal);
        match replicas[i].pod {
            None => replicas[i].pod = Some(pod),
            Some(held) if !canonical(held) && canonical(pod) => {
                duplicates.push(held);
                replicas[i].pod = Some(pod);
            }
            Some(_) => duplicates.push(pod),
        }
    }
    condemned.sort_by_key(|p| std::cmp::Reverse(identity::pod_ordinal(p)));
    Members { replicas, condemned, duplicates }
}

#[cfg(test)]
mod tests;
