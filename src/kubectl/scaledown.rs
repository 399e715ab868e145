//! `scaledown cloneset/NAME --pods a,b`: kruise-tools' selective scale-down — the named pods are
//! appended to `spec.scaleStrategy.podsToDelete` and `spec.replicas` goes down by one per pod, so
//! the controller deletes exactly those pods and creates none in their place (spec §5). Output as
//! kruise-tools': `# web delete pods [a b] successfully`, then the name printer's line.
//!
//! Differences from kruise-tools, on purpose (it splits on commas and decrements blindly, then
//! replaces the whole object): names are trimmed and deduplicated; a pod that is not a live pod
//! of this CloneSet is refused (the replica count would drop and the controller would delete some
//! other pod instead); a pod already in podsToDelete is not counted twice; replicas never go
//! below 0; and the write is a merge patch carrying the resourceVersion we read, so a concurrent
//! change answers 409 instead of being overwritten.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::ListParams;
use serde_json::{Value, json};

use super::cli::{KubeFlags, ScaledownArgs};
use super::target::{Workload, parse_one};
use super::{Failure, Outcome, connect, fail, get, name_line, out, patch_target};
use crate::apis::CloneSet;

/// The pods to delete (new ones, in the order given) and the merge patch that deletes them.
pub fn scaledown_patch(
    cs: &CloneSet,
    pods: &str,
    live_pods: &BTreeSet<String>,
) -> Result<(Vec<String>, Value), String> {
    if pods.trim().is_empty() {
        return Err("must specify one pod name".into());
    }
    let mut names: Vec<String> = Vec::new();
    for n in pods.split(',').map(str::trim) {
        if n.is_empty() {
            return Err(format!("empty pod name in --pods {pods:?}"));
        }
        if !names.iter().any(|m| m == n) {
            names.push(n.to_string());
        }
    }
    let name = cs.metadata.name.as_deref().unwrap_or("");
    let strangers: Vec<&str> = names.iter().filter(|n| !live_pods.contains(*n)).map(String::as_str).collect();
    if !strangers.is_empty() {
        return Err(format!("pods {strangers:?} are not live pods of CloneSet {name:?}"));
    }
    let existing = &cs.spec.scale_strategy.pods_to_delete;
    let new: Vec<String> = names.into_iter().filter(|n| !existing.contains(n)).collect();
    if new.is_empty() {
        return Err(format!("the pods are already in the podsToDelete of CloneSet {name:?}"));
    }
    let replicas = i64::from(cs.spec.replicas.unwrap_or(1)) - new.len() as i64;
    if replicas < 0 {
        return Err(format!(
            "CloneSet {name:?} has {} replicas: cannot delete {} pods",
            cs.spec.replicas.unwrap_or(1),
            new.len()
        ));
    }
    let all: Vec<&String> = existing.iter().chain(&new).collect();
    let patch = json!({
        "metadata": {"resourceVersion": cs.metadata.resource_version},
        "spec": {"replicas": replicas, "scaleStrategy": {"podsToDelete": all}},
    });
    Ok((new, patch))
}

/// The names of the live (not terminating) pods `uid` controls.
pub fn live_pods(pods: &[Pod], uid: &str) -> BTreeSet<String> {
    pods.iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter(|p| p.metadata.owner_references.iter().flatten().any(|o| o.controller == Some(true) && o.uid == uid))
        .filter_map(|p| p.metadata.name.clone())
        .collect()
}

