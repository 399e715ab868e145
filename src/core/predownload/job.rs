//! The ImagePullJob a workload creates for one container of its update revision: kruise's
//! `utilfunction.CreateJobForWorkload` (`pkg/util/imagejob/utilfunction/imagejob_util.go`,
//! v1.8.4) and `diffImagesBetweenRevisions` (`cloneset_predownload_image.go`,
//! `statefulset_predownload_image.go`), spec §7.3. Names, labels, selector and defaults are
//! byte-identical to kruise's, so a job a Go kruise created is recognised (AlreadyExists) and
//! cleaned up by us after a migration.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, LabelSelectorRequirement, ObjectMeta, OwnerReference,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::apis::imagepulljob::{CompletionPolicy, ImagePullJob, ImagePullJobSpec, PullPolicy, SandboxConfig};
use crate::apis::keys::{IMAGE_PREDOWNLOAD_PARALLELISM, IMAGE_PREDOWNLOAD_TIMEOUT_SECONDS};
use crate::compat::intstr::go_atoi;
use crate::core::history::CONTROLLER_REVISION_HASH_LABEL;

/// Pods' label naming their revision (`apps.ControllerRevisionHashLabelKey`).
pub const POD_REVISION_LABEL: &str = "controller-revision-hash";
/// `spec.pullPolicy.timeoutSeconds` without the timeout annotation.
pub const DEFAULT_TIMEOUT_SECONDS: i32 = 300;
/// `spec.pullPolicy.backoffLimit` of every pre-download job.
pub const BACKOFF_LIMIT: i32 = 1;
/// `spec.completionPolicy.ttlSecondsAfterFinished` of every pre-download job.
pub const TTL_SECONDS_AFTER_FINISHED: i32 = 600;

/// The workload a job is for, as its owner reference names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Owner {
    /// `apps.kruise.io/v1alpha1` (CloneSet) or `apps.kruise.io/v1beta1` (StatefulSet), as kruise
    /// v1.8 writes them.
    pub api_version: &'static str,
    /// `CloneSet` or `StatefulSet`.
    pub kind: &'static str,
    pub name: String,
    pub namespace: String,
    pub uid: String,
}

