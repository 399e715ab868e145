//! Container meta on the node (issue 30 item 2, gates `DaemonWatchingPod` and
//! `InPlaceUpdateEnvFromMetadata`; kruise `pkg/daemon/containermeta` and
//! `pkg/util/containermeta`): what kruise-daemon reports in a pod's
//! `apps.kruise.io/runtime-containers-meta` annotation, and which containers it restarts because
//! the env they read from the pod's labels/annotations changed.
//!
//! - [`wants_report`] is kruise's `eventFilter`: a pod owned by an `apps.kruise.io` controller or
//!   injected by a SidecarSet, whose containers changed id, or whose expected env hash changed;
//! - [`current_env_hash`] is `GetCurrentHash`: the same hash as
//!   [`crate::core::inplace::refresh::env_from_metadata_hash`] (`GetExpectHash`) but over the values
//!   the running container really has (read with `env` through CRI `ExecSync`);
//! - [`build`] is `manageContainerMetaSet`: one entry per container status (the runtime's newest
//!   instance of that name), kept from the previous report while the container id is the same;
//!   the env hash of a running container measured once; a container whose measured hash differs
//!   from the expected one is restarted while the pod's `InPlaceUpdateReady` condition is False;
//! - [`encode`] is Go's `json.Marshal` of kruise's `RuntimeContainerMetaSet`.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, EnvVar, Pod};

use crate::apis::keys::{IN_PLACE_UPDATE_READY, SIDECARSET_HASH};
use crate::core::inplace::envref::split_subscripted_path;
use crate::core::inplace::refresh::{env_from_metadata_hash, hash_envs};
use crate::core::inplace::state::{
    RuntimeContainerHashes, RuntimeContainerMeta, RuntimeContainerMetaSet, read_runtime_meta,
};
use crate::core::pods;

/// One container as the node's runtime shows it (the newest instance of that name).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observed {
    /// Container name.
    pub name: String,
    /// `<runtime>://<id>`.
    pub id: String,
    /// Whether it runs.
    pub running: bool,
    /// The kubelet's restart count of it.
    pub restart_count: i32,
    /// The kubelet's container hash (its `io.kubernetes.container.hash` annotation; 0 unknown).
    pub plain_hash: u64,
}

/// Whether an env var reads `metadata.labels`/`metadata.annotations` (kruise's filter of both
/// hashers: no literal value, a fieldRef, not a SidecarSet version var); its subscripted path.
fn metadata_ref(e: &EnvVar) -> Option<(&str, &str)> {
    if e.value.as_deref().is_some_and(|v| !v.is_empty())
        || matches!(e.name.as_str(), "SIDECARSET_VERSION" | "SIDECARSET_VERSION_ALT")
    {
        return None;
    }
    let path = e.value_from.as_ref()?.field_ref.as_ref()?.field_path.as_str();
    split_subscripted_path(path)
}

/// kruise `GetCurrentHash`: the env vars `c` reads from metadata, with the values the running
/// container has (`env`; a missing one is empty, as kruise's getter answers).
pub fn current_env_hash(c: &Container, env: &BTreeMap<String, String>) -> u64 {
    let envs = c
        .env
        .iter()
        .flatten()
        .filter(|e| metadata_ref(e).is_some_and(|(path, _)| matches!(path, "metadata.annotations" | "metadata.labels")))
        .map(|e| EnvVar {
            name: e.name.clone(),
            value: Some(env.get(&e.name).cloned().unwrap_or_default()),
            value_from: None,
        })
        .collect();
    hash_envs(envs)
}