/// `scaledown cloneset/NAME --pods a,b`.
pub async fn run(flags: &KubeFlags, args: &ScaledownArgs) -> Outcome {
    let target = match parse_one(&args.resources, "scaledown") {
        Ok(t) => t,
        Err(e) => return fail(e),
    };
    if target.workload != Workload::CloneSet {
        return fail("currently only supported CloneSet selective pods deletion".to_string());
    }
    if args.pods.trim().is_empty() {
        return fail("must specify one pod name".to_string());
    }
    let (client, ns) = connect::connect(flags).await.map_err(|e| vec![e])?;
    let go = async {
        let cs: CloneSet = get(&client, &ns, &target.name).await?;
        let pods = Api::<Pod>::namespaced(client.clone(), &ns).list(&ListParams::default()).await?.items;
        let live = live_pods(&pods, cs.metadata.uid.as_deref().unwrap_or(""));
        let (new, patch) = scaledown_patch(&cs, &args.pods, &live)?;
        patch_target(&client, &ns, &target, &kube::api::Patch::Merge(patch)).await.map_err(|e| {
            Failure::Other(format!("scaledown cloneset {} failed, error is {}", target.name, e.message()))
        })?;
        out(&format!("# {} delete pods [{}] successfully\n", target.name, new.join(" ")));
        out(&name_line(&target, "selective pod deletion"));
        Ok::<(), Failure>(())
    };
    go.await.map_err(|e| vec![e])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cs(replicas: i32, to_delete: &[&str]) -> (Value, CloneSet) {
        let doc = json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
            "metadata": {"name": "web", "resourceVersion": "7", "uid": "u1"},
            "spec": {"replicas": replicas, "scaleStrategy": {"podsToDelete": to_delete, "maxUnavailable": 1},
                     "updateStrategy": {"type": "ReCreate"}}});
        (doc.clone(), serde_json::from_value(doc).unwrap())
    }

    fn live(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_patch_deletes_exactly_the_named_pods() {
        let (doc, set) = cs(4, &["web-old"]);
        let (new, patch) =
            scaledown_patch(&set, " web-a, web-b,web-a ", &live(&["web-a", "web-b", "web-c", "web-old"])).unwrap();
        assert_eq!(new, ["web-a", "web-b"]);
        let mut patched = doc.clone();
        json_patch::merge(&mut patched, &patch);
        let mut expected = doc;
        expected["spec"]["replicas"] = json!(2);
        expected["spec"]["scaleStrategy"]["podsToDelete"] = json!(["web-old", "web-a", "web-b"]);
        assert_eq!(patched, expected, "maxUnavailable and the rest are kept");
        assert_eq!(patch["metadata"]["resourceVersion"], "7", "pinned to what was read");

        // A pod already listed is not counted again.
        let (_, patch) = scaledown_patch(&set, "web-old,web-c", &live(&["web-c", "web-old"])).unwrap();
        assert_eq!(patch["spec"]["replicas"], 3);
        assert_eq!(patch["spec"]["scaleStrategy"]["podsToDelete"], json!(["web-old", "web-c"]));
    }

    #[test]
    fn bad_requests_are_refused() {
        let (_, set) = cs(1, &["web-old"]);
        let pods = live(&["web-a", "web-b", "web-old"]);
        for (arg, why) in [
            ("", "must specify one pod name"),
            ("web-a,,web-b", "empty pod name"),
            ("web-a,nginx-x", "are not live pods of CloneSet \"web\""),
            ("web-old", "already in the podsToDelete"),
            ("web-a,web-b", "has 1 replicas: cannot delete 2 pods"),
        ] {
            let e = scaledown_patch(&set, arg, &pods).unwrap_err();
            assert!(e.contains(why), "{arg}: {e}");
        }
    }

    #[test]
    fn live_pods_are_the_controlled_ones_not_terminating() {
        let pod = |name: &str, uid: &str, controller: bool, deleting: bool| -> Pod {
            let mut p: Pod = serde_json::from_value(json!({"metadata": {"name": name,
                "ownerReferences": [{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "web",
                                     "uid": uid, "controller": controller}]}}))
            .unwrap();
            if deleting {
                p.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                    k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
                ));
            }
            p
        };
        let pods = [
            pod("a", "u1", true, false),
            pod("b", "u2", true, false),
            pod("c", "u1", false, false),
            pod("d", "u1", true, true),
        ];
        assert_eq!(live_pods(&pods, "u1"), live(&["a"]));
    }
}
