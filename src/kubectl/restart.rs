//! `rollout restart`: the pod template gets kubectl's annotation `kubectl.kubernetes.io/restartedAt`
//! (the time, RFC 3339, seconds), so the controller rolls every pod to a new revision. A paused
//! workload is refused, as kubectl refuses a paused Deployment (the restart would wait unseen).
//!
//! Differences from kruise-tools, on purpose: kruise-tools HEAD restarts a CloneSet or Advanced
//! StatefulSet by setting an env var `RESTARTED_AT` in every container and replacing the whole
//! object (`UpdateResourceEnv`); we write kubectl's annotation with a merge patch, as asked for in
//! issue 32. Under an in-place update strategy (CloneSet `InPlaceIfPossible`/`InPlaceOnly`, ASTS
//! `podUpdatePolicy` InPlace*) kruise applies a template-annotation change in place — the pods
//! get the new annotation and their containers keep running — so the command says so on stderr.

use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use super::cli::{KubeFlags, TargetArgs};
use super::pause::is_paused;
use super::target::{Target, parse_targets};
use super::{Failure, Object, Outcome, connect, err, get_target, name_line, out, patch_target};

/// The template annotation kubectl's `rollout restart` writes.
pub const RESTARTED_AT: &str = "kubectl.kubernetes.io/restartedAt";

/// Go's `time.Now().Format(time.RFC3339)` in UTC: `2026-12-02T22:40:05Z`.
pub fn rfc3339(now: Timestamp) -> String {
    now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// The merge patch that restarts a workload at `now`, or why there is none.
pub fn restart_patch(object: &Object, now: Timestamp) -> Result<Value, String> {
    if is_paused(object) {
        let kind = match object {
            Object::CloneSet(_) => "CloneSet",
            Object::AdvancedStatefulSet(_) => "Advanced StatefulSet",
        };
        return Err(format!("can't restart paused {kind} (run rollout resume first)"));
    }
    Ok(json!({"spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: rfc3339(now)}}}}}))
}

/// Whether the workload updates pods in place, where the annotation restarts no container.
pub fn updates_in_place(object: &Object) -> bool {
    match object {
        Object::CloneSet(cs) => cs.spec.update_strategy.type_.starts_with("InPlace"),
        Object::AdvancedStatefulSet(s) => {
            s.spec.update_strategy.rolling_update.as_ref().is_some_and(|r| r.pod_update_policy.starts_with("InPlace"))
        }
    }
}

async fn one(client: &kube::Client, ns: &str, target: &Target) -> Result<(), Failure> {
    let object = get_target(client, ns, target).await?;
    let patch = restart_patch(&object, Timestamp::now())
        .map_err(|why| Failure::Other(format!("{} {:?} {why}", target.workload.resource(), target.name)))?;
    patch_target(client, ns, target, &kube::api::Patch::Merge(patch)).await?;
    if updates_in_place(&object) {
        err(&format!(
            "Warning: {target} updates pods in place: the new template annotation is written to its pods in place, \
             without restarting their containers\n"
        ));
    }
    out(&name_line(target, "restarted"));
    Ok(())
}

/// `rollout restart TYPE/NAME...`.
pub async fn run(flags: &KubeFlags, args: &TargetArgs) -> Outcome {
    let targets = parse_targets(&args.resources).map_err(|e| vec![Failure::Other(e)])?;
    let (client, ns) = connect::connect(flags).await.map_err(|e| vec![e])?;
    let mut failures = Vec::new();
    for t in &targets {
        if let Err(f) = one(&client, &ns, t).await {
            failures.push(f);
        }
    }
    if failures.is_empty() { Ok(()) } else { Err(failures) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apis::CloneSet;
    use crate::apis::statefulset::v1beta1::StatefulSet;

    fn cs(mut v: Value) -> (Value, Object) {
        v["apiVersion"] = json!("apps.kruise.io/v1alpha1");
        v["kind"] = json!("CloneSet");
        v["metadata"]["name"] = json!("web");
        let o = Object::CloneSet(Box::new(serde_json::from_value::<CloneSet>(v.clone()).unwrap()));
        (v, o)
    }

    #[test]
    fn restart_adds_the_annotation_and_keeps_the_others() {
        let now: Timestamp = "2026-12-02T22:40:05.123Z".parse().unwrap();
        let (doc, object) = cs(json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
            "metadata": {"name": "web"},
            "spec": {"updateStrategy": {"type": "ReCreate"}, "template": {
                "metadata": {"labels": {"app": "web"}, "annotations": {"team": "a/b~c"}},
                "spec": {"containers": [{"name": "main", "image": "nginx"}]}}}}));
        let mut patched = doc.clone();
        json_patch::merge(&mut patched, &restart_patch(&object, now).unwrap());
        let mut expected = doc.clone();
        expected["spec"]["template"]["metadata"]["annotations"][RESTARTED_AT] = json!("2026-12-02T22:40:05Z");
        assert_eq!(patched, expected);
        assert!(!updates_in_place(&object));

        // A later restart replaces the time.
        let later: Timestamp = "2026-12-02T23:00:00Z".parse().unwrap();
        json_patch::merge(&mut patched, &restart_patch(&object, later).unwrap());
        assert_eq!(patched["spec"]["template"]["metadata"]["annotations"][RESTARTED_AT], "2026-12-02T23:00:00Z");
    }

    #[test]
    fn paused_workloads_are_refused_and_in_place_ones_flagged() {
        let now = Timestamp::UNIX_EPOCH;
        let (_, paused) = cs(json!({"spec": {"updateStrategy": {"paused": true}}}));
        assert_eq!(
            restart_patch(&paused, now).unwrap_err(),
            "can't restart paused CloneSet (run rollout resume first)"
        );
        let (_, in_place) = cs(json!({"spec": {"updateStrategy": {"type": "InPlaceIfPossible"}}}));
        assert!(updates_in_place(&in_place));
        let sts: StatefulSet = serde_json::from_value(json!({"apiVersion": "apps.kruise.io/v1beta1",
            "kind": "StatefulSet", "metadata": {"name": "db"}, "spec": {"updateStrategy": {"type": "RollingUpdate",
            "rollingUpdate": {"podUpdatePolicy": "InPlaceOnly", "paused": true}}}}))
        .unwrap();
        let sts = Object::AdvancedStatefulSet(Box::new(sts));
        assert!(updates_in_place(&sts));
        assert!(restart_patch(&sts, now).unwrap_err().contains("paused Advanced StatefulSet"));
    }
}
