//! `rollout restart`: as kruise-tools restarts a CloneSet, an Advanced StatefulSet or an Advanced
//! DaemonSet
//! (`UpdateResourceEnv`): every container of the pod template gets the env var `RESTARTED_AT`
//! (the time, RFC 3339, seconds; an existing one is replaced where it stands, otherwise it is
//! appended), so the controller rolls every pod to a new revision. An env change cannot be applied
//! in place, so even under an in-place update strategy each pod is recreated: a real restart
//! (kubectl's `kubectl.kubernetes.io/restartedAt` template annotation would be applied in place
//! there, restarting nothing). A paused workload is refused, as kubectl refuses a paused
//! Deployment (the restart would wait unseen).
//!
//! Difference from kruise-tools, on purpose: it replaces the whole object it read (a PUT); we send
//! a JSON patch of the containers' env lists that first tests the resourceVersion read, so a
//! concurrent change is refused instead of overwritten.

use k8s_openapi::api::core::v1::EnvVar;
use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use super::cli::{KubeFlags, TargetArgs};
use super::pause::is_paused;
use super::target::{Target, parse_targets};
use super::{Failure, Object, Outcome, connect, get_target, name_line, out, patch_target};

/// The env var kruise-tools' `rollout restart` sets in every container.
pub const RESTARTED_AT: &str = "RESTARTED_AT";

/// Go's `time.Now().Format(time.RFC3339)` in UTC: `2026-12-02T22:40:05Z`.
pub fn rfc3339(now: Timestamp) -> String {
    now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// kruise-tools' `updateEnv(existing, [RESTARTED_AT=now], nil)`: a variable of that name takes
/// the new value where it stands (later duplicates dropped), else it is appended.
pub fn with_restart_env(existing: &[EnvVar], value: &str) -> Vec<EnvVar> {
    let restart = EnvVar { name: RESTARTED_AT.into(), value: Some(value.into()), value_from: None };
    let mut out = Vec::with_capacity(existing.len() + 1);
    let mut covered = false;
    for e in existing {
        if e.name == RESTARTED_AT {
            if !covered {
                out.push(restart.clone());
                covered = true;
            }
            continue;
        }
        out.push(e.clone());
    }
    if !covered {
        out.push(restart);
    }
    out
}

/// The JSON patch that restarts a workload at `now` (the resourceVersion read tested first, then
/// each container's env), or why there is none.
pub fn restart_patch(object: &Object, now: Timestamp) -> Result<Value, String> {
    if is_paused(object) {
        let kind = match object {
            Object::CloneSet(_) => "CloneSet",
            Object::AdvancedStatefulSet(_) => "Advanced StatefulSet",
            Object::AdvancedDaemonSet(_) => "Advanced DaemonSet",
        };
        return Err(format!("can't restart paused {kind} (run rollout resume first)"));
    }
    let containers = object.template().spec.as_ref().map_or(&[][..], |s| &s.containers[..]);
    if containers.is_empty() {
        return Err("has no containers to restart".into());
    }
    let at = rfc3339(now);
    let mut ops = Vec::new();
    if let Some(rv) = &object.meta().resource_version {
        ops.push(json!({"op": "test", "path": "/metadata/resourceVersion", "value": rv}));
    }
    for (i, c) in containers.iter().enumerate() {
        let env = with_restart_env(c.env.as_deref().unwrap_or_default(), &at);
        // `add` on an object member sets it whether or not it exists (RFC 6902).
        ops.push(json!({"op": "add", "path": format!("/spec/template/spec/containers/{i}/env"), "value": env}));
    }
    Ok(Value::Array(ops))
}

async fn one(client: &kube::Client, ns: &str, target: &Target) -> Result<(), Failure> {
    let object = get_target(client, ns, target).await?;
    let patch = restart_patch(&object, Timestamp::now())
        .map_err(|why| Failure::Other(format!("{} {:?} {why}", target.workload.resource(), target.name)))?;
    let patch: json_patch::Patch = serde_json::from_value(patch).map_err(|e| Failure::Other(e.to_string()))?;
    patch_target(client, ns, target, &kube::api::Patch::<Value>::Json(patch)).await?;
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

    fn cs(v: Value) -> Object {
        Object::CloneSet(Box::new(serde_json::from_value::<CloneSet>(v).unwrap()))
    }

    fn applied(doc: &Value, object: &Object, now: Timestamp) -> Value {
        let patch: json_patch::Patch = serde_json::from_value(restart_patch(object, now).unwrap()).unwrap();
        let mut out = doc.clone();
        json_patch::patch(&mut out, &patch).unwrap();
        out
    }

    #[test]
    fn restart_sets_the_env_of_every_container_as_kruise_tools_does() {
        let now: Timestamp = "2026-12-02T22:40:05.123Z".parse().unwrap();
        let doc = json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
            "metadata": {"name": "web", "resourceVersion": "7"},
            "spec": {"updateStrategy": {"type": "InPlaceIfPossible"}, "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [
                    {"name": "main", "image": "nginx", "env": [{"name": "A", "value": "1"},
                        {"name": "RESTARTED_AT", "value": "old"}, {"name": "B", "value": "2"},
                        {"name": "RESTARTED_AT", "value": "dup"}]},
                    {"name": "side", "image": "envoy"}]}}}});
        let object = cs(doc.clone());
        let patched = applied(&doc, &object, now);
        let mut expected = doc.clone();
        expected["spec"]["template"]["spec"]["containers"][0]["env"] = json!([{"name": "A", "value": "1"},
            {"name": "RESTARTED_AT", "value": "2026-12-02T22:40:05Z"}, {"name": "B", "value": "2"}]);
        expected["spec"]["template"]["spec"]["containers"][1]["env"] =
            json!([{"name": "RESTARTED_AT", "value": "2026-12-02T22:40:05Z"}]);
        assert_eq!(patched, expected);

        // The patch is pinned to the version read.
        let mut moved = doc.clone();
        moved["metadata"]["resourceVersion"] = json!("8");
        let patch: json_patch::Patch = serde_json::from_value(restart_patch(&object, now).unwrap()).unwrap();
        assert!(json_patch::patch(&mut moved, &patch).is_err(), "a concurrent change is not overwritten");
    }

    #[test]
    fn paused_and_empty_workloads_are_refused() {
        let now = Timestamp::UNIX_EPOCH;
        let paused = cs(json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
            "metadata": {"name": "web"}, "spec": {"updateStrategy": {"paused": true}}}));
        assert_eq!(
            restart_patch(&paused, now).unwrap_err(),
            "can't restart paused CloneSet (run rollout resume first)"
        );
        let sts: StatefulSet = serde_json::from_value(json!({"apiVersion": "apps.kruise.io/v1beta1",
            "kind": "StatefulSet", "metadata": {"name": "db"}, "spec": {"updateStrategy": {"type": "RollingUpdate",
            "rollingUpdate": {"podUpdatePolicy": "InPlaceOnly", "paused": true}}}}))
        .unwrap();
        let sts = Object::AdvancedStatefulSet(Box::new(sts));
        assert!(restart_patch(&sts, now).unwrap_err().contains("paused Advanced StatefulSet"));
        let empty = cs(json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
            "metadata": {"name": "web"}, "spec": {}}));
        assert_eq!(restart_patch(&empty, now).unwrap_err(), "has no containers to restart");
    }
}
