//! Which pods a PodUnavailableBudget counts and how many it expects (kruise v1.9
//! `pubcontrol.GetPodsForPub` with `controllerfinder.GetPodsForRef` and
//! `GetExpectedScaleForPods`), over workloads the caller has resolved:
//! - a `targetRef` budget counts the active pods controlled by the workload (for a Deployment,
//!   by its ReplicaSets) and expects the workload's replicas — none at all when it has none or is
//!   being deleted;
//! - a selector budget counts the active pods of its namespace its selector matches and expects
//!   the sum of the replicas of their distinct controllers (a pod of a Deployment's ReplicaSet
//!   counts the Deployment);
//! - either way `pub.kruise.io/protect-total-replicas` replaces the expected number.
//!
//! It also lists the pods that do not yet name the budget in `kruise.io/related-pub`
//! (`patchRelatedPubAnnotationInPod`): pods created before the budget.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

use super::{PROTECT_TOTAL_REPLICAS, controller_of};
use crate::apis::podunavailablebudget::PodUnavailableBudget;
use crate::compat::selector::Selector;
use crate::core::pods;

/// A workload as the finder resolved it (`ScaleAndSelector`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Workload {
    /// Its uid.
    pub uid: String,
    /// `spec.replicas` (the scale).
    pub replicas: i32,
    /// Being deleted: its pods are not counted.
    pub deleting: bool,
}

/// The pods a budget counts and the number it expects.
#[derive(Clone, Debug, PartialEq)]
pub struct Targets<'a> {
    /// Active pods covered.
    pub pods: Vec<&'a Pod>,
    /// Expected pods (`totalReplicas`).
    pub expected: i32,
}

/// The `protect-total-replicas` annotation, when set (0 when it does not parse, as kruise's
/// ignored `ParseInt` error leaves it).
pub fn total_replicas_override(budget: &PodUnavailableBudget) -> Option<i32> {
    let value = budget.metadata.annotations.as_ref()?.get(PROTECT_TOTAL_REPLICAS).filter(|v| !v.is_empty())?;
    Some(value.parse::<i32>().unwrap_or(0))
}

/// A `targetRef` budget: `workload` as resolved (`None`: not found), `controller_uids` the uids
/// owning its pods (the workload's, or its ReplicaSets' for a Deployment with any).
pub fn for_target<'a>(
    budget: &PodUnavailableBudget,
    workload: Option<&Workload>,
    controller_uids: &[String],
    namespace_pods: &[&'a Pod],
) -> Targets<'a> {
    let (mut pods, mut expected) = match workload {
        Some(w) if !w.deleting && w.replicas != 0 => {
            let owned = namespace_pods
                .iter()
                .copied()
                .filter(|p| pods::is_active(p))
                .filter(|p| controller_of(p).is_some_and(|r| controller_uids.contains(&r.uid)))
                .collect();
            (owned, w.replicas)
        }
        _ => (Vec::new(), 0),
    };
    if let Some(n) = total_replicas_override(budget) {
        expected = n;
    }
    pods.sort_by_key(|p| pods::name(p).to_string());
    Targets { pods, expected }
}

/// A selector budget: the active pods its selector matches (none for a missing, empty or
/// invalid selector); `resolve` finds the workload a controller reference stands for (a
/// ReplicaSet's Deployment), and the expected number sums the distinct ones.
pub fn for_selector<'a>(
    budget: &PodUnavailableBudget,
    namespace_pods: &[&'a Pod],
    mut resolve: impl FnMut(&Pod, &OwnerReference) -> Option<Workload>,
) -> Targets<'a> {
    let selector = match budget.spec.selector.as_ref().map(Selector::from_label_selector) {
        Some(Ok(s)) if !s.is_empty() => s,
        _ => return Targets { pods: Vec::new(), expected: total_replicas_override(budget).unwrap_or(0) },
    };
    let mut selected: Vec<&Pod> =
        namespace_pods.iter().copied().filter(|p| pods::is_active(p) && selector.matches(pods::labels(p))).collect();
    selected.sort_by_key(|p| pods::name(p).to_string());
    let expected = match total_replicas_override(budget) {
        Some(n) => n,
        None => {
            let mut seen_refs: Vec<&str> = Vec::new();
            let mut scales: Vec<(String, i32)> = Vec::new();
            for pod in &selected {
                let Some(owner) = controller_of(pod) else { continue };
                if seen_refs.contains(&owner.uid.as_str()) {
                    continue;
                }
                seen_refs.push(&owner.uid);
                if let Some(w) = resolve(pod, owner).filter(|w| !w.deleting)
                    && !scales.iter().any(|(uid, _)| *uid == w.uid)
                {
                    scales.push((w.uid, w.replicas));
                }
            }
            scales.iter().map(|(_, n)| n).sum()
        }
    };
    Targets { pods: selected, expected }
}

