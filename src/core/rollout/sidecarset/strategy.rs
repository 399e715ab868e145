//! Which matched pods get the new sidecars this round (spec §4.12 item 7; kruise
//! `sidecarset_strategy.go` `GetNextUpgradePods`, `SortUpdateIndexes`, `calculateUpgradeCount`,
//! `parseUpdateScatterTerms`).
//!
//! Waiting pods are the ones not yet updated, selected by `updateStrategy.selector` (when set),
//! upgradable (only images differ: `hash-without-image` equal) and with no ready sidecar still
//! being upgraded. They are sorted in Kubernetes' active-pods order, then by `priorityStrategy`,
//! then spread by `scatterStrategy` (a term with value `*` stands for every value of its key the
//! pods carry). The first `len − partition` of them are candidates; not-ready candidates are always
//! taken (upgrading them costs no availability), ready ones while fewer than `maxUnavailable`
//! pods are updated but not yet consistent and ready.
//!
//! One choice differs from kruise on purpose (kruise #1812): a percentage `maxUnavailable` never
//! counts as 0, so `maxUnavailable: 0%` or a rounding on few pods still lets one pod through.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::pods::{Facts, SetView};
use crate::apis::common::UpdateScatterTerm;
use crate::compat::intstr::{calculate_partition_replicas, k8s_value_from_int_or_percent};
use crate::compat::selector::Selector;
use crate::core::pods;
use crate::core::rollout::order;

/// What the strategy picked, as indexes into the matched pods.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Selection {
    /// Pods to upgrade this round, in order.
    pub upgrade: Vec<usize>,
    /// Pods that can never be upgraded in place to this version (more than images differ).
    pub not_upgradable: Vec<usize>,
    /// Why the rollout does not go further this round.
    pub waiting: Vec<String>,
}

/// `parseUpdateScatterTerms`: `value: "*"` becomes one term per value of the key on the pods
/// (in pod order), duplicates dropped.
pub fn scatter_terms(strategy: &[UpdateScatterTerm], pods: &[&Pod]) -> Vec<UpdateScatterTerm> {
    let mut out: Vec<UpdateScatterTerm> = Vec::new();
    let mut insert = |t: UpdateScatterTerm| {
        if !out.iter().any(|o| o.key == t.key && o.value == t.value) {
            out.push(t);
        }
    };
    for term in strategy {
        if term.value != "*" {
            insert(term.clone());
            continue;
        }
        for p in pods {
            if let Some(v) = pods::labels(p).get(&term.key) {
                insert(UpdateScatterTerm { key: term.key.clone(), value: v.clone() });
            }
        }
    }
    out
}

/// `SortUpdateIndexes`.
pub fn sort_indexes(view: &SetView<'_>, pods: &[&Pod], mut indexes: Vec<usize>) -> Vec<usize> {
    indexes.sort_by(|&a, &b| pods::active_pods_order(pods[a], pods[b]));
    let strategy = &view.set.spec.update_strategy;
    let labels: Vec<Option<&BTreeMap<String, String>>> = pods.iter().map(|p| Some(pods::labels(p))).collect();
    if let Some(priority) = &strategy.priority_strategy {
        order::sort_by_priority(priority, &labels, &mut indexes);
    }
    if !strategy.scatter_strategy.is_empty() {
        let terms = scatter_terms(&strategy.scatter_strategy, pods);
        indexes = order::sort_by_scatter(&terms, &labels, indexes);
    }
    indexes
}

/// `maxUnavailable` over `total` pods (default 1, percentages rounded up, never 0 for a
/// percentage).
pub fn max_unavailable(value: Option<&IntOrString>, total: usize) -> usize {
    let total = i64::try_from(total).unwrap_or(i64::MAX);
    match value {
        None => 1,
        Some(v @ IntOrString::Int(_)) => {
            usize::try_from(k8s_value_from_int_or_percent(Some(v), total, true).unwrap_or(0)).unwrap_or(0)
        }
        Some(v @ IntOrString::String(_)) => {
            usize::try_from(k8s_value_from_int_or_percent(Some(v), total, true).unwrap_or(1)).unwrap_or(1).max(1)
        }
    }
}

