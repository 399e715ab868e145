//! `rollout undo [--to-revision N]`: puts a previous ControllerRevision's pod template back, as
//! kruise-tools' `CloneSetRollbacker`/`AdvancedStatefulSetRollbacker`/`AdvancedDaemonSetRollbacker`
//! (the Advanced DaemonSet's revisions hold the same `getPatch` data): the revision is picked by
//! `findHistory` (`--to-revision 0`: the one before the newest, by revision number; otherwise that
//! number), and a template that already matches it is skipped (`skipped rollback (current
//! template already matches revision N)`, exit 0); the match compares the revision data bytes the
//! controller names revisions by ([`crate::core::revision::revision_data`]).
//!
//! Difference from kruise-tools, on purpose: kruise-tools sends the revision data
//! (`{"spec":{"template":{…,"$patch":"replace"}}}`) as a JSON *merge* patch, where `$patch` means
//! nothing, so labels, annotations and other map keys added since that revision survive the
//! rollback. We send a JSON patch that replaces `/spec/template` whole, pinned by a `test` of the
//! resourceVersion we read (a concurrent change answers 422 rather than being overwritten).

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::PodTemplateSpec;
use serde_json::{Value, json};

use super::cli::{KubeFlags, UndoArgs};
use super::history::{owned, read};
use super::target::{Target, Workload, parse_targets};
use super::{Failure, Outcome, connect, name_line, out, patch_target};
use crate::core::history::data_bytes;
use crate::core::revision::revision_data;

/// kruise-tools' `findHistory` over revisions sorted by number, with its errors.
pub fn pick<'a>(
    history: &[&'a ControllerRevision],
    to_revision: i64,
    workload: Workload,
) -> Result<&'a ControllerRevision, String> {
    let not_found = || format!("unable to find specified revision {to_revision} in history");
    if to_revision < 0 {
        return Err(not_found());
    }
    if to_revision == 0 {
        if history.len() <= 1 {
            return Err(match workload {
                Workload::CloneSet | Workload::AdvancedDaemonSet => "no last revision to roll back to".into(),
                Workload::AdvancedStatefulSet => "no latest revision to roll back to".into(),
            });
        }
        let mut sorted = history.to_vec();
        sorted.sort_by_key(|r| r.revision);
        return Ok(sorted[sorted.len() - 2]);
    }
    history.iter().copied().find(|r| r.revision == to_revision).ok_or_else(not_found)
}

/// The template a revision stores, as JSON (its data without kruise's `$patch` directive).
fn stored_template(revision: &ControllerRevision) -> Result<Value, String> {
    let name = revision.metadata.name.as_deref().unwrap_or("");
    match revision.data.as_ref().map(|d| &d.0["spec"]["template"]) {
        Some(Value::Object(t)) => {
            Ok(Value::Object(t.iter().filter(|(k, _)| *k != "$patch").map(|(k, v)| (k.clone(), v.clone())).collect()))
        }
        _ => Err(format!("revision {name} holds no pod template")),
    }
}

/// The JSON patch that puts `to`'s template back, or `None` when the template already matches it.
pub fn undo_patch(
    current: &PodTemplateSpec,
    resource_version: &str,
    to: &ControllerRevision,
) -> Result<Option<Value>, String> {
    if revision_data(current) == data_bytes(to) {
        return Ok(None);
    }
    let template = stored_template(to)?;
    Ok(Some(json!([
        {"op": "test", "path": "/metadata/resourceVersion", "value": resource_version},
        {"op": "replace", "path": "/spec/template", "value": template},
    ])))
}

async fn one(client: &kube::Client, ns: &str, target: &Target, to_revision: i64) -> Result<(), Failure> {
    let (object, revisions) = read(client, ns, target).await?;
    let meta = object.meta();
    let history = owned(&revisions, meta.uid.as_deref().unwrap_or(""));
    let to = pick(&history, to_revision, target.workload)?;
    let rv = meta.resource_version.as_deref().unwrap_or("");
    match undo_patch(object.template(), rv, to)? {
        None => out(&name_line(
            target,
            &format!("skipped rollback (current template already matches revision {})", to.revision),
        )),
        Some(patch) => {
            let patch: json_patch::Patch = serde_json::from_value(patch).map_err(|e| e.to_string())?;
            patch_target(client, ns, target, &kube::api::Patch::Json(patch)).await.map_err(|e| match e {
                Failure::Api(s) => Failure::Other(format!("failed restoring revision {}: {}", to.revision, s.message)),
                other => other,
            })?;
            out(&name_line(target, "rolled back"));
        }
    }
    Ok(())
}