/// The covered pods that name no budget yet.
pub fn pods_to_annotate<'a>(targets: &Targets<'a>) -> Vec<&'a Pod> {
    targets.pods.iter().copied().filter(|p| super::related_pub(p).is_empty()).collect()
}

#[cfg(test)]
mod tests {
    use super::super::testkit::{budget, pod};
    use super::*;
    use serde_json::{Value, json};

    fn owned(name: &str, owner_uid: &str, f: impl FnOnce(&mut Value)) -> Pod {
        pod(|v| {
            v["metadata"]["name"] = json!(name);
            v["metadata"]["ownerReferences"][0]["uid"] = json!(owner_uid);
            f(v);
        })
    }

    /// `GetPodsForRef`: the workload's active pods; its replicas; nothing for a workload with
    /// none or being deleted; the annotation wins.
    #[test]
    fn target_pods() {
        let b = budget(
            |v| v["spec"] = json!({"targetRef": {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "cs"}, "maxUnavailable": 1}),
        );
        let all = [
            owned("a", "cs-uid", |_| {}),
            owned("b", "cs-uid", |v| v["status"]["phase"] = json!("Succeeded")),
            owned("c", "other", |_| {}),
            owned("d", "cs-uid", |v| v["metadata"]["annotations"] = json!({})),
        ];
        let refs: Vec<&Pod> = all.iter().collect();
        let w = Workload { uid: "cs-uid".into(), replicas: 3, deleting: false };
        let t = for_target(&b, Some(&w), &["cs-uid".into()], &refs);
        assert_eq!(t.pods.iter().map(|p| pods::name(p)).collect::<Vec<_>>(), ["a", "d"]);
        assert_eq!(t.expected, 3);
        assert_eq!(pods_to_annotate(&t).iter().map(|p| pods::name(p)).collect::<Vec<_>>(), ["d"]);
        let none = Workload { replicas: 0, ..w.clone() };
        assert_eq!(for_target(&b, Some(&none), &["cs-uid".into()], &refs), Targets { pods: vec![], expected: 0 });
        let deleting = Workload { deleting: true, ..w.clone() };
        assert!(for_target(&b, Some(&deleting), &["cs-uid".into()], &refs).pods.is_empty());
        assert_eq!(for_target(&b, None, &[], &refs).expected, 0);
        let fixed = budget(|v| {
            v["spec"] =
                json!({"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}, "maxUnavailable": 1});
            v["metadata"]["annotations"][PROTECT_TOTAL_REPLICAS] = json!("7");
        });
        assert_eq!(for_target(&fixed, Some(&w), &["cs-uid".into()], &refs).expected, 7);
    }

    /// `GetExpectedScaleForPods`: the replicas of the distinct workloads of the selected pods.
    #[test]
    fn selector_pods() {
        let b = budget(|_| {});
        let all = [
            owned("a", "rs-1", |_| {}),
            owned("b", "rs-2", |_| {}),
            owned("c", "cs", |_| {}),
            owned("x", "cs", |v| v["metadata"]["labels"] = json!({"app": "other"})),
            pod(|v| {
                v["metadata"]["name"] = json!("orphan");
                v["metadata"].as_object_mut().expect("meta").remove("ownerReferences");
            }),
        ];
        let refs: Vec<&Pod> = all.iter().collect();
        // rs-1 and rs-2 belong to one Deployment of 4; the CloneSet has 2.
        let t = for_selector(&b, &refs, |_, owner| {
            Some(match owner.uid.as_str() {
                "rs-1" | "rs-2" => Workload { uid: "deploy".into(), replicas: 4, deleting: false },
                _ => Workload { uid: owner.uid.clone(), replicas: 2, deleting: false },
            })
        });
        assert_eq!(t.pods.iter().map(|p| pods::name(p)).collect::<Vec<_>>(), ["a", "b", "c", "orphan"]);
        assert_eq!(t.expected, 6);
        let empty = budget(|v| v["spec"]["selector"] = json!({}));
        assert!(for_selector(&empty, &refs, |_, _| None).pods.is_empty());
    }
}
