//! Kruise has no test of the DaemonSet pre-download; these rows follow
//! `daemonset_predownload_image.go` and the branch in `daemonset_controller.go` line by line.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::ControllerRevision;
use serde_json::{Value, json};

use super::*;
use crate::core::predownload::CREATED;
use crate::core::rollout::actions::{ActionKind, Write};

fn ds(strategy: Value, annotations: Value, status: Value) -> DaemonSet {
    serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "ns", "uid": "ds-uid", "annotations": annotations},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {"metadata": {"labels": {"app": "agent"}, "annotations": {"note": "x"}},
                "spec": {"imagePullSecrets": [{"name": "regcred"}],
                    "containers": [{"name": "main", "image": "agent:2"}, {"name": "side", "image": "side:1"}]}},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": strategy}
        },
        "status": status
    }))
    .unwrap_or_else(|e| panic!("{e}"))
}

fn status(desired: i32, updated: i32, revision: &str) -> Value {
    json!({"desiredNumberScheduled": desired, "updatedNumberScheduled": updated, "currentNumberScheduled": desired,
        "numberMisscheduled": 0, "numberReady": desired, "updateRevision": revision})
}

fn rev(hash: &str, containers: Value, labels: &[(&str, &str)]) -> ControllerRevision {
    let mut l: BTreeMap<String, String> = labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    l.insert("controller-revision-hash".into(), hash.into());
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "ControllerRevision",
        "metadata": {"name": format!("agent-{hash}"), "namespace": "ns", "labels": l, "resourceVersion": "5",
            "ownerReferences": [{"apiVersion": "apps.kruise.io/v1beta1", "kind": "DaemonSet", "name": "agent",
                "uid": "ds-uid", "controller": true}]},
        "data": {"spec": {"template": {"spec": {"containers": containers}, "$patch": "replace"}}},
        "revision": 1
    }))
    .unwrap_or_else(|e| panic!("{e}"))
}

fn new_rev() -> ControllerRevision {
    rev("new", json!([{"name": "main", "image": "agent:2"}, {"name": "side", "image": "side:1"}]), &[])
}

fn old_rev() -> ControllerRevision {
    rev("old", json!([{"name": "main", "image": "agent:1"}, {"name": "side", "image": "side:1"}]), &[])
}

fn partitioned() -> Value {
    json!({"partition": 1, "maxUnavailable": 1})
}

/// A rollout under way (5 nodes, partition 1): one job for the changed container, named
/// `<revision>-<container>`, owned by the v1beta1 DaemonSet, pulling on the nodes of pods not at
/// the update revision, with the parallelism annotation; the revision is labelled created. A
/// DaemonSet revision carries `controller-revision-hash` only, so kruise's read of
/// `controller.kubernetes.io/hash` gives "" in the job's labels and selector.
#[test]
fn one_job_per_changed_container() {
    let d = ds(partitioned(), json!({"apps.kruise.io/image-predownload-parallelism": "2"}), status(5, 0, "old"));
    let (update, old) = (new_rev(), old_rev());
    let p = plan(&d, "new", &update, &[&old]);
    assert_eq!(p.create.len(), 1, "{p:?}");
    let job = serde_json::to_value(&p.create[0]).unwrap_or_default();
    assert_eq!(
        job,
        json!({
            "apiVersion": "apps.kruise.io/v1alpha1", "kind": "ImagePullJob",
            "metadata": {"name": "agent-new-main", "namespace": "ns",
                "labels": {"app": "agent", "controller.kubernetes.io/hash": ""},
                "ownerReferences": [{"apiVersion": "apps.kruise.io/v1beta1", "kind": "DaemonSet", "name": "agent",
                    "uid": "ds-uid", "controller": true, "blockOwnerDeletion": true}]},
            "spec": {"image": "agent:2", "pullSecrets": ["regcred"],
                "podSelector": {"matchLabels": {"app": "agent"}, "matchExpressions": [
                    {"key": "controller-revision-hash", "operator": "NotIn", "values": ["agent-new", ""]}]},
                "parallelism": 2,
                "pullPolicy": {"timeoutSeconds": 300, "backoffLimit": 1},
                "completionPolicy": {"type": "Always", "ttlSecondsAfterFinished": 600},
                "sandboxConfig": {"labels": {"app": "agent", "controller.kubernetes.io/hash": ""},
                    "annotations": {"note": "x"}}}
        })
    );
    assert_eq!(p.label_revision, Some(("agent-new".into(), CREATED)));
    assert!(!p.delete_owned);
}

