//! kruise has no unit table for `getPodsForStatefulSet` (its controller tests go through a fake
//! client); these rows follow Kubernetes' `ClaimObject` branch by branch.

use super::*;
use crate::core::rollout::statefulset::fixtures::{named_pod, stateful_set};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

fn owned_by(mut pod: Pod, uid: &str, controller: bool) -> Pod {
    pod.metadata.owner_references = Some(vec![OwnerReference {
        api_version: "apps.kruise.io/v1beta1".into(),
        kind: "StatefulSet".into(),
        name: "x".into(),
        uid: uid.into(),
        controller: Some(controller),
        block_owner_deletion: None,
    }]);
    pod
}

fn in_ns(mut pod: Pod, ns: &str) -> Pod {
    pod.metadata.namespace = Some(ns.into());
    pod
}

fn names(v: &[&Pod]) -> Vec<String> {
    v.iter().map(|p| pods::name(p).to_string()).collect()
}

#[test]
fn claim_pods_rows() {
    let set = stateful_set(3); // uid "test", selector foo=bar, namespace default
    let deleting = |mut p: Pod| {
        p.metadata.deletion_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
        p
    };
    let pods = vec![
        owned_by(in_ns(named_pod("foo-0", &[("foo", "bar")]), "default"), "test", true), // kept
        owned_by(in_ns(named_pod("foo-1", &[("foo", "other")]), "default"), "test", true), // released: selector
        owned_by(in_ns(named_pod("bar-1", &[("foo", "bar")]), "default"), "test", true), // released: not a member
        owned_by(in_ns(named_pod("foo-2", &[("foo", "bar")]), "default"), "other-uid", true), // another controller
        owned_by(in_ns(named_pod("foo-3", &[("foo", "bar")]), "default"), "test", false), // not a controller ref: orphan
        in_ns(named_pod("foo-4", &[("foo", "bar")]), "default"),                          // orphan: adopted
        in_ns(named_pod("foo-5", &[("foo", "nope")]), "default"),                         // orphan not matching
        deleting(in_ns(named_pod("foo-6", &[("foo", "bar")]), "default")),                // orphan being deleted
        in_ns(named_pod("foo-7", &[("foo", "bar")]), "elsewhere"),                        // orphan in another namespace
    ];
    let refs: Vec<&Pod> = pods.iter().collect();
    let c = claim_pods(&set, &refs).unwrap();
    assert_eq!(names(&c.owned), ["foo-0", "foo-3", "foo-4"]);
    assert_eq!(names(&c.adopt), ["foo-3", "foo-4"]);
    assert_eq!(names(&c.release), ["foo-1", "bar-1"]);
    // A set being deleted neither adopts nor releases.
    let mut gone = set.clone();
    gone.metadata.deletion_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
    let c = claim_pods(&gone, &refs).unwrap();
    assert_eq!((names(&c.owned), c.adopt.len(), c.release.len()), (vec!["foo-0".to_string()], 0, 0));
    // No selector selects nothing: every controlled pod is released.
    let mut bare = set.clone();
    bare.spec.selector = None;
    let c = claim_pods(&bare, &refs).unwrap();
    assert_eq!((c.owned.len(), names(&c.release)), (0, vec!["foo-0".to_string(), "foo-1".into(), "bar-1".into()]));
}

#[test]
fn claim_revisions_rows() {
    let set = stateful_set(3);
    let rev = |name: &str, labels: &[(&str, &str)], controller: Option<&str>| ControllerRevision {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
            owner_references: controller
                .map(|uid| vec![OwnerReference { uid: uid.into(), controller: Some(true), ..Default::default() }]),
            ..Default::default()
        },
        data: None,
        revision: 1,
    };
    let revisions = vec![
        rev("mine", &[("foo", "bar")], Some("test")),
        rev("orphan", &[("foo", "bar")], None),
        rev("theirs", &[("foo", "bar")], Some("other")),
        rev("unmatched", &[("foo", "baz")], None),
    ];
    let (listed, orphans) = claim_revisions(&set, &revisions).unwrap();
    let n = |v: Vec<&ControllerRevision>| v.into_iter().map(|r| r.metadata.name.clone().unwrap()).collect::<Vec<_>>();
    assert_eq!(n(listed), ["mine", "orphan"]);
    assert_eq!(n(orphans), ["orphan"]);
}