impl Owner {
    /// `metav1.NewControllerRef(owner, gvk)`.
    pub fn controller_ref(&self) -> OwnerReference {
        OwnerReference {
            api_version: self.api_version.to_string(),
            kind: self.kind.to_string(),
            name: self.name.clone(),
            uid: self.uid.clone(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }
    }
}

/// `diffImagesBetweenRevisions`: every container of the new template whose image differs from
/// the same-named container of the old one, or that is new, with its new image. Kruise returns a
/// Go map (random order); sorted by container name here.
pub fn changed_images(old: &PodTemplateSpec, new: &PodTemplateSpec) -> BTreeMap<String, String> {
    let containers = |t: &PodTemplateSpec| t.spec.as_ref().map(|s| s.containers.clone()).unwrap_or_default();
    let old = containers(old);
    containers(new)
        .into_iter()
        .filter(|c| old.iter().find(|o| o.name == c.name).is_none_or(|o| o.image != c.image))
        .map(|c| (c.name, c.image.unwrap_or_default()))
        .collect()
}

/// The Advanced DaemonSet's `diffImagesBetweenRevisions` (`daemonset_predownload_image.go`),
/// over every old template: a container of the new template is included when some old template
/// has a same-named container of another image, or none has it at all (a new container). A
/// template that does not decode (`None`) gives nothing, as kruise returns a nil map then.
pub fn changed_images_since(
    old: &[Option<PodTemplateSpec>],
    new: Option<&PodTemplateSpec>,
) -> BTreeMap<String, String> {
    let containers = |t: &PodTemplateSpec| t.spec.as_ref().map(|s| s.containers.clone()).unwrap_or_default();
    let (Some(new), Some(old)) = (new, old.iter().cloned().collect::<Option<Vec<_>>>()) else {
        return BTreeMap::new();
    };
    let old: Vec<_> = old.iter().map(containers).collect();
    let mut out = BTreeMap::new();
    for c in containers(new) {
        let mut found = false;
        for o in old.iter().filter_map(|list| list.iter().find(|o| o.name == c.name)) {
            if o.image != c.image {
                out.insert(c.name.clone(), c.image.clone().unwrap_or_default());
            }
            found = true;
        }
        if !found {
            out.insert(c.name.clone(), c.image.clone().unwrap_or_default());
        }
    }
    out
}

/// `spec.parallelism`: the parallelism annotation when `strconv.Atoi` reads it (Go's
/// `intstr.FromInt` keeps the low 32 bits), else 1.
pub fn parallelism(annotations: &BTreeMap<String, String>) -> i32 {
    annotations.get(IMAGE_PREDOWNLOAD_PARALLELISM).and_then(|s| go_atoi(s).ok()).map_or(1, |n| n as i32)
}

/// `spec.pullPolicy.timeoutSeconds`: the timeout annotation when `strconv.ParseInt(s, 10, 32)`
/// reads it, else [`DEFAULT_TIMEOUT_SECONDS`].
pub fn timeout_seconds(annotations: &BTreeMap<String, String>) -> i32 {
    annotations
        .get(IMAGE_PREDOWNLOAD_TIMEOUT_SECONDS)
        .and_then(|s| go_atoi(s).ok())
        .and_then(|n| i32::try_from(n).ok())
        .unwrap_or(DEFAULT_TIMEOUT_SECONDS)
}

/// What the jobs of one update revision share.
#[derive(Clone, Debug)]
pub struct JobTemplate {
    pub owner: Owner,
    /// The workload's annotations (parallelism, timeout).
    pub owner_annotations: BTreeMap<String, String>,
    /// Template labels + `controller.kubernetes.io/hash`.
    pub labels: BTreeMap<String, String>,
    /// Template annotations (the pull sandbox's).
    pub annotations: BTreeMap<String, String>,
    /// The workload selector + `controller-revision-hash NotIn [name, hash]`.
    pub pod_selector: LabelSelector,
    /// Names of the template's imagePullSecrets.
    pub pull_secrets: Vec<String>,
}

impl JobTemplate {
    /// The shared parts for `update_revision` (its name and labels) of a workload with this
    /// selector and template.
    pub fn new(
        owner: Owner,
        owner_annotations: BTreeMap<String, String>,
        selector: Option<&LabelSelector>,
        template: &PodTemplateSpec,
        update_revision: &ObjectMeta,
    ) -> Self {
        // A revision without the hash label gives "", as a Go map read does.
        let hash = update_revision
            .labels
            .as_ref()
            .and_then(|l| l.get(CONTROLLER_REVISION_HASH_LABEL))
            .cloned()
            .unwrap_or_default();
        let mut pod_selector = selector.cloned().unwrap_or_default();
        pod_selector.match_expressions.get_or_insert_with(Vec::new).push(LabelSelectorRequirement {
            key: POD_REVISION_LABEL.to_string(),
            operator: "NotIn".to_string(),
            values: Some(vec![update_revision.name.clone().unwrap_or_default(), hash.clone()]),
        });
        let meta = template.metadata.as_ref();
        let mut labels = meta.and_then(|m| m.labels.clone()).unwrap_or_default();
        labels.insert(CONTROLLER_REVISION_HASH_LABEL.to_string(), hash);
        let annotations = meta.and_then(|m| m.annotations.clone()).unwrap_or_default();
        let pull_secrets = template
            .spec
            .as_ref()
            .and_then(|s| s.image_pull_secrets.as_ref())
            .map(|list| list.iter().map(|s| s.name.clone()).collect())
            .unwrap_or_default();
        JobTemplate { owner, owner_annotations, labels, annotations, pod_selector, pull_secrets }
    }

