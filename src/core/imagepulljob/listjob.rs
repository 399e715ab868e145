//! The ImageListPullJob controller's round (kruise `imagelistpulljob_controller.go`): one
//! ImagePullJob per listed image, named `<list>-<random>` (generateName), labelled
//! `controller-revision-hash: <template hash>`, controlled by the list job, with the list's
//! template as its spec. A child whose image left the list is deleted; a child made from an older
//! template (another hash; or, without the label, another template) is replaced. The status
//! counts children: active (some node pulling), completed (every node done), succeeded (every node
//! succeeded), the failed ones by name; with `completionPolicy: Always` the list completes when
//! every image's job has, and is deleted `ttlSecondsAfterFinished` later.
//!
//! The template hash is kruise's: `hashutil.DeepHashObject` (spew's print of the Go struct,
//! [`crate::compat::spew`]), FNV-32a, safe-encoded, so a list job taken over from Go kruise keeps
//! its children. A template spew cannot reproduce (none today: its fields are plain) falls back
//! to FNV-1a over its JSON, which replaces the children once.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use crate::apis::imagelistpulljob::ImageListPullJobStatus;
use crate::apis::imagelistpulljob::v1beta1::ImageListPullJob;
use crate::apis::imagelistpulljob::{FailedImageStatus, ImagePullJobTemplate};
use crate::apis::imagepulljob::v1beta1::{ImagePullJob, ImagePullJobSpec};
use crate::core::history::fnv1a_32;

/// `apps.ControllerRevisionHashLabelKey`.
pub const HASH_LABEL: &str = "controller-revision-hash";

/// The template hash (see the module note).
pub fn template_hash(t: &ImagePullJobTemplate) -> String {
    let json = serde_json::to_value(t).unwrap_or_default();
    crate::compat::spew::image_pull_job_template_hash(&json).unwrap_or_else(|_| {
        let bytes = serde_json::to_vec(t).unwrap_or_default();
        crate::core::history::safe_encode(&fnv1a_32(&bytes).to_string())
    })
}

/// What a round does.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ListPlan {
    /// Set the list job's hash label to this first.
    pub hash_label: Option<String>,
    /// Delete the list job (TTL after completion).
    pub delete: bool,
    /// ImagePullJobs to create (generateName).
    pub create: Vec<ImagePullJob>,
    /// ImagePullJobs to delete: name and uid.
    pub delete_children: Vec<(String, Option<String>)>,
    pub status: Option<ImageListPullJobStatus>,
    pub requeue: Option<SignedDuration>,
}

fn hash_of(j: &ImagePullJob) -> Option<&str> {
    j.metadata.labels.as_ref().and_then(|l| l.get(HASH_LABEL)).map(String::as_str)
}

/// The template of a child (its spec without the image).
fn child_template(j: &ImagePullJob) -> ImagePullJobTemplate {
    let s = &j.spec.fields;
    ImagePullJobTemplate {
        pull_secrets: s.pull_secrets.clone(),
        selector: s.selector.clone(),
        pod_selector: s.pod_selector.clone(),
        parallelism: s.parallelism.clone(),
        pull_policy: s.pull_policy.clone(),
        completion_policy: s.completion_policy.clone(),
        sandbox_config: s.sandbox_config.clone(),
        image_pull_policy: s.image_pull_policy.clone(),
    }
}

/// `isConsistentVersion`.
fn consistent(child: &ImagePullJob, template: &ImagePullJobTemplate, hash: &str) -> bool {
    match hash_of(child) {
        Some(h) if h == hash => true,
        None => child_template(child) == *template,
        Some(_) => false,
    }
}