/// Rows of the one-batch check: (partition, maxUnavailable, desired, ignored?).
#[test]
fn everything_in_one_batch_is_ignored() {
    let rows: &[(Value, Value, i32, bool)] = &[
        // The default maxUnavailable 1 over one node: one batch.
        (Value::Null, Value::Null, 1, true),
        (Value::Null, Value::Null, 2, false),
        (json!(0), json!(3), 3, true),
        (json!(0), json!(2), 3, false),
        // maxUnavailable rounds up: 34% of 3 is 2 (not one batch), 67% of 3 is 3.
        (json!(0), json!("34%"), 3, false),
        (json!(0), json!("67%"), 3, true),
        // partition rounds down: 10% of 5 is 0.
        (json!("10%"), json!("100%"), 5, true),
        (json!("20%"), json!("100%"), 5, false),
        (json!(1), json!("100%"), 5, false),
        // No minimum number of pods, unlike the CloneSet: 2 nodes, one at a time, get jobs.
        (json!(0), json!(1), 2, false),
        // A set that schedules nothing yet: one batch.
        (Value::Null, Value::Null, 0, true),
    ];
    for (partition, max, desired, ignored) in rows {
        let mut strategy = serde_json::Map::new();
        if !partition.is_null() {
            strategy.insert("partition".into(), partition.clone());
        }
        if !max.is_null() {
            strategy.insert("maxUnavailable".into(), max.clone());
        }
        let d = ds(Value::Object(strategy), json!({}), status(*desired, 0, "old"));
        let p = plan(&d, "new", &new_rev(), &[&old_rev()]);
        let row = format!("partition {partition} maxUnavailable {max} desired {desired}: {p:?}");
        if *ignored {
            assert_eq!(p.label_revision, Some(("agent-new".into(), IGNORED)), "{row}");
            assert!(p.create.is_empty(), "{row}");
        } else {
            assert_eq!(p.label_revision, Some(("agent-new".into(), CREATED)), "{row}");
            assert_eq!(p.create.len(), 1, "{row}");
        }
    }
}

/// A partition that is no int or percent: an error, no label (tried again next round).
#[test]
fn an_unusable_partition_labels_nothing() {
    let d = ds(json!({"partition": "x"}), json!({}), status(5, 0, "old"));
    let p = plan(&d, "new", &new_rev(), &[&old_rev()]);
    assert!(p.create.is_empty() && p.label_revision.is_none(), "{p:?}");
    assert_eq!(p.errors.len(), 1, "{p:?}");
}

/// A revision labelled created or ignored is done; the threshold annotation is parsed (its error
/// reported) but not waited for, as in kruise.
#[test]
fn labelled_revisions_are_done_and_the_threshold_is_not_waited_for() {
    for key in [CREATED, IGNORED] {
        let update = rev("new", json!([{"name": "main", "image": "agent:2"}]), &[(key, "true")]);
        let p = plan(&ds(partitioned(), json!({}), status(5, 0, "old")), "new", &update, &[&old_rev()]);
        assert!(p.create.is_empty() && p.label_revision.is_none() && !p.delete_owned, "{key}: {p:?}");
    }
    let waiting =
        ds(partitioned(), json!({"apps.kruise.io/image-predownload-min-updated-ready-pods": "4"}), status(5, 0, "old"));
    assert_eq!(plan(&waiting, "new", &new_rev(), &[&old_rev()]).create.len(), 1);
    let bad = ds(
        partitioned(),
        json!({"apps.kruise.io/image-predownload-min-updated-ready-pods": "x%"}),
        status(5, 0, "old"),
    );
    let p = plan(&bad, "new", &new_rev(), &[&old_rev()]);
    assert_eq!((p.create.len(), p.errors.len()), (1, 1), "{p:?}");
}