/// `GetNextUpgradePods`: `facts[i]` is what the round read of `pods[i]`.
pub fn next_upgrade_pods(view: &SetView<'_>, pods: &[&Pod], facts: &[Facts]) -> Selection {
    let strategy = &view.set.spec.update_strategy;
    // kruise: a selector that does not parse selects nothing.
    let selector = strategy.selector.as_ref().map(|s| Selector::from_validated(Some(s)).ok());
    let selected = |p: &Pod| match &selector {
        None => true,
        Some(None) => false,
        Some(Some(s)) => s.matches(pods::labels(p)),
    };
    let mut sel = Selection::default();
    let mut waiting = Vec::new();
    let mut in_flight = 0usize;
    for (i, (p, f)) in pods.iter().zip(facts).enumerate() {
        if f.updated || !selected(p) {
            continue;
        }
        if !f.can_upgrade {
            sel.not_upgradable.push(i);
        } else if f.upgrade_settled {
            waiting.push(i);
        } else {
            in_flight += 1;
        }
    }
    if in_flight > 0 {
        sel.waiting.push(format!("{in_flight} pod(s) still run a sidecar upgrade that has not settled"));
    }
    let waiting = sort_indexes(view, pods, waiting);

    let total = pods.len();
    let partition = match &strategy.partition {
        None => 0,
        Some(p) => calculate_partition_replicas(Some(p), i32::try_from(total).ok()).unwrap_or(0),
    };
    let partition = usize::try_from(partition).unwrap_or(0);
    if waiting.len() <= partition {
        if !waiting.is_empty() {
            sel.waiting.push(format!("partition keeps {partition} pod(s) at the old sidecars"));
        }
        return sel;
    }
    let candidates = &waiting[..waiting.len() - partition];
    let max = max_unavailable(strategy.max_unavailable.as_ref(), total);
    let mut unavailable = facts.iter().filter(|f| f.updated && (!f.consistent || !f.ready)).count();
    for &i in candidates {
        if !facts[i].ready {
            sel.upgrade.push(i);
            continue;
        }
        if unavailable >= max {
            sel.waiting.push(format!(
                "maxUnavailable {max}: {unavailable} pod(s) are being upgraded or not ready, {} wait",
                candidates.len() - sel.upgrade.len()
            ));
            break;
        }
        unavailable += 1;
        sel.upgrade.push(i);
    }
    sel
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::rollout::sidecarset::testkit::*;
    use crate::apis::common::{UpdatePriorityStrategy, UpdatePriorityOrderTerm, UpdatePriorityWeightTerm};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
    use serde_json::json;

    fn int(i: i32) -> Option<IntOrString> {
        Some(IntOrString::Int(i))
    }

    fn pct(s: &str) -> Option<IntOrString> {
        Some(IntOrString::String(s.into()))
    }

    fn pick(set: &crate::apis::SidecarSet, pods: &[Pod]) -> (Vec<String>, usize) {
        let view = SetView::new(set);
        let refs: Vec<&Pod> = pods.iter().collect();
        let facts: Vec<Facts> = refs.iter().map(|p| Facts::of(&view, p)).collect();
        let sel = next_upgrade_pods(&view, &refs, &facts);
        (sel.upgrade.iter().map(|&i| pods[i].metadata.name.clone().unwrap()).collect(), sel.not_upgradable.len())
    }

    /// kruise `sidecarset_strategy_test.go` `TestGetNextUpgradePods`, every row.
    #[test]
    fn kruise_next_upgrade_counts() {
        type Row = (&'static str, (usize, usize, usize), Option<IntOrString>, Option<IntOrString>, usize, usize);
        let rows: Vec<Row> = vec![
            ("maxUnavailable 10", (100, 30, 26), int(10), None, 6, 0),
            ("maxUnavailable 10%", (1000, 300, 260), pct("10%"), None, 60, 0),
            ("maxUnavailable 5%", (1000, 300, 250), pct("5%"), None, 0, 0),
            ("maxUnavailable 100", (100, 30, 27), int(100), None, 70, 0),
            ("partition 180", (1000, 800, 760), int(100), int(180), 20, 0),
            ("partition 100", (1000, 800, 760), int(100), int(100), 60, 0),
            ("partition 18%", (1000, 800, 760), int(100), pct("18%"), 20, 0),
            ("partition 10%", (1000, 800, 760), int(100), pct("10%"), 60, 0),
            ("maxUnavailable 5% of 5", (5, 0, 0), pct("5%"), None, 1, 0),
            ("partition 99% of 5", (5, 0, 0), int(5), pct("99%"), 1, 0),
            ("partition 1% of 5", (5, 0, 0), int(5), pct("1%"), 4, 0),
        ];
        for (name, (count, upgraded, ready), max, partition, want, want_not) in rows {
            let mut set = factory_set("bbb", "without-aaa");
            set.spec.update_strategy.max_unavailable = max;
            set.spec.update_strategy.partition = partition;
            let pods = shuffled(factory_pods(count, upgraded, ready, &set), count as u64);
            let (up, not) = pick(&set, &pods);
            assert_eq!((up.len(), not), (want, want_not), "{name}");
        }

        // selector(app=test, count=30).
        let mut set = factory_set("bbb", "without-aaa");
        set.spec.update_strategy.max_unavailable = int(100);
        set.spec.update_strategy.selector =
            Some(LabelSelector { match_labels: Some([("app".into(), "test".into())].into()), ..Default::default() });
        let mut pods = factory_pods(1000, 0, 0, &set);
        for p in pods.iter_mut().take(30) {
            p.metadata.labels.as_mut().unwrap().insert("app".into(), "test".into());
        }
        assert_eq!(pick(&set, &pods).0.len(), 30, "selector");

        // Not upgradable: every pod.
        let mut set = factory_set("bbb", "without-bbb");
        set.spec.update_strategy.max_unavailable = int(100);
        let pods = factory_pods(100, 0, 0, &set);
        assert_eq!(pick(&set, &pods), (vec![], 100), "not upgradable");
    }

    /// Our rule for kruise #1812: `0%` (and any percentage) lets one pod through.
    #[test]
    fn percent_max_unavailable_is_at_least_one() {
        assert_eq!(max_unavailable(pct("0%").as_ref(), 5), 1);
        assert_eq!(max_unavailable(pct("10%").as_ref(), 0), 1);
        assert_eq!(max_unavailable(int(0).as_ref(), 5), 0);
        assert_eq!(max_unavailable(None, 5), 1);
        assert_eq!(max_unavailable(pct("50%").as_ref(), 5), 3);
        let mut set = factory_set("bbb", "without-aaa");
        set.spec.update_strategy.max_unavailable = pct("0%");
        assert_eq!(pick(&set, &factory_pods(5, 0, 0, &set)).0.len(), 1);
    }

    /// kruise `TestSortNextUpgradePods`, every row.
    #[test]
    fn kruise_sort_rows() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let mut set = factory_set("bbb", "without-aaa");
        set.spec.update_strategy.max_unavailable = int(10);

        // Newer first.
        let pods = shuffled(factory_pods(20, 10, 5, &set), 7);
        assert_eq!(pick(&set, &pods).0, names(&["pod-19", "pod-18", "pod-17", "pod-16", "pod-15"]));

        // Not-ready pods first, and always taken.
        let mut pods = factory_pods(20, 10, 5, &set);
        for i in [10, 13] {
            set_ready(&mut pods[i], false);
        }
        let pods = shuffled(pods, 3);
        assert_eq!(
            pick(&set, &pods).0,
            names(&["pod-13", "pod-10", "pod-19", "pod-18", "pod-17", "pod-16", "pod-15"])
        );

        // Weight priority.
        let mut pods = factory_pods(20, 10, 2, &set);
        pods[15].metadata.labels.as_mut().unwrap().insert("test-key".into(), "bar".into());
        pods[16].metadata.labels.as_mut().unwrap().insert("test-key".into(), "foo".into());
        let term = |w: i32, v: &str| UpdatePriorityWeightTerm {
            weight: w,
            match_selector: LabelSelector {
                match_labels: Some([("test-key".into(), v.into())].into()),
                ..Default::default()
            },
        };
        let mut weighted = set.clone();
        weighted.spec.update_strategy.priority_strategy =
            Some(UpdatePriorityStrategy { weight_priority: vec![term(50, "foo"), term(30, "bar")], ..Default::default() });
        assert_eq!(pick(&weighted, &shuffled(pods, 5)).0, names(&["pod-16", "pod-15"]));

        // Order priority.
        let mut pods = factory_pods(20, 10, 2, &set);
        for p in &mut pods {
            p.metadata.labels.as_mut().unwrap().insert("key1".into(), "5".into());
        }
        pods[17].metadata.labels.as_mut().unwrap().insert("key1".into(), "10".into());
        pods[18].metadata.labels.as_mut().unwrap().insert("key1".into(), "20".into());
        let mut ordered = set.clone();
        ordered.spec.update_strategy.priority_strategy = Some(UpdatePriorityStrategy {
            order_priority: vec![UpdatePriorityOrderTerm { ordered_key: "key1".into() }],
            ..Default::default()
        });
        assert_eq!(pick(&ordered, &shuffled(pods, 9)).0, names(&["pod-18", "pod-17"]));
    }

    /// kruise `TestParseUpdateScatterTerms`, both rows.
    #[test]
    fn kruise_scatter_terms() {
        let t = |k: &str, v: &str| UpdateScatterTerm { key: k.into(), value: v.into() };
        let set = factory_set("bbb", "without-aaa");
        let pods = factory_pods(100, 0, 0, &set);
        let refs: Vec<&Pod> = pods.iter().collect();
        let plain = vec![t("key-1", "value-1"), t("key-2", "value-2"), t("key-3", "value-3")];
        assert_eq!(scatter_terms(&plain, &refs), plain);

        let mut pods = factory_pods(100, 0, 0, &set);
        for (i, v) in [(0, "value-4-0"), (1, "value-4-1"), (2, "value-4-2"), (3, "value-4"), (4, "value-4")] {
            pods[i].metadata.labels.as_mut().unwrap().insert("key-4".into(), v.into());
        }
        let refs: Vec<&Pod> = pods.iter().collect();
        let mut with_star = plain.clone();
        with_star.push(t("key-1", "value-1"));
        with_star.push(t("key-4", "*"));
        let mut want = plain.clone();
        want.extend([t("key-4", "value-4-0"), t("key-4", "value-4-1"), t("key-4", "value-4-2"), t("key-4", "value-4")]);
        assert_eq!(scatter_terms(&with_star, &refs), want);
    }

    /// A pod whose ready sidecar is still being upgraded waits (`IsSidecarSetUpgradable`'s
    /// `consistent == false`), and the plan says so.
    #[test]
    fn unsettled_pods_wait() {
        let set = factory_set("ccc", "without-aaa");
        // Upgraded to "bbb" but the kubelet has not restarted the sidecar: not "ccc", not settled.
        let pods = factory_pods(3, 1, 0, &factory_set("bbb", "without-aaa"));
        let view = SetView::new(&set);
        let refs: Vec<&Pod> = pods.iter().collect();
        let facts: Vec<Facts> = refs.iter().map(|p| Facts::of(&view, p)).collect();
        let sel = next_upgrade_pods(&view, &refs, &facts);
        assert_eq!(sel.upgrade, vec![2]);
        assert!(sel.waiting[0].contains("1 pod(s) still run a sidecar upgrade"), "{:?}", sel.waiting);
        let _ = json!({});
    }
}