/// A new child for `image`.
pub fn new_child(list: &ImageListPullJob, image: &str, hash: &str) -> ImagePullJob {
    let t = &list.spec.fields.template;
    let mut spec = crate::apis::imagepulljob::ImagePullJobSpec {
        image: image.into(),
        pull_secrets: t.pull_secrets.clone(),
        selector: t.selector.clone(),
        pod_selector: t.pod_selector.clone(),
        parallelism: t.parallelism.clone(),
        pull_policy: t.pull_policy.clone(),
        completion_policy: t.completion_policy.clone(),
        sandbox_config: t.sandbox_config.clone(),
        image_pull_policy: t.image_pull_policy.clone(),
    };
    spec.image = image.into();
    let name = list.metadata.name.clone().unwrap_or_default();
    ImagePullJob {
        metadata: ObjectMeta {
            namespace: list.metadata.namespace.clone(),
            generate_name: Some(format!("{name}-")),
            labels: Some([(HASH_LABEL.to_string(), hash.to_string())].into()),
            annotations: Some(BTreeMap::new()),
            owner_references: Some(vec![OwnerReference {
                api_version: "apps.kruise.io/v1beta1".into(),
                kind: "ImageListPullJob".into(),
                name,
                uid: list.metadata.uid.clone().unwrap_or_default(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..Default::default()
        },
        spec: ImagePullJobSpec { fields: spec },
        status: None,
    }
}

/// `calculateStatus` over the children (by image).
pub fn calculate(
    list: &ImageListPullJob,
    children: &BTreeMap<String, Arc<ImagePullJob>>,
    now: Timestamp,
) -> ImageListPullJobStatus {
    let (mut active, mut completed, mut succeeded) = (0, 0, 0);
    let mut failed = Vec::new();
    for child in children.values() {
        let Some(st) = child.status.as_ref().filter(|s| s.start_time.is_some()) else { continue };
        if st.active > 0 {
            active += 1;
        }
        let name = child.metadata.name.clone().unwrap_or_default();
        if st.failed > 0 {
            failed.push(FailedImageStatus {
                image_pull_job: name.clone(),
                name: child.spec.fields.image.clone(),
                message: format!("Please check for details which nodes failed by 'kubectl get ImagePullJob {name}'."),
            });
        }
        if st.desired == st.failed + st.succeeded {
            completed += 1;
        }
        if st.desired == st.succeeded {
            succeeded += 1;
        }
    }
    failed.sort_by(|a, b| a.image_pull_job.cmp(&b.image_pull_job));
    let old = list.status.clone().unwrap_or_default();
    let mut status = ImageListPullJobStatus {
        desired: i32::try_from(list.spec.fields.images.len()).unwrap_or(i32::MAX),
        active,
        completed,
        succeeded,
        start_time: Some(old.start_time.unwrap_or(Time(now))),
        failed_image_statuses: failed,
        completion_time: None,
    };
    if list.spec.fields.template.completion_policy.type_ != super::NEVER && status.desired == status.completed {
        status.completion_time = Some(Time(now));
    }
    status
}

/// The round, over the list job's children not being deleted.
pub fn plan(list: &ImageListPullJob, children: &[Arc<ImagePullJob>], now: Timestamp) -> ListPlan {
    let mut p = ListPlan::default();
    let hash = template_hash(&list.spec.fields.template);
    let old_hash = list.metadata.labels.as_ref().and_then(|l| l.get(HASH_LABEL));
    if old_hash != Some(&hash) {
        p.hash_label = Some(hash.clone());
    }
    if let Some(done) = list.status.as_ref().and_then(|s| s.completion_time.as_ref()) {
        if let Some(ttl) = list.spec.fields.template.completion_policy.ttl_seconds_after_finished {
            let left = SignedDuration::from_secs(i64::from(ttl)) - now.duration_since(done.0);
            if left <= SignedDuration::ZERO {
                p.delete = true;
            } else {
                p.requeue = Some(left);
            }
        }
        return p;
    }
    // `getOwnedImagePullJob`: by image, the last listed wins.
    let by_image: BTreeMap<String, Arc<ImagePullJob>> =
        children.iter().map(|c| (c.spec.fields.image.clone(), Arc::clone(c))).collect();
    let status = calculate(list, &by_image, now);
    for image in &list.spec.fields.images {
        match by_image.get(image) {
            None => p.create.push(new_child(list, image, &hash)),
            Some(child) if !consistent(child, &list.spec.fields.template, &hash) => {
                p.create.push(new_child(list, image, &hash));
                p.delete_children.push((child.metadata.name.clone().unwrap_or_default(), child.metadata.uid.clone()));
            }
            Some(_) => {}
        }
    }
    for (image, child) in &by_image {
        if !list.spec.fields.images.contains(image) {
            p.delete_children.push((child.metadata.name.clone().unwrap_or_default(), child.metadata.uid.clone()));
        }
    }
    if list.status.as_ref() != Some(&status) {
        p.status = Some(status);
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apis::imagepulljob::ImagePullJobStatus;
    use crate::core::imagepulljob::testkit::at;
    use serde_json::json;

    fn list(images: &[&str], template: serde_json::Value) -> ImageListPullJob {
        let mut spec = template;
        spec["images"] = json!(images);
        serde_json::from_value(
            json!({"metadata": {"name": "foo", "namespace": "default", "uid": "list-uid"}, "spec": spec}),
        )
        .unwrap()
    }

    fn child(
        name: &str,
        image: &str,
        template: serde_json::Value,
        hash: Option<&str>,
        status: Option<ImagePullJobStatus>,
    ) -> Arc<ImagePullJob> {
        let mut spec = template;
        spec["image"] = json!(image);
        let mut j: ImagePullJob = serde_json::from_value(json!({"metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"),
            "ownerReferences": [{"apiVersion": "apps.kruise.io/v1beta1", "kind": "ImageListPullJob", "name": "foo", "uid": "list-uid", "controller": true}]},
            "spec": spec})).unwrap();
        if let Some(h) = hash {
            j.metadata.labels = Some([(HASH_LABEL.to_string(), h.to_string())].into());
        }
        j.status = status;
        Arc::new(j)
    }

    fn st(desired: i32, active: i32, succeeded: i32, failed: i32) -> Option<ImagePullJobStatus> {
        Some(ImagePullJobStatus {
            start_time: Some(Time(at(0))),
            desired,
            active,
            succeeded,
            failed,
            ..Default::default()
        })
    }

    /// kruise `TestReconcile`: three children, one succeeded, one active, one failed.
    #[test]
    fn status_of_three_children() {
        let always = json!({"completionPolicy": {"type": "Always"}});
        let l = list(&["nginx:1.9.1", "busybox:1.35", "httpd:2.4.38"], always.clone());
        let children = vec![
            child("j01", "nginx:1.9.1", always.clone(), None, st(1, 0, 1, 0)),
            child("j02", "busybox:1.35", always.clone(), None, st(1, 1, 0, 0)),
            child("j03", "httpd:2.4.38", always.clone(), None, st(1, 0, 0, 1)),
        ];
        let p = plan(&l, &children, at(5));
        let s = p.status.unwrap();
        assert_eq!((s.desired, s.active, s.succeeded, s.completed), (3, 1, 1, 2));
        assert_eq!(s.failed_image_statuses.len(), 1);
        assert_eq!(
            s.failed_image_statuses[0].message,
            "Please check for details which nodes failed by 'kubectl get ImagePullJob j03'."
        );
        assert!(p.create.is_empty() && p.delete_children.is_empty(), "same template, no hash label: kept");
        assert!(p.hash_label.is_some());
    }

    /// kruise `TestComputeImagePullJobActions`, row by row.
    #[test]
    fn child_actions_rows() {
        let always = json!({"completionPolicy": {"type": "Always"}});
        let never = json!({"completionPolicy": {"type": "Never"}});
        let existing = || {
            vec![
                child("j01", "nginx:1.9.1", always.clone(), None, None),
                child("j02", "busybox:1.35", always.clone(), None, None),
            ]
        };
        // test_add_image
        let p = plan(&list(&["nginx:1.9.1", "busybox:1.35", "httpd:2.4.38"], always.clone()), &existing(), at(1));
        assert_eq!(p.create.iter().map(|c| c.spec.fields.image.as_str()).collect::<Vec<_>>(), ["httpd:2.4.38"]);
        let c = &p.create[0];
        assert_eq!(c.metadata.generate_name.as_deref(), Some("foo-"));
        let o = &c.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!((o.kind.as_str(), o.uid.as_str(), o.controller), ("ImageListPullJob", "list-uid", Some(true)));
        assert_eq!(c.spec.fields.completion_policy.type_, "Always");
        assert!(p.delete_children.is_empty());
        // test_delete_image
        let p = plan(&list(&["nginx:1.9.1"], always.clone()), &existing(), at(1));
        assert!(p.create.is_empty());
        assert_eq!(p.delete_children, [("j02".to_string(), Some("uid-j02".to_string()))]);
        // test_change_imagepulljobtemplate
        let p = plan(&list(&["nginx:1.9.1", "busybox:1.35"], never.clone()), &existing(), at(1));
        let mut created: Vec<_> = p.create.iter().map(|c| c.spec.fields.image.clone()).collect();
        created.sort();
        assert_eq!(created, ["busybox:1.35", "nginx:1.9.1"]);
        assert_eq!(p.delete_children.len(), 2);
        // A child with the current hash is kept whatever its spec says.
        let l = list(&["nginx:1.9.1"], never.clone());
        let h = template_hash(&l.spec.fields.template);
        let p = plan(&l, &[child("j01", "nginx:1.9.1", always.clone(), Some(&h), None)], at(1));
        assert!(p.create.is_empty() && p.delete_children.is_empty());
    }

    #[test]
    fn completion_and_ttl() {
        let l = list(&["a:1"], json!({"completionPolicy": {"type": "Always", "ttlSecondsAfterFinished": 30}}));
        let p = plan(&l, &[child("j01", "a:1", json!({}), None, st(2, 0, 1, 1))], at(10));
        let s = p.status.unwrap();
        assert_eq!((s.completion_time.clone(), s.completed), (Some(Time(at(10))), 1));
        let mut done = l.clone();
        done.status = Some(s);
        assert_eq!(plan(&done, &[], at(20)).requeue, Some(SignedDuration::from_secs(20)));
        assert!(plan(&done, &[], at(40)).delete);
        let never = list(&["a:1"], json!({"completionPolicy": {"type": "Never"}}));
        let p = plan(
            &never,
            &[child("j01", "a:1", json!({"completionPolicy": {"type": "Never"}}), None, st(1, 0, 1, 0))],
            at(10),
        );
        assert_eq!(p.status.unwrap().completion_time, None);
    }
}