    /// The job `name` pulling `image`.
    pub fn job(&self, name: &str, image: &str) -> ImagePullJob {
        let mut spec = ImagePullJobSpec { image: image.to_string(), ..Default::default() };
        spec.pull_secrets = self.pull_secrets.clone();
        spec.pod_selector = Some(self.pod_selector.clone());
        spec.parallelism = Some(IntOrString::Int(parallelism(&self.owner_annotations)));
        spec.pull_policy = Some(PullPolicy {
            timeout_seconds: Some(timeout_seconds(&self.owner_annotations)),
            backoff_limit: Some(BACKOFF_LIMIT),
        });
        spec.completion_policy = CompletionPolicy {
            type_: "Always".to_string(),
            active_deadline_seconds: None,
            ttl_seconds_after_finished: Some(TTL_SECONDS_AFTER_FINISHED),
        };
        spec.sandbox_config =
            Some(SandboxConfig { labels: self.labels.clone(), annotations: self.annotations.clone() });
        let mut job = ImagePullJob::new(name, spec);
        job.metadata.namespace = Some(self.owner.namespace.clone());
        job.metadata.owner_references = Some(vec![self.owner.controller_ref()]);
        job.metadata.labels = Some(self.labels.clone());
        job
    }
}

/// `<update revision name>-<container name>` (kruise does not shorten it).
pub fn job_name(update_revision: &str, container: &str) -> String {
    format!("{update_revision}-{container}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Container, LocalObjectReference, PodSpec};
    use serde_json::json;

    fn template(containers: &[(&str, &str)]) -> PodTemplateSpec {
        PodTemplateSpec {
            metadata: None,
            spec: Some(PodSpec {
                containers: containers
                    .iter()
                    .map(|(n, i)| Container { name: n.to_string(), image: Some(i.to_string()), ..Default::default() })
                    .collect(),
                ..Default::default()
            }),
        }
    }

    fn annotations(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    /// `diffImagesBetweenRevisions`, row by row: old containers, new containers, the result.
    #[test]
    fn changed_images_rows() {
        type Row<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a [(&'a str, &'a str)], &'a [(&'a str, &'a str)]);
        let rows: &[Row] = &[
            ("same image", &[("main", "nginx:1")], &[("main", "nginx:1")], &[]),
            ("changed image", &[("main", "nginx:1")], &[("main", "nginx:2")], &[("main", "nginx:2")]),
            (
                "new container",
                &[("main", "nginx:1")],
                &[("main", "nginx:1"), ("side", "busybox")],
                &[("side", "busybox")],
            ),
            ("removed container", &[("main", "nginx:1"), ("side", "busybox")], &[("main", "nginx:1")], &[]),
            (
                "two changed, sorted by name",
                &[("b", "x:1"), ("a", "y:1")],
                &[("b", "x:2"), ("a", "y:2")],
                &[("a", "y:2"), ("b", "x:2")],
            ),
            ("renamed container", &[("old", "nginx:1")], &[("new", "nginx:1")], &[("new", "nginx:1")]),
        ];
        for (name, old, new, want) in rows {
            let got = changed_images(&template(old), &template(new));
            let want: BTreeMap<String, String> = want.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            assert_eq!(got, want, "{name}");
        }
    }

    /// The parallelism annotation as `strconv.Atoi` reads it; default 1.
    #[test]
    fn parallelism_rows() {
        for (value, want) in [
            (None, 1),
            (Some("2"), 2),
            (Some("+3"), 3),
            (Some("0"), 0),
            (Some("-1"), -1),
            (Some("x"), 1),
            (Some("50%"), 1),
            (Some(""), 1),
        ] {
            let a = value.map_or_else(BTreeMap::new, |v| annotations(&[(IMAGE_PREDOWNLOAD_PARALLELISM, v)]));
            assert_eq!(parallelism(&a), want, "{value:?}");
        }
    }

    /// The timeout annotation as `strconv.ParseInt(s, 10, 32)` reads it; default 300.
    #[test]
    fn timeout_rows() {
        for (value, want) in [
            (None, 300),
            (Some("60"), 60),
            (Some("2147483647"), 2_147_483_647),
            (Some("2147483648"), 300),
            (Some("1.5"), 300),
            (Some("abc"), 300),
        ] {
            let a = value.map_or_else(BTreeMap::new, |v| annotations(&[(IMAGE_PREDOWNLOAD_TIMEOUT_SECONDS, v)]));
            assert_eq!(timeout_seconds(&a), want, "{value:?}");
        }
    }

    /// The whole object, as kruise's `CreateJobForWorkload` builds it for a CloneSet.
    #[test]
    fn job_is_kruises() {
        let owner = Owner {
            api_version: "apps.kruise.io/v1alpha1",
            kind: "CloneSet",
            name: "web".into(),
            namespace: "ns".into(),
            uid: "uid-1".into(),
        };
        let mut t = template(&[("main", "nginx:2")]);
        t.metadata = Some(ObjectMeta {
            labels: Some(annotations(&[("app", "web")])),
            annotations: Some(annotations(&[("note", "x")])),
            ..Default::default()
        });
        if let Some(spec) = t.spec.as_mut() {
            spec.image_pull_secrets = Some(vec![LocalObjectReference { name: "regcred".into() }]);
        }
        let selector = LabelSelector { match_labels: Some(annotations(&[("app", "web")])), ..Default::default() };
        let rev = ObjectMeta {
            name: Some("web-7c9f".into()),
            labels: Some(annotations(&[(CONTROLLER_REVISION_HASH_LABEL, "7c9f")])),
            ..Default::default()
        };
        let jt =
            JobTemplate::new(owner, annotations(&[(IMAGE_PREDOWNLOAD_PARALLELISM, "2")]), Some(&selector), &t, &rev);
        let job = jt.job(&job_name("web-7c9f", "main"), "nginx:2");
        let got = serde_json::to_value(&job).unwrap_or_default();
        assert_eq!(
            got,
            json!({
                "apiVersion": "apps.kruise.io/v1alpha1",
                "kind": "ImagePullJob",
                "metadata": {
                    "name": "web-7c9f-main",
                    "namespace": "ns",
                    "labels": {"app": "web", "controller.kubernetes.io/hash": "7c9f"},
                    "ownerReferences": [{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "web",
                        "uid": "uid-1", "controller": true, "blockOwnerDeletion": true}]
                },
                "spec": {
                    "image": "nginx:2",
                    "pullSecrets": ["regcred"],
                    "podSelector": {"matchLabels": {"app": "web"}, "matchExpressions": [
                        {"key": "controller-revision-hash", "operator": "NotIn", "values": ["web-7c9f", "7c9f"]}]},
                    "parallelism": 2,
                    "pullPolicy": {"timeoutSeconds": 300, "backoffLimit": 1},
                    "completionPolicy": {"type": "Always", "ttlSecondsAfterFinished": 600},
                    "sandboxConfig": {"labels": {"app": "web", "controller.kubernetes.io/hash": "7c9f"},
                        "annotations": {"note": "x"}}
                }
            })
        );
    }

    /// A revision without the hash label: kruise reads "" from the Go map and uses it in the
    /// label and the selector alike.
    #[test]
    fn missing_hash_label_is_empty() {
        let rev = ObjectMeta { name: Some("r-1".into()), ..Default::default() };
        let owner = Owner { api_version: "a", kind: "k", name: "n".into(), namespace: "ns".into(), uid: "u".into() };
        let jt = JobTemplate::new(owner, BTreeMap::new(), None, &template(&[]), &rev);
        assert_eq!(jt.labels.get(CONTROLLER_REVISION_HASH_LABEL).map(String::as_str), Some(""));
        let values = jt.pod_selector.match_expressions.as_ref().and_then(|e| e[0].values.clone());
        assert_eq!(values, Some(vec!["r-1".to_string(), String::new()]));
        assert!(jt.pull_secrets.is_empty());
    }
}