/// Parses the output of `env` (kruise `wrapEnvGetter`: `KEY=VALUE` lines, trimmed).
pub fn parse_env(stdout: &str) -> BTreeMap<String, String> {
    stdout
        .trim()
        .lines()
        .filter_map(|l| l.trim().split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn owned_by_kruise(pod: &Pod) -> bool {
    let controller = pod.metadata.owner_references.iter().flatten().find(|o| o.controller == Some(true));
    controller.is_some_and(|o| o.api_version.split_once('/').is_some_and(|(group, _)| group == "apps.kruise.io"))
}

fn containers(pod: &Pod) -> &[Container] {
    pod.spec.as_ref().map_or(&[], |s| s.containers.as_slice())
}

/// kruise `eventFilter`: whether a change from `old` (`None`: a pod seen for the first time) to
/// `new` needs a report. `env_gate`: `InPlaceUpdateEnvFromMetadata`.
pub fn wants_report(old: Option<&Pod>, new: &Pod, env_gate: bool) -> bool {
    if !owned_by_kruise(new) && !pods::annotations(new).contains_key(SIDECARSET_HASH) {
        return false;
    }
    if old.is_some_and(|o| containers(o).len() != containers(new).len()) {
        return true;
    }
    let meta = read_runtime_meta(new).ok().flatten();
    let statuses = new.status.as_ref().and_then(|s| s.container_statuses.as_deref()).unwrap_or(&[]);
    for (i, cs) in statuses.iter().enumerate() {
        let id = cs.container_id.as_deref().unwrap_or_default();
        if id.is_empty() {
            continue;
        }
        let Some(meta) = meta.as_ref().filter(|m| m.containers.len() == statuses.len()) else { return true };
        if meta.containers[i].container_id != id {
            return true;
        }
        if env_gate {
            // kruise indexes the spec by the status' position.
            let Some(c) = containers(new).get(i) else { continue };
            let expected = env_from_metadata_hash(c, new);
            if expected != meta.containers[i].hashes.extracted_env_from_metadata_hash {
                return true;
            }
            let old_c = old.and_then(|o| containers(o).get(i).map(|c| (c, o)));
            if old_c.is_some_and(|(c, o)| env_from_metadata_hash(c, o) != expected) {
                return true;
            }
        }
    }
    false
}

/// The containers whose env must be read before [`build`]: running, without a measured hash in
/// the previous report for the same container id (their ids).
pub fn needs_env(pod: &Pod, observed: &[Observed], env_gate: bool) -> Vec<String> {
    if !env_gate {
        return Vec::new();
    }
    let old = read_runtime_meta(pod).ok().flatten();
    let statuses = pod.status.as_ref().and_then(|s| s.container_statuses.as_deref()).unwrap_or(&[]);
    statuses
        .iter()
        .filter_map(|cs| observed.iter().find(|o| o.name == cs.name))
        .filter(|o| containers(pod).iter().any(|c| c.name == o.name))
        .filter(|o| {
            let kept = old.as_ref().and_then(|m| m.containers.iter().rev().find(|m| m.container_id == o.id));
            o.running && kept.is_none_or(|m| m.hashes.extracted_env_from_metadata_hash == 0)
        })
        .map(|o| o.id.clone())
        .collect()
}

/// What one sync decides.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    /// The meta to report.
    pub meta: RuntimeContainerMetaSet,
    /// Whether it differs from the pod's annotation (a patch is due).
    pub changed: bool,
    /// Container ids to restart (their env from metadata is stale).
    pub restart: Vec<String>,
    /// An env could not be read: look again in 3 s.
    pub retry: bool,
}

/// kruise `manageContainerMetaSet` and `reportContainerMetaSet`'s comparison. `envs`: the env
/// read from the containers [`needs_env`] named, by container id (`Err`: the read failed).
pub fn build(
    pod: &Pod,
    observed: &[Observed],
    envs: &BTreeMap<String, Result<BTreeMap<String, String>, String>>,
    env_gate: bool,
) -> Report {
    let old = read_runtime_meta(pod).ok().flatten();
    let mut report = Report::default();
    let updating = pods::condition(pod, IN_PLACE_UPDATE_READY).is_some_and(|c| c.status == "False");
    let statuses = pod.status.as_ref().and_then(|s| s.container_statuses.as_deref()).unwrap_or(&[]);
    for cs in statuses {
        let Some(o) = observed.iter().find(|o| o.name == cs.name) else { continue };
        let Some(spec) = containers(pod).iter().find(|c| c.name == cs.name) else { continue };
        let kept = old.as_ref().and_then(|m| m.containers.iter().rev().find(|m| m.container_id == o.id)).cloned();
        let mut meta = kept.unwrap_or_else(|| RuntimeContainerMeta {
            name: o.name.clone(),
            container_id: o.id.clone(),
            restart_count: o.restart_count,
            hashes: RuntimeContainerHashes { plain_hash: o.plain_hash, extracted_env_from_metadata_hash: 0 },
        });
        if env_gate {
            if meta.hashes.extracted_env_from_metadata_hash == 0 && o.running {
                match envs.get(&o.id) {
                    Some(Ok(env)) => meta.hashes.extracted_env_from_metadata_hash = current_env_hash(spec, env),
                    Some(Err(_)) | None => report.retry = true,
                }
            }
            let hash = meta.hashes.extracted_env_from_metadata_hash;
            if updating && hash > 0 && hash != env_from_metadata_hash(spec, pod) {
                report.restart.push(o.id.clone());
            }
        }
        report.meta.containers.push(meta);
    }
    report.changed = old.as_ref() != Some(&report.meta);
    report
}

/// Go's `json.Marshal` of kruise's `RuntimeContainerMetaSet` (`extractedEnvFromMetadataHash`
/// omitted when 0).
pub fn encode(meta: &RuntimeContainerMetaSet) -> String {
    let items: Vec<String> = meta
        .containers
        .iter()
        .map(|c| {
            let env = match c.hashes.extracted_env_from_metadata_hash {
                0 => String::new(),
                h => format!(",\"extractedEnvFromMetadataHash\":{h}"),
            };
            format!(
                "{{\"name\":{},\"containerID\":{},\"restartCount\":{},\"hashes\":{{\"plainHash\":{}{env}}}}}",
                serde_json::Value::String(c.name.clone()),
                serde_json::Value::String(c.container_id.clone()),
                c.restart_count,
                c.hashes.plain_hash
            )
        })
        .collect();
    format!("{{\"containers\":[{}]}}", items.join(","))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::core::inplace::state::RUNTIME_CONTAINERS_META;
    use serde_json::{Value, json};

    fn container(env: Value) -> Container {
        serde_json::from_value(json!({"name": "c", "env": env})).unwrap()
    }

    fn label_ref(name: &str, key: &str) -> Value {
        json!({"name": name, "valueFrom": {"fieldRef": {"fieldPath": format!("metadata.labels['{key}']")}}})
    }

    /// kruise `TestEnvFromMetadataHasher`: the expected hash of c1 over the pod's labels against the
    /// current hash of c2 over the container's real env.
    #[test]
    fn env_from_metadata_hasher() {
        let pod: Pod = serde_json::from_value(json!({"metadata": {"labels": {"l1": "foo", "l2": "bar"}}})).unwrap();
        let rows = [
            (
                json!([{"name": "e1", "value": "a"}, label_ref("e2", "l1")]),
                json!([{"name": "e1", "value": "a"}, label_ref("e2", "l1"), {"name": "e3", "value": "c"}]),
                [("e2", "bar")],
                false,
            ),
            (
                json!([{"name": "e1", "value": "a"}, label_ref("e2", "l1")]),
                json!([label_ref("e2", "l1"), {"name": "e1", "value": "a"}]),
                [("e2", "foo")],
                true,
            ),
        ];
        for (i, (c1, c2, env, equal)) in rows.into_iter().enumerate() {
            let expect = env_from_metadata_hash(&container(c1), &pod);
            let env: BTreeMap<String, String> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            let real = current_env_hash(&container(c2), &env);
            assert_eq!(expect == real, equal, "#{i}: expected {expect}, real {real}");
        }
        // Byte-identical with kruise's GetExpectHash (the value pinned in inplace::refresh's tests).
        let c = container(json!([label_ref("e2", "l1")]));
        let env: BTreeMap<String, String> = [("e2".to_string(), "foo".to_string())].into();
        assert_eq!(current_env_hash(&c, &env), env_from_metadata_hash(&c, &pod));
        // kruise's value for this container (pinned in inplace::refresh's tests for GetExpectHash),
        // from the values the container runs with.
        let c: Container = serde_json::from_value(json!({"name": "c1", "image": "nginx:1", "env": [
            {"name": "FROM_LABEL", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['k']"}}},
            {"name": "A_ANNO", "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['a/b']"}}},
            {"name": "LIT", "value": "x"}]}))
        .unwrap();
        let env: BTreeMap<String, String> =
            [("FROM_LABEL".to_string(), "v".to_string()), ("A_ANNO".to_string(), "anno<1>".to_string())].into();
        assert_eq!(current_env_hash(&c, &env), 3552054095);
        // No env read from metadata: Go's `json.Marshal` of a nil slice, "null".
        assert_eq!(current_env_hash(&Container::default(), &BTreeMap::new()), 86995377);
    }

    #[test]
    fn parses_env_output() {
        let env = parse_env("PATH=/bin\nA=b=c\n  B=x  \nnoequals\n");
        assert_eq!(env.get("A").map(String::as_str), Some("b=c"));
        assert_eq!(env.get("B").map(String::as_str), Some("x"));
        assert_eq!(env.len(), 3);
    }

    fn pod(meta: Option<&str>, ready: Option<&str>, label: &str) -> Pod {
        let mut p: Pod = serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "ns", "labels": {"l1": label},
                "ownerReferences": [{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "cs",
                    "uid": "u", "controller": true}]},
            "spec": {"containers": [{"name": "c", "env": [label_ref("E", "l1")]}, {"name": "d"}]},
            "status": {"containerStatuses": [
                {"name": "c", "containerID": "containerd://c1", "image": "", "imageID": "", "ready": true, "restartCount": 0},
                {"name": "d", "containerID": "containerd://d1", "image": "", "imageID": "", "ready": true, "restartCount": 2}]}
        }))
        .unwrap();
        if let Some(m) = meta {
            p.metadata.annotations = Some([(RUNTIME_CONTAINERS_META.to_string(), m.to_string())].into());
        }
        if let Some(r) = ready {
            p.status.as_mut().unwrap().conditions =
                Some(serde_json::from_value(json!([{"type": "InPlaceUpdateReady", "status": r}])).unwrap());
        }
        p
    }

    fn observed() -> Vec<Observed> {
        vec![
            Observed { name: "c".into(), id: "containerd://c1".into(), running: true, restart_count: 0, plain_hash: 7 },
            Observed { name: "d".into(), id: "containerd://d1".into(), running: true, restart_count: 2, plain_hash: 8 },
        ]
    }

    fn envs(c: &str) -> BTreeMap<String, Result<BTreeMap<String, String>, String>> {
        [
            ("containerd://c1".to_string(), Ok([("E".to_string(), c.to_string())].into())),
            ("containerd://d1".to_string(), Ok(BTreeMap::new())),
        ]
        .into()
    }

    #[test]
    fn first_report_measures_every_running_container() {
        let p = pod(None, None, "foo");
        assert!(wants_report(None, &p, true), "no meta yet");
        assert_eq!(needs_env(&p, &observed(), true), vec!["containerd://c1", "containerd://d1"]);
        let r = build(&p, &observed(), &envs("foo"), true);
        assert!(r.changed && r.restart.is_empty() && !r.retry);
        let hc = env_from_metadata_hash(&p.spec.as_ref().unwrap().containers[0], &p);
        let hd = env_from_metadata_hash(&p.spec.as_ref().unwrap().containers[1], &p);
        assert_eq!(
            encode(&r.meta),
            format!(
                r#"{{"containers":[{{"name":"c","containerID":"containerd://c1","restartCount":0,"hashes":{{"plainHash":7,"extractedEnvFromMetadataHash":{hc}}}}},{{"name":"d","containerID":"containerd://d1","restartCount":2,"hashes":{{"plainHash":8,"extractedEnvFromMetadataHash":{hd}}}}}]}}"#
            )
        );
        // The reported pod: nothing more to report, no env to read again.
        let reported = pod(Some(&encode(&r.meta)), None, "foo");
        assert!(!wants_report(Some(&reported), &reported, true));
        assert!(needs_env(&reported, &observed(), true).is_empty());
        let again = build(&reported, &observed(), &BTreeMap::new(), true);
        assert!(!again.changed && again.restart.is_empty() && !again.retry);
        // Decoding what we encode gives the same set.
        assert_eq!(read_runtime_meta(&reported).unwrap().unwrap(), r.meta);
    }

    #[test]
    fn a_changed_label_restarts_the_container_only_while_updating_in_place() {
        let first = build(&pod(None, None, "foo"), &observed(), &envs("foo"), true);
        let meta = encode(&first.meta);
        // The label changed: the filter sees it; no restart unless InPlaceUpdateReady is False.
        let old = pod(Some(&meta), None, "foo");
        let new = pod(Some(&meta), None, "bar");
        assert!(wants_report(Some(&old), &new, true));
        let r = build(&new, &observed(), &BTreeMap::new(), true);
        assert!(r.restart.is_empty() && !r.changed);
        let updating = pod(Some(&meta), Some("False"), "bar");
        let r = build(&updating, &observed(), &BTreeMap::new(), true);
        assert_eq!(r.restart, vec!["containerd://c1".to_string()], "d reads nothing that changed");
        assert!(build(&pod(Some(&meta), Some("True"), "bar"), &observed(), &BTreeMap::new(), true).restart.is_empty());
        // The container came back with a new id and the new env: measured again, consistent.
        let mut after = updating.clone();
        after.status.as_mut().unwrap().container_statuses.as_mut().unwrap()[0].container_id =
            Some("containerd://c2".into());
        let mut obs = observed();
        obs[0].id = "containerd://c2".into();
        obs[0].restart_count = 1;
        assert!(wants_report(Some(&updating), &after, true), "a new container id");
        assert_eq!(needs_env(&after, &obs, true), vec!["containerd://c2"]);
        let envs: BTreeMap<_, _> =
            [("containerd://c2".to_string(), Ok([("E".to_string(), "bar".to_string())].into()))].into();
        let r = build(&after, &obs, &envs, true);
        assert!(r.changed && r.restart.is_empty());
        assert_eq!(r.meta.containers[0].restart_count, 1);
        assert_eq!(
            r.meta.containers[0].hashes.extracted_env_from_metadata_hash,
            env_from_metadata_hash(&after.spec.as_ref().unwrap().containers[0], &after)
        );
        // A failed read leaves the hash unmeasured and asks for a retry.
        let failed: BTreeMap<_, _> = [("containerd://c2".to_string(), Err("exec failed".to_string()))].into();
        let r = build(&after, &obs, &failed, true);
        assert!(r.retry && r.meta.containers[0].hashes.extracted_env_from_metadata_hash == 0);
    }

    #[test]
    fn pods_kruise_does_not_manage_are_ignored() {
        let mut p = pod(None, None, "foo");
        p.metadata.owner_references = None;
        assert!(!wants_report(None, &p, true));
        p.metadata.annotations = Some([(SIDECARSET_HASH.to_string(), "{}".to_string())].into());
        assert!(wants_report(None, &p, true), "injected by a SidecarSet");
        // A pod without container ids yet needs no report.
        let mut p = pod(None, None, "foo");
        for cs in p.status.as_mut().unwrap().container_statuses.as_mut().unwrap() {
            cs.container_id = None;
        }
        assert!(!wants_report(None, &p, true));
    }
}
