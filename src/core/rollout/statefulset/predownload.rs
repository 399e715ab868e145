//! What an Advanced StatefulSet round does about image pre-download (spec §7; kruise's
//! `doPreDownload` in `stateful_set_control.go` and `statefulset_predownload_image.go`): the set
//! as [`crate::core::predownload`] reads it — owner `apps.kruise.io/v1beta1` StatefulSet, the
//! annotations, `spec.replicas`, selector and template, the status it observed, and its update
//! strategy (OnDelete, no `rollingUpdate` or podUpdatePolicy ReCreate get no jobs). The caller
//! runs it only when pre-download is enabled (spec §7.1).

use k8s_openapi::api::apps::v1::ControllerRevision;

use crate::apis::imagepulljob::ImagePullJob;
use crate::apis::statefulset::v1beta1::StatefulSet;
use crate::core::features::FeatureGates;
use crate::core::predownload::{self, Owner, Round, Strategy, Workload};

/// The set as the pre-download planner reads it.
pub fn workload<'a>(set: &'a StatefulSet, gates: &FeatureGates) -> Workload<'a> {
    let status = set.status.as_ref();
    Workload {
        owner: Owner {
            api_version: "apps.kruise.io/v1beta1",
            kind: "StatefulSet",
            name: set.metadata.name.clone().unwrap_or_default(),
            namespace: set.metadata.namespace.clone().unwrap_or_default(),
            uid: set.metadata.uid.clone().unwrap_or_default(),
        },
        annotations: set.metadata.annotations.clone().unwrap_or_default(),
        // The webhook defaults replicas to 1.
        replicas: set.spec.replicas.unwrap_or(1),
        selector: set.spec.selector.as_ref(),
        template: &set.spec.template,
        updated_ready_replicas: status.map_or(0, |s| s.updated_ready_replicas),
        status_update_revision: status.map_or("", |s| s.update_revision.as_str()),
        strategy: Strategy::of_statefulset(set, gates),
    }
}

/// The round for a set whose planner chose `current` and `update`.
pub fn round(
    set: &StatefulSet,
    gates: &FeatureGates,
    revisions: &[&ControllerRevision],
    current: &str,
    update: &str,
    jobs: &[&ImagePullJob],
) -> Round {
    predownload::round(&workload(set, gates), revisions, current, update, jobs)
}

#[cfg(test)]
mod rollout;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::features::Gate;
    use crate::core::predownload::CREATED;
    use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
    use serde_json::json;

    fn set(policy: &str) -> StatefulSet {
        serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet",
            "metadata": {"name": "db", "namespace": "ns", "uid": "sts-uid",
                "annotations": {"apps.kruise.io/image-predownload-parallelism": "3",
                                "apps.kruise.io/image-predownload-timeout-seconds": "60"}},
            "spec": {"replicas": 5, "selector": {"matchLabels": {"app": "db"}},
                "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [{"name": "main", "image": "redis:8"}]}},
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 2, "maxUnavailable": 1, "podUpdatePolicy": policy}}},
            "status": {"updateRevision": "db-new", "updatedReadyReplicas": 0}
        }))
        .unwrap_or_else(|e| panic!("{e}"))
    }

    fn revision(name: &str, image: &str) -> ControllerRevision {
        let mut r = ControllerRevision::default();
        r.metadata.name = Some(name.into());
        r.metadata.resource_version = Some("5".into());
        r.metadata.labels = Some([("controller.kubernetes.io/hash".to_string(), name.replace("db-", ""))].into());
        r.data = Some(RawExtension(
            json!({"spec": {"template": {"$patch": "replace", "metadata": {"labels": {"app": "db"}},
            "spec": {"containers": [{"name": "main", "image": image}]}}}}),
        ));
        r
    }

    #[test]
    fn an_in_place_set_gets_one_job_owned_by_the_v1beta1_statefulset() {
        let gates = FeatureGates::default().with(Gate::PreDownloadImageForInPlaceUpdate, true);
        let (old, new) = (revision("db-old", "redis:7"), revision("db-new", "redis:8"));
        let s = set("InPlaceIfPossible");
        let r = round(&s, &gates, &[&old, &new], "db-old", "db-new", &[]);
        assert_eq!(r.plan.create.len(), 1, "{}", r.plan.reason);
        let job = &r.plan.create[0];
        assert_eq!(job.metadata.name.as_deref(), Some("db-new-main"));
        assert_eq!(job.spec.image, "redis:8");
        let owner = &job.metadata.owner_references.clone().unwrap_or_default()[0];
        assert_eq!((owner.api_version.as_str(), owner.kind.as_str()), ("apps.kruise.io/v1beta1", "StatefulSet"));
        let v = serde_json::to_value(&job.spec).unwrap_or_default();
        assert_eq!(v["parallelism"], 3);
        assert_eq!(v["pullPolicy"], json!({"timeoutSeconds": 60, "backoffLimit": 1}));
        assert_eq!(r.plan.label_revision, Some(("db-new".into(), CREATED)));
        assert_eq!(r.actions.len(), 2);
    }

    #[test]
    fn recreate_pods_get_no_jobs() {
        let gates = FeatureGates::default();
        let (old, new) = (revision("db-old", "redis:7"), revision("db-new", "redis:8"));
        let r = round(&set("ReCreate"), &gates, &[&old, &new], "db-old", "db-new", &[]);
        assert!(r.plan.create.is_empty());
        assert_eq!(r.plan.label_revision.map(|(_, k)| k), Some(crate::core::predownload::IGNORED));
    }

    #[test]
    fn an_update_revision_not_stored_yet_waits() {
        let old = revision("db-old", "redis:7");
        let r = round(&set("InPlaceIfPossible"), &FeatureGates::default(), &[&old], "db-old", "db-new", &[]);
        assert!(r.actions.is_empty());
        assert!(r.plan.reason.contains("not both stored yet"), "{}", r.plan.reason);
    }
}