/// `rollout undo TYPE/NAME... [--to-revision N]`.
pub async fn run(flags: &KubeFlags, args: &UndoArgs) -> Outcome {
    let targets = parse_targets(&args.resources).map_err(|e| vec![Failure::Other(e)])?;
    let (client, ns) = connect::connect(flags).await.map_err(|e| vec![e])?;
    let mut failures = Vec::new();
    for t in &targets {
        if let Err(f) = one(&client, &ns, t, args.to_revision).await {
            failures.push(f);
        }
    }
    if failures.is_empty() { Ok(()) } else { Err(failures) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn revision(name: &str, number: i64, template: &Value) -> ControllerRevision {
        let t: PodTemplateSpec = serde_json::from_value(template.clone()).unwrap();
        let data: Value = serde_json::from_str(&revision_data(&t)).unwrap();
        serde_json::from_value(json!({"metadata": {"name": name}, "revision": number, "data": data})).unwrap()
    }

    fn template(image: &str, labels: Value) -> Value {
        json!({"metadata": {"labels": labels},
               "spec": {"containers": [{"name": "main", "image": image}]}})
    }

    #[test]
    fn which_revision_undo_picks() {
        let t = template("a", json!({"app": "web"}));
        let (r1, r2, r5) = (revision("web-1", 1, &t), revision("web-2", 2, &t), revision("web-5", 5, &t));
        let history = [&r5, &r1, &r2];
        let name = |r: Result<&ControllerRevision, String>| r.map(|r| r.metadata.name.clone().unwrap());
        assert_eq!(name(pick(&history, 0, Workload::CloneSet)), Ok("web-2".into()), "the one before the newest");
        assert_eq!(name(pick(&history, 1, Workload::CloneSet)), Ok("web-1".into()));
        assert_eq!(
            name(pick(&history, 3, Workload::CloneSet)),
            Err("unable to find specified revision 3 in history".into())
        );
        assert_eq!(
            name(pick(&history, -1, Workload::CloneSet)),
            Err("unable to find specified revision -1 in history".into())
        );
        assert_eq!(name(pick(&[&r1], 0, Workload::CloneSet)), Err("no last revision to roll back to".into()));
        assert_eq!(name(pick(&[], 0, Workload::AdvancedStatefulSet)), Err("no latest revision to roll back to".into()));
        assert_eq!(name(pick(&[&r1], 0, Workload::AdvancedDaemonSet)), Err("no last revision to roll back to".into()));
        assert_eq!(name(pick(&history, 0, Workload::AdvancedDaemonSet)), Ok("web-2".into()));
        assert_eq!(name(pick(&[&r1], 1, Workload::CloneSet)), Ok("web-1".into()));
    }

    #[test]
    fn the_patch_replaces_the_template_whole_and_is_pinned() {
        let old = template("nginx:1.25", json!({"app": "web"}));
        let new = template("nginx:1.26", json!({"app": "web", "added": "later"}));
        let to = revision("web-1", 1, &old);
        let doc = json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
            "metadata": {"name": "web", "resourceVersion": "42"},
            "spec": {"replicas": 3, "template": new, "updateStrategy": {"type": "ReCreate"}}});
        let current: PodTemplateSpec = serde_json::from_value(new.clone()).unwrap();
        let patch = undo_patch(&current, "42", &to).unwrap().expect("a patch");
        let patch: json_patch::Patch = serde_json::from_value(patch).unwrap();

        let mut rolled_back = doc.clone();
        json_patch::patch(&mut rolled_back, &patch).unwrap();
        // The template is the revision's, as kruise's Go encoding stored it (`resources: {}`,
        // `creationTimestamp: null`): the same revision data, so undo has nothing more to do.
        let restored: PodTemplateSpec = serde_json::from_value(rolled_back["spec"]["template"].take()).unwrap();
        assert_eq!(revision_data(&restored), data_bytes(&to));
        assert_eq!(undo_patch(&restored, "43", &to), Ok(None));
        assert_eq!(restored.metadata.unwrap().labels.unwrap().get("added"), None, "gone, not merged");
        let mut rest = doc.clone();
        rest["spec"]["template"] = Value::Null;
        assert_eq!(rolled_back, rest);

        // Applied to a newer version of the object, the test op fails.
        let mut moved = doc.clone();
        moved["metadata"]["resourceVersion"] = json!("43");
        assert!(json_patch::patch(&mut moved, &patch).is_err());

        // A template that already matches the revision: nothing to do.
        let same: PodTemplateSpec = serde_json::from_value(old).unwrap();
        assert_eq!(undo_patch(&same, "42", &to), Ok(None));
        let empty = ControllerRevision {
            data: Some(k8s_openapi::apimachinery::pkg::runtime::RawExtension(json!({}))),
            ..Default::default()
        };
        assert!(undo_patch(&current, "42", &empty).unwrap_err().contains("holds no pod template"));
    }
}
