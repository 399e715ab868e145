//! A pre-download [`Plan`](super::Plan) as actions of the shared write vocabulary
//! ([`crate::core::rollout::actions`]), in the order kruise performs them: the job creations, then
//! the update revision's label (kruise's strategic-merge patch of labels; here a JSON patch
//! pinned to the revision as observed, so a revision that changed meanwhile is decided again next
//! round), or the deletions of the workload's jobs once the rollout completed. The controller
//! applies them one by one and goes on after a failure, as kruise does, and records
//! `CreatedImagePullJob` / `FailedCreateImagePullJob` from each creation's outcome.

use k8s_openapi::api::apps::v1::ControllerRevision;

use super::{Plan, jobs_to_delete};
use crate::apis::imagepulljob::ImagePullJob;
use crate::core::rollout::actions::{Action, ActionKind, Pin, Write, object_patch};

/// The actions of `plan`: `update` is the update revision (for the label patch), `jobs` the
/// ImagePullJobs listed in the workload's namespace (read only when `plan.delete_owned`), `uid`
/// the workload's.
pub fn actions(plan: &Plan, update: &ControllerRevision, jobs: &[&ImagePullJob], uid: &str) -> Vec<Action> {
    let revision = update.metadata.name.clone().unwrap_or_default();
    let mut out: Vec<Action> = plan
        .create
        .iter()
        .map(|job| {
            let name = job.metadata.name.clone().unwrap_or_default();
            let reason = format!("pre-download image {} on the nodes of pods not yet updated", job.spec.image);
            let mut a = Action::new(
                ActionKind::CreateImagePullJob,
                None,
                &revision,
                reason,
                vec![Write::CreateImagePullJob { job: Box::new(job.clone()) }],
            );
            a.images.insert(name, job.spec.image.clone());
            a
        })
        .collect();
    if let Some((name, key)) = &plan.label_revision {
        let mut after = update.clone();
        after.metadata.labels.get_or_insert_with(Default::default).insert(key.to_string(), "true".into());
        let write = Write::PatchRevision {
            name: name.clone(),
            pin: Pin::Observed(update.metadata.resource_version.clone().unwrap_or_default()),
            patch: object_patch(update, &after),
        };
        out.push(Action::new(ActionKind::MarkPreDownload, None, name, format!("label {key}=true"), vec![write]));
    }
    if plan.delete_owned {
        for job in jobs_to_delete(jobs, uid) {
            let name = job.metadata.name.clone().unwrap_or_default();
            let write = Write::DeleteImagePullJob { name: name.clone(), uid: job.metadata.uid.clone() };
            out.push(Action::new(
                ActionKind::DeleteImagePullJob,
                None,
                &revision,
                format!("the rollout is complete: ImagePullJob {name} is no longer needed"),
                vec![write],
            ));
        }
    }
    out
}

/// `CreatedImagePullJob`'s message.
pub fn created_message(job: &str, image: &str) -> String {
    format!("created ImagePullJob {job} for image: {image}")
}

/// `FailedCreateImagePullJob`'s message.
pub fn failed_message(job: &str, error: &str) -> String {
    format!("failed to create ImagePullJob {job}: {error}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::predownload::{CREATED, Owner};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    #[test]
    fn creations_then_the_label_patch_which_applies() {
        let mut update = ControllerRevision::default();
        update.metadata.name = Some("web-new".into());
        update.metadata.resource_version = Some("7".into());
        update.metadata.labels = Some([("controller.kubernetes.io/hash".to_string(), "new".to_string())].into());
        let owner = Owner { api_version: "a", kind: "k", name: "web".into(), namespace: "ns".into(), uid: "u".into() };
        let template =
            super::super::JobTemplate::new(owner, Default::default(), None, &Default::default(), &update.metadata);
        let plan = Plan {
            create: vec![template.job("web-new-main", "nginx:2")],
            label_revision: Some(("web-new".into(), CREATED)),
            ..Default::default()
        };
        let acts = actions(&plan, &update, &[], "u");
        assert_eq!(
            acts.iter().map(|a| a.kind).collect::<Vec<_>>(),
            [ActionKind::CreateImagePullJob, ActionKind::MarkPreDownload]
        );
        let Write::PatchRevision { pin, patch, .. } = &acts[1].writes[0] else { panic!("{:?}", acts[1]) };
        assert_eq!(pin, &Pin::Observed("7".into()));
        let mut v = serde_json::to_value(&update).unwrap_or_default();
        json_patch::patch(&mut v, patch).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(v["metadata"]["labels"]["apps.kruise.io/pre-predownload-created"], "true");
        assert_eq!(v["metadata"]["labels"]["controller.kubernetes.io/hash"], "new");
    }

    #[test]
    fn a_revision_without_labels_gets_the_label_map() {
        let mut update = ControllerRevision::default();
        update.metadata.name = Some("web-new".into());
        let plan = Plan { label_revision: Some(("web-new".into(), super::super::IGNORED)), ..Default::default() };
        let acts = actions(&plan, &update, &[], "u");
        let Write::PatchRevision { patch, .. } = &acts[0].writes[0] else { panic!("{:?}", acts[0]) };
        let mut v = serde_json::to_value(&update).unwrap_or_default();
        json_patch::patch(&mut v, patch).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(v["metadata"]["labels"]["apps.kruise.io/image-predownload-ignored"], "true");
    }

    #[test]
    fn deletions_carry_the_uid() {
        let mut mine = ImagePullJob::new("web-old-main", Default::default());
        mine.metadata.uid = Some("job-uid".into());
        mine.metadata.owner_references =
            Some(vec![OwnerReference { uid: "u".into(), controller: Some(true), ..Default::default() }]);
        let other = ImagePullJob::new("other", Default::default());
        let plan = Plan { delete_owned: true, ..Default::default() };
        let acts = actions(&plan, &ControllerRevision::default(), &[&mine, &other], "u");
        assert_eq!(acts.len(), 1);
        assert_eq!(
            acts[0].writes,
            vec![Write::DeleteImagePullJob { name: "web-old-main".into(), uid: Some("job-uid".into()) }]
        );
    }
}