/// The branch in Reconcile: jobs are worked on while the status names another revision or not
/// every pod is updated; the set's jobs are deleted once both agree.
#[test]
fn complete_when_the_status_agrees() {
    let rows = [(5, 5, "new", true), (5, 4, "new", false), (5, 5, "old", false), (0, 0, "new", true)];
    for (desired, updated, revision, done) in rows {
        let d = ds(partitioned(), json!({}), status(desired, updated, revision));
        assert_eq!(complete(&d, "new"), done, "{desired} {updated} {revision}");
        let p = plan(&d, "new", &new_rev(), &[&old_rev()]);
        assert_eq!(p.delete_owned, done, "{p:?}");
        assert_eq!(p.create.is_empty(), done, "{p:?}");
    }
}

/// `diffImagesBetweenRevisions` over several old revisions: a container changed against any of
/// them, or absent from all, is pulled; one a revision does not decode gives nothing.
#[test]
fn images_against_every_old_revision() {
    let new = rev(
        "new",
        json!([{"name": "main", "image": "agent:2"}, {"name": "side", "image": "side:1"}, {"name": "extra", "image": "e:1"}]),
        &[],
    );
    let older = rev("older", json!([{"name": "side", "image": "side:0"}]), &[]);
    let p = plan(&ds(partitioned(), json!({}), status(5, 0, "old")), "new", &new, &[&old_rev(), &older]);
    let images: Vec<(String, String)> =
        p.create.iter().map(|j| (j.metadata.name.clone().unwrap_or_default(), j.spec.image.clone())).collect();
    assert_eq!(
        images,
        [
            ("agent-new-extra".into(), "e:1".into()),
            ("agent-new-main".into(), "agent:2".into()),
            ("agent-new-side".into(), "side:1".into())
        ]
    );
    let mut broken = old_rev();
    broken.data = Some(k8s_openapi::apimachinery::pkg::runtime::RawExtension(json!({"spec": {"template": 7}})));
    let p = plan(&ds(partitioned(), json!({}), status(5, 0, "old")), "new", &new_rev(), &[&broken]);
    assert!(p.create.is_empty(), "{p:?}");
    assert_eq!(p.label_revision, Some(("agent-new".into(), CREATED)));
}

/// The round: creations then the label patch; an update revision not stored yet waits; a
/// complete rollout deletes only the set's own jobs.
#[test]
fn round_actions() {
    let d = ds(partitioned(), json!({}), status(5, 0, "old"));
    let (update, old) = (new_rev(), old_rev());
    let r = round(&d, &[&old, &update], "new", "agent-new", &[]);
    assert_eq!(
        r.actions.iter().map(|a| a.kind).collect::<Vec<_>>(),
        [ActionKind::CreateImagePullJob, ActionKind::MarkPreDownload]
    );
    let r = round(&d, &[&old], "new", "agent-new", &[]);
    assert!(r.actions.is_empty(), "{:?}", r.plan);
    // Someone else's revision of the same name is not the set's.
    let mut foreign = new_rev();
    foreign.metadata.owner_references = None;
    assert!(round(&d, &[&old, &foreign], "new", "agent-new", &[]).actions.is_empty());

    let done = ds(partitioned(), json!({}), status(5, 5, "new"));
    let mut mine = ImagePullJob::new("agent-new-main", Default::default());
    mine.metadata.uid = Some("j1".into());
    mine.metadata.owner_references = Some(vec![crate::core::predownload::Owner::controller_ref(&owner(&done))]);
    let other = ImagePullJob::new("other", Default::default());
    let r = round(&done, &[&old, &update], "new", "agent-new", &[&mine, &other]);
    assert_eq!(r.actions.len(), 1);
    assert_eq!(
        r.actions[0].writes,
        vec![Write::DeleteImagePullJob { name: "agent-new-main".into(), uid: Some("j1".into()) }]
    );
}

#[test]
fn gates() {
    let on =
        FeatureGates::default().with(Gate::KruiseDaemon, true).with(Gate::PreDownloadImageForDaemonSetUpdate, true);
    assert!(gates_enabled(&on));
    assert!(!gates_enabled(&on.clone().with(Gate::PreDownloadImageForDaemonSetUpdate, false)));
    let cloneset_only =
        FeatureGates::default().with(Gate::KruiseDaemon, true).with(Gate::PreDownloadImageForInPlaceUpdate, true);
    assert!(!gates_enabled(&cloneset_only));
}
