//! `kruise plan` on snapshots shaped like `kubectl get cloneset,pods,controllerrevisions -o yaml`
//! (tests/data/plan/), through the built binary. The revision names in the snapshots were computed
//! by Go (k8s.io/api v0.32.10 + kruise's revision code) for these templates, so a planned update
//! revision equal to them is kruise's name. SidecarSet snapshots are built here: pods injected by
//! the webhook's own injection code (`core::sidecar::inject`), then the set's image changed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::{Command, Output};

use serde_json::{Value, json};

const NOW: &str = "2024-05-01T12:00:00Z";

fn kruise(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kruise")).args(args).output().unwrap()
}

fn data(name: &str) -> String {
    format!("{}/tests/data/plan/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn json_of_a_template_change_the_status_has_not_seen() {
    let o = kruise(&["plan", "-f", &data("computed.yaml"), "--now", NOW, "-o", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let got: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let want = json!({
        "cloneSet": "shop/web",
        "currentRevision": "web-799f75c5cc",
        "updateRevision": "web-86bbc48456",
        "diff": {"scaleUpNum": 0, "scaleUpNumOldRevision": 0, "scaleDownNum": 0, "scaleDownNumOldRevision": 0,
                 "scaleUpLimit": 0, "deleteReadyLimit": 0, "useSurge": 0, "useSurgeOldRevision": 0,
                 "updateNum": 3, "updateMaxUnavailable": 1},
        "actions": [
            {"action": "createRevision", "revision": "web-86bbc48456",
             "reason": "the template changed: new revision web-86bbc48456 (revision number 2)"},
            {"action": "updateInPlace", "pod": "web-x7k2p", "revision": "web-86bbc48456",
             "reason": "in place: images nginx=nginx:1.26", "images": {"nginx": "nginx:1.26"}}
        ]
    });
    assert_eq!(got, want);
}

#[test]
fn text_of_a_rollout_waiting_for_an_unavailable_pod() {
    let o = kruise(&["plan", "-f", &data("from-status.yaml"), "--now", NOW]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "CloneSet shop/web: current revision web-799f75c5cc, update revision web-86bbc48456 (from status)"
    );
    assert!(
        lines.contains(&"  waiting: web-bj5nt is updating in place: container nginx imageID not changed"),
        "{text}"
    );
    assert!(
        lines.contains(&"  waiting: 1 pods unavailable, maxUnavailable 1: 2 more pods wait to be updated to web-86bbc48456; waiting for web-bj5nt to become ready"),
        "{text}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("  diff: ") && l.contains("updateNum=2") && l.contains("updateMaxUnavailable=1")),
        "{text}"
    );
}

#[test]
fn the_in_place_update_completes_once_the_kubelet_reports_the_new_image() {
    // The same snapshot, with the kubelet now reporting web-bj5nt's new imageID.
    let text = std::fs::read_to_string(data("from-status.yaml")).unwrap();
    let old_id = format!("imageID: docker.io/library/nginx@sha256:{}", "25".repeat(32));
    let new_id = format!("imageID: docker.io/library/nginx@sha256:{}", "26".repeat(32));
    // The pods listed before web-bj5nt already run the new image, so the first YAML `imageID:` with
    // the old digest is web-bj5nt's container status.
    let pos = text.find(&old_id).unwrap();
    let mut changed = text.clone();
    changed.replace_range(pos..pos + old_id.len(), &new_id);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("snapshot.yaml");
    std::fs::write(&path, changed).unwrap();
    let o = kruise(&["plan", "-f", path.to_str().unwrap(), "--now", NOW, "-o", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let got: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let actions: Vec<(String, String)> = got["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["action"].as_str().unwrap().to_string(), a["pod"].as_str().unwrap_or("").to_string()))
        .collect();
    assert_eq!(
        actions,
        [
            ("markInPlaceUpdateReady".to_string(), "web-bj5nt".to_string()),
            ("setLifecycle".to_string(), "web-bj5nt".to_string())
        ],
        "InPlaceUpdateReady becomes True and the pod goes back to Normal"
    );
}

#[test]
fn feature_gates_are_those_of_serve() {
    let o = kruise(&[
        "plan",
        "-f",
        &data("computed.yaml"),
        "--now",
        NOW,
        "--feature-gates",
        "CloneSetShortHash=true",
        "-o",
        "json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = kruise(&["plan", "-f", &data("computed.yaml"), "--feature-gates", "NoSuchGate=true"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("NoSuchGate"), "{}", stderr(&o));
}

#[test]
fn bad_input_gets_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let pods_only = dir.path().join("pods.yaml");
    std::fs::write(&pods_only, "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n").unwrap();
    let o = kruise(&["plan", "-f", pods_only.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(
            "no CloneSet, Advanced StatefulSet, Advanced DaemonSet, SidecarSet or UnitedDeployment in the input"
        ),
        "{}",
        stderr(&o)
    );

    let bad = dir.path().join("bad.yaml");
    std::fs::write(
        &bad,
        "apiVersion: apps.kruise.io/v1alpha1\nkind: CloneSet\nmetadata: {name: web}\nspec: {replicas: many}\n",
    )
    .unwrap();
    let o = kruise(&["plan", "-f", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("bad.yaml:1: CloneSet web:"), "{err}");

    // `cloneset NAME` reads the cluster; without a kubeconfig (and outside a cluster) it says so.
    let o = Command::new(env!("CARGO_BIN_EXE_kruise"))
        .args(["plan", "cloneset", "web", "-n", "shop"])
        .env("KUBECONFIG", dir.path().join("no-such-kubeconfig"))
        .env("HOME", dir.path())
        .env_remove("KUBERNETES_SERVICE_HOST")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("cannot reach the cluster"), "{err}");
    let o = kruise(&["plan", "deployment", "web"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(
            "give `cloneset NAME`, `statefulset NAME`, `daemonset NAME` or `uniteddeployment NAME` [-n NAMESPACE]"
        ),
        "{}",
        stderr(&o)
    );
    let o = kruise(&["plan", "statefulset"]);
    assert_eq!(o.status.code(), Some(2), "a kind without a name");

    let o = kruise(&["plan"]);
    assert_eq!(o.status.code(), Some(2));
}

/// Issue 27 item 7: an Advanced StatefulSet whose template moved from nginx:1.25 to nginx:1.26
/// (Parallel, maxUnavailable 2, partition 1, InPlaceIfPossible): the next round creates the update
/// revision under the name Go computes and updates the two highest ordinals in place; db-1 waits
/// for maxUnavailable and db-0 is below the partition.
#[test]
fn a_statefulset_plan_in_json() {
    let o = kruise(&["plan", "-f", &data("statefulset.yaml"), "--now", NOW, "-o", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let got: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(got["statefulSet"], "shop/db");
    assert_eq!(got["currentRevision"], "db-687675d84c");
    assert_eq!(got["updateRevision"], "db-76f4f4c78", "the name Go computes for the nginx:1.26 template");
    let actions: Vec<(String, String)> = got["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["action"].as_str().unwrap().to_string(), a["pod"].as_str().unwrap_or("").to_string()))
        .collect();
    let want: Vec<(String, String)> = [("createRevision", ""), ("updateInPlace", "db-3"), ("updateInPlace", "db-2")]
        .iter()
        .map(|(a, p)| (a.to_string(), p.to_string()))
        .collect();
    assert_eq!(actions, want, "{got:#}");
    for a in &got["actions"].as_array().unwrap()[1..] {
        assert_eq!(a["revision"], "db-76f4f4c78");
        assert_eq!(a["images"], json!({"main": "nginx:1.26"}));
        assert!(!a["reason"].as_str().unwrap().is_empty());
    }
    assert!(got["errors"].as_array().unwrap().is_empty(), "{got:#}");
}

/// The same snapshot as text, and once the two in-place updates are under way: db-1 waits for
/// them (maxUnavailable 2), db-0 stays below the partition, and the plan says so.
#[test]
fn a_statefulset_plan_in_text_says_what_it_waits_for() {
    let o = kruise(&["plan", "-f", &data("statefulset.yaml"), "--now", NOW]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "StatefulSet shop/db: current revision db-687675d84c, update revision db-76f4f4c78", "{text}");
    assert!(lines[1].starts_with("  pods: 4 (4 ready"), "{text}");
    assert!(text.contains("db-3 -> db-76f4f4c78"), "{text}");
    assert!(!text.contains("db-1 ->") && !text.contains("db-0 ->"), "maxUnavailable and partition: {text}");

    // The state a round later: the revision exists, db-3 and db-2 are being updated in place
    // (InPlaceUpdateReady False, the new image not yet reported).
    let mut list: Value = serde_yaml_like(&std::fs::read_to_string(data("statefulset.yaml")).unwrap());
    let items = list["items"].as_array_mut().unwrap();
    let mut revision = items[1].clone();
    revision["metadata"]["name"] = json!("db-76f4f4c78");
    revision["metadata"]["uid"] = json!("rev-2");
    revision["metadata"]["labels"]["controller.kubernetes.io/hash"] = json!("76f4f4c78");
    revision["revision"] = json!(2);
    revision["data"]["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:1.26");
    for pod in items.iter_mut().filter(|o| o["kind"] == "Pod") {
        let name = pod["metadata"]["name"].as_str().unwrap().to_string();
        if name == "db-3" || name == "db-2" {
            pod["metadata"]["labels"]["controller-revision-hash"] = json!("db-76f4f4c78");
            pod["spec"]["containers"][0]["image"] = json!("nginx:1.26");
            pod["status"]["conditions"][0]["status"] = json!("False");
            pod["status"]["conditions"][1]["status"] = json!("False");
        }
    }
    items.push(revision);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("later.yaml");
    std::fs::write(&path, serde_json::to_string(&list).unwrap()).unwrap();
    let o = kruise(&["plan", "-f", path.to_str().unwrap(), "--now", NOW, "-o", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let got: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let touched: Vec<&str> = got["actions"].as_array().unwrap().iter().filter_map(|a| a["pod"].as_str()).collect();
    assert!(!touched.contains(&"db-1") && !touched.contains(&"db-0"), "{got:#}");
    assert!(
        got["waiting"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().contains("maxUnavailable 2")),
        "{got:#}"
    );
}

/// The snapshot files are JSON documents with a leading comment (valid YAML).
fn serde_yaml_like(text: &str) -> Value {
    let body: String = text.lines().filter(|l| !l.starts_with('#')).collect::<Vec<_>>().join("\n");
    serde_json::from_str(&body).unwrap()
}

/// A snapshot whose CloneSet is v1beta1 (what `kubectl get cloneset` prints now that v1beta1 is
/// served, issue 15) plans exactly as the same snapshot in v1alpha1.
#[test]
fn a_v1beta1_cloneset_plans_as_its_v1alpha1_form() {
    let text = std::fs::read_to_string(data("computed.yaml")).unwrap();
    let mut docs = Vec::new();
    for doc in kruise::compat::yaml::documents(&text) {
        let mut v = doc.unwrap().value;
        if v["kind"] == "List" {
            let items: Vec<Value> = v["items"].as_array().unwrap().clone();
            v["items"] = items.into_iter().map(to_beta).collect();
        } else {
            v = to_beta(v);
        }
        docs.push(serde_json::to_string(&v).unwrap());
    }
    assert!(docs.iter().any(|d| d.contains("apps.kruise.io/v1beta1")), "the snapshot has a CloneSet");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v1beta1.yaml");
    std::fs::write(&path, docs.join("\n---\n")).unwrap();
    let alpha = kruise(&["plan", "-f", &data("computed.yaml"), "--now", NOW, "-o", "json"]);
    let beta = kruise(&["plan", "-f", path.to_str().unwrap(), "--now", NOW, "-o", "json"]);
    assert!(beta.status.success(), "{}", stderr(&beta));
    assert_eq!(stdout(&beta), stdout(&alpha));
}

fn to_beta(v: Value) -> Value {
    if v["kind"] == "CloneSet" {
        kruise::core::conversion::convert(0, &v, "apps.kruise.io/v1beta1").unwrap()
    } else {
        v
    }
}

// ---- SidecarSets (issue 28 item 10) ----

/// SidecarSet `logs` (selector `app=web`, namespace `default`, partition 1, maxUnavailable 1)
/// with one sidecar `log-agent` at `image` and env `LEVEL=level`, as JSON (v1alpha1).
fn logs_set(image: &str, level: &str) -> Value {
    json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "SidecarSet",
        "metadata": {"name": "logs", "uid": "set-uid", "generation": 2, "resourceVersion": "7"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "namespace": "default",
            "containers": [{"name": "log-agent", "image": image, "env": [{"name": "LEVEL", "value": level}]}],
            "updateStrategy": {"type": "RollingUpdate", "partition": 1, "maxUnavailable": 1}
        }
    })
}

/// Pod `name` of `default` into which the webhook injected `logs_set(busybox:1.36, level)`:
/// Running, every container ready, Ready since 10:0`ready_minute` (the active-pods order puts the
/// pod ready for the shortest time first), or not ready.
fn injected_web_pod(name: &str, level: &str, ready_minute: Option<u32>) -> Value {
    injected_web_pod_at(name, "busybox:1.36", level, ready_minute)
}

/// [`injected_web_pod`] with the sidecar at `image`.
fn injected_web_pod_at(name: &str, image: &str, level: &str, ready_minute: Option<u32>) -> Value {
    use kruise::core::sidecar::inject::{InjectionInput, plan_injection};
    let mut set: kruise::apis::SidecarSet = serde_json::from_value(logs_set(image, level)).unwrap();
    kruise::core::sidecar::defaults::default_sidecarset(&mut set).unwrap();
    let mut pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"), "resourceVersion": "3",
            "labels": {"app": "web"}, "creationTimestamp": "2024-05-01T09:00:00Z"},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.25"}]}
    }))
    .unwrap();
    let ns_labels = [("kubernetes.io/metadata.name".to_string(), "default".to_string())].into();
    let no_revisions = Vec::new;
    let input = InjectionInput {
        namespace_labels: &ns_labels,
        revisions: &no_revisions,
        draw: 0.0,
        now: "2024-05-01T09:00:00Z",
        sort_by_name: false,
    };
    plan_injection(&pod, &[std::sync::Arc::new(set)], &input).unwrap().apply(&mut pod);
    let mut v = serde_json::to_value(&pod).unwrap();
    v["apiVersion"] = json!("v1");
    v["kind"] = json!("Pod");
    v["spec"]["nodeName"] = json!("node-a");
    let statuses: Vec<Value> = v["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let image = c["image"].as_str().unwrap();
            json!({"name": c["name"], "image": image, "imageID": format!("docker.io/{image}@sha256:{}", "ab".repeat(32)),
                   "ready": ready_minute.is_some(), "restartCount": 0, "started": true,
                   "state": {"running": {"startedAt": "2024-05-01T09:00:00Z"}}})
        })
        .collect();
    let ready = if ready_minute.is_some() { "True" } else { "False" };
    let since = format!("2024-05-01T10:0{}:00Z", ready_minute.unwrap_or(0));
    v["status"] = json!({"phase": "Running", "containerStatuses": statuses,
        "conditions": [{"type": "Ready", "status": ready, "lastTransitionTime": since}]});
    v
}

/// A snapshot file (a `kind: List`) of `items`.
fn snapshot_file(dir: &tempfile::TempDir, items: Vec<Value>) -> String {
    let path = dir.path().join("snapshot.json");
    let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
    std::fs::write(&path, serde_json::to_string_pretty(&list).unwrap()).unwrap();
    path.to_str().unwrap().to_string()
}

/// Issue 28 item 10: four pods injected with busybox:1.36, the set now at busybox:1.37 with
/// partition 1 and maxUnavailable 1, every pod ready. The strategy's order is the active-pods
/// order (ready for the shortest time first): web-3, web-2, web-1, web-0. The partition keeps the
/// last (web-0), maxUnavailable lets one through (web-3), web-2 and web-1 wait for it; the first
/// revision of the set is created and the status (4 matched, none updated) written.
#[test]
fn a_sidecarset_plan_in_text_names_the_next_pod_and_why_the_others_wait() {
    let dir = tempfile::tempdir().unwrap();
    let mut items = vec![logs_set("busybox:1.37", "info")];
    for i in 0..4u32 {
        items.push(injected_web_pod(&format!("web-{i}"), "info", Some(i)));
    }
    let o = kruise(&["plan", "-f", &snapshot_file(&dir, items), "--now", NOW]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("SidecarSet logs: latest revision logs-"), "{text}");
    let revision = lines[0].rsplit(' ').next().unwrap();
    assert_eq!(lines[1], "  pods: 4 matched (4 ready, 0 updated, 0 updated ready)", "{text}");
    assert_eq!(
        lines[2],
        format!(
            "  status write: observedGeneration 2, matchedPods 4, updatedPods 0, readyPods 4, updatedReadyPods 0, \
             latestRevision {revision}"
        ),
        "{text}"
    );
    assert_eq!(lines[3], format!("  createRevision  {revision}"), "{text}");
    let pods: Vec<&str> = lines.iter().copied().filter(|l| l.contains(" default/web-")).collect();
    assert_eq!(
        pods,
        [
            "  waiting  default/web-0: partition 1 keeps it at the old sidecars (last in the update order)".to_string(),
            "  waiting  default/web-1: maxUnavailable 1 is used up by pods being upgraded or not ready".to_string(),
            "  waiting  default/web-2: maxUnavailable 1 is used up by pods being upgraded or not ready".to_string(),
            format!("  upgrade  default/web-3: -> {revision}: images log-agent=busybox:1.37"),
        ],
        "{text}"
    );
    assert!(
        lines.contains(&"  waiting: maxUnavailable 1: 1 pod(s) are being upgraded or not ready, 2 wait"),
        "the planner's own reason is shown too: {text}"
    );
}

/// The same rollout with the set as v1beta1 (`namespaceSelector` for `namespace`, what `kubectl
/// get sidecarset` prints), its Namespace, web-1 not ready and a fifth pod injected when the
/// sidecar had `LEVEL=debug`: a not-ready candidate is always taken (upgrading it costs no
/// availability), so web-1 and web-3 are next; web-4 cannot be upgraded in place because its
/// sidecar's `env` differs, and this round marks it (condition and a pod Event).
#[test]
fn a_v1beta1_sidecarset_plan_in_json_names_what_stops_a_pod() {
    let dir = tempfile::tempdir().unwrap();
    let mut set = logs_set("busybox:1.37", "info");
    set = kruise::core::conversion::convert(0, &set, "apps.kruise.io/v1beta1").unwrap();
    assert!(set["spec"]["namespaceSelector"].is_object(), "{set}");
    let mut items = vec![
        set,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default",
            "labels": {"kubernetes.io/metadata.name": "default"}}}),
    ];
    for i in 0..4u32 {
        items.push(injected_web_pod(&format!("web-{i}"), "info", (i != 1).then_some(i)));
    }
    items.push(injected_web_pod("web-4", "debug", Some(4)));
    // A pod of another set's injection is not this set's.
    let mut other = injected_web_pod("other-0", "info", Some(5));
    other["metadata"]["annotations"]["kruise.io/sidecarset-injected-list"] = json!("mesh");
    items.push(other);
    let o = kruise(&["plan", "-f", &snapshot_file(&dir, items), "--now", NOW, "-o", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let got: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(got["sidecarSet"], "logs");
    let revision = got["latestRevision"].as_str().unwrap();
    assert_eq!(got["status"]["matchedPods"], 5, "{got:#}");
    assert_eq!(got["status"]["readyPods"], 4, "{got:#}");
    assert_eq!(got["statusWrite"], true);
    assert_eq!(got["revisionWrites"][0]["action"], "createRevision");
    assert_eq!(got["revisionWrites"][0]["revision"], revision);
    let states: Vec<(String, String)> = got["pods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["pod"].as_str().unwrap().to_string(), p["state"].as_str().unwrap().to_string()))
        .collect();
    let want: Vec<(String, String)> = [
        ("default/web-0", "waiting"),
        ("default/web-1", "upgradeNext"),
        ("default/web-2", "waiting"),
        ("default/web-3", "upgradeNext"),
        ("default/web-4", "notUpgradable"),
    ]
    .iter()
    .map(|(p, s)| (p.to_string(), s.to_string()))
    .collect();
    assert_eq!(states, want, "{got:#}");
    let pods = got["pods"].as_array().unwrap();
    assert_eq!(pods[1]["images"], json!({"log-agent": "busybox:1.37"}));
    assert!(pods[0]["reason"].as_str().unwrap().starts_with("partition 1 keeps it"), "{got:#}");
    assert!(pods[2]["reason"].as_str().unwrap().starts_with("maxUnavailable 1"), "{got:#}");
    let why = pods[4]["reason"].as_str().unwrap();
    assert!(why.contains("container log-agent: env differ"), "{why}");
    assert_eq!(pods[4]["marked"], true, "{got:#}");
    let actions: Vec<(&str, &str)> = got["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["action"].as_str().unwrap(), a["pod"].as_str().unwrap()))
        .collect();
    assert_eq!(
        actions,
        [("markNotUpgradable", "web-4"), ("updateInPlace", "web-1"), ("updateInPlace", "web-3")],
        "{got:#}"
    );
    assert_eq!(got["podEvents"][0]["pod"], "default/web-4");
    assert_eq!(got["podEvents"][0]["reason"], "SidecarNotUpgradable");
}

/// A paused set: the pod still at busybox:1.36 waits for `paused`, the one injected at 1.37 is
/// updated, and a pod whose labels no longer match the selector is named as not managed; the
/// status is still written (kruise computes it before it stops for `paused`).
#[test]
fn a_paused_sidecarset_plan_says_why_each_pod_is_left() {
    let dir = tempfile::tempdir().unwrap();
    let mut set = logs_set("busybox:1.37", "info");
    set["spec"]["updateStrategy"]["paused"] = json!(true);
    let mut moved = injected_web_pod("web-2", "info", Some(2));
    moved["metadata"]["labels"]["app"] = json!("other");
    let items = vec![
        set,
        injected_web_pod("web-0", "info", Some(0)),
        injected_web_pod_at("web-1", "busybox:1.37", "info", Some(1)),
        moved,
    ];
    let o = kruise(&["plan", "-f", &snapshot_file(&dir, items), "--now", NOW]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[1], "  pods: 2 matched (2 ready, 1 updated, 1 updated ready)", "{text}");
    assert!(lines[2].starts_with("  status write: "), "{text}");
    let revision = lines[0].rsplit(' ').next().unwrap();
    let pods: Vec<&str> = lines.iter().copied().filter(|l| l.contains(" default/web-")).collect();
    assert_eq!(
        pods,
        [
            "  waiting      default/web-0: updateStrategy.paused is true".to_string(),
            format!("  updated      default/web-1: runs the sidecars of {revision}"),
            "  not managed  default/web-2: spec.selector no longer matches its labels".to_string(),
        ],
        "{text}"
    );
    assert!(lines.contains(&"  waiting: updateStrategy.paused: the upgrade is paused"), "{text}");
}

/// With gate PreDownloadImageForInPlaceUpdate the plan shows the ImagePullJob the rollout would
/// create (spec §7.3: `<update revision>-<container>`, the new image, kruise's defaults); without
/// it, no `preDownload` key at all.
#[test]
fn pre_download_shows_the_job_a_rollout_would_create() {
    let gates = "PreDownloadImageForInPlaceUpdate=true";
    let o = kruise(&["plan", "-f", &data("from-status.yaml"), "--now", NOW, "-o", "json", "--feature-gates", gates]);
    assert!(o.status.success(), "{}", stderr(&o));
    let got: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let pd = &got["preDownload"];
    assert_eq!(pd["jobs"].as_array().map(Vec::len), Some(1), "{pd}");
    let job = &pd["jobs"][0];
    assert_eq!(job["metadata"]["name"], "web-86bbc48456-nginx");
    assert_eq!(job["metadata"]["namespace"], "shop");
    assert_eq!(job["metadata"]["labels"], json!({"app": "web", "controller.kubernetes.io/hash": "86bbc48456"}));
    assert_eq!(job["metadata"]["ownerReferences"][0]["uid"], "6b1c-cs");
    assert_eq!(
        job["spec"],
        json!({"image": "nginx:1.26",
               "podSelector": {"matchLabels": {"app": "web"}, "matchExpressions": [
                   {"key": "controller-revision-hash", "operator": "NotIn", "values": ["web-86bbc48456", "86bbc48456"]}]},
               "parallelism": 1,
               "pullPolicy": {"timeoutSeconds": 300, "backoffLimit": 1},
               "completionPolicy": {"type": "Always", "ttlSecondsAfterFinished": 600},
               "sandboxConfig": {"labels": {"app": "web", "controller.kubernetes.io/hash": "86bbc48456"}}})
    );
    let actions: Vec<&str> = pd["actions"].as_array().unwrap().iter().map(|a| a["action"].as_str().unwrap()).collect();
    assert_eq!(actions, ["createImagePullJob", "markPreDownload"]);

    let text = stdout(&kruise(&["plan", "-f", &data("from-status.yaml"), "--now", NOW, "--feature-gates", gates]));
    assert!(
        text.contains("    ImagePullJob web-86bbc48456-nginx: image nginx:1.26, parallelism 1, timeout 300s"),
        "{text}"
    );
    let off = kruise(&["plan", "-f", &data("from-status.yaml"), "--now", NOW, "-o", "json"]);
    let off: Value = serde_json::from_str(&stdout(&off)).unwrap();
    assert!(off.get("preDownload").is_none());
}

/// An Advanced DaemonSet snapshot (`kubectl get daemonsets.apps.kruise.io,pods,controllerrevisions
/// -o yaml` plus the nodes): `agent` on nodes n-a, n-b, n-c, of which n-c carries a NoSchedule
/// taint the template does not tolerate, and n-a already runs a pod of the set.
fn daemonset_snapshot(dir: &tempfile::TempDir, api_version: &str, with_nodes: bool) -> String {
    let mut spec = json!({
        "selector": {"matchLabels": {"app": "agent"}},
        "template": {"metadata": {"labels": {"app": "agent"}},
                     "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]}},
        "updateStrategy": {"type": "RollingUpdate",
                           "rollingUpdate": {"rollingUpdateType": "Standard", "maxUnavailable": 1}},
        "revisionHistoryLimit": 10,
    });
    if api_version.ends_with("v1beta1") {
        spec["scaleStrategy"] = json!({});
    }
    let ds = json!({"apiVersion": api_version, "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "infra", "uid": "u-agent", "generation": 1, "resourceVersion": "5"},
        "spec": spec});
    let node = |name: &str, taints: Value| {
        json!({"apiVersion": "v1", "kind": "Node",
               "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
               "spec": {"taints": taints},
               "status": {"conditions": [{"type": "Ready", "status": "True"}]}})
    };
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "agent-x1", "namespace": "infra", "uid": "p1", "resourceVersion": "7",
            "labels": {"app": "agent"},
            "ownerReferences": [{"apiVersion": "apps.kruise.io/v1beta1", "kind": "DaemonSet", "name": "agent",
                                 "uid": "u-agent", "controller": true, "blockOwnerDeletion": true}]},
        "spec": {"nodeName": "n-a", "containers": [{"name": "main", "image": "busybox:1.36"}],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n-a"]}]}]}}}},
        "status": {"phase": "Running", "conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": "2024-05-01T11:00:00Z"}]}});
    let mut items = vec![ds, pod];
    if with_nodes {
        items.push(node("n-a", json!([])));
        items.push(node("n-b", json!([])));
        items.push(node("n-c", json!([{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}])));
    }
    snapshot_file(dir, items)
}

/// Issue 33 item 5: `kruise plan` for an Advanced DaemonSet: the revision the template needs, one
/// pod created on n-b (bound to it by node affinity), none on the tainted n-c, nothing for n-a's
/// pod (its template is the set's); the same from a v1alpha1 object (converted as the apiserver
/// converts it) and in text.
#[test]
fn a_daemonset_plan_creates_pods_on_eligible_nodes_only() {
    let dir = tempfile::tempdir().unwrap();
    for api_version in ["apps.kruise.io/v1beta1", "apps.kruise.io/v1alpha1"] {
        let path = daemonset_snapshot(&dir, api_version, true);
        let o = kruise(&["plan", "-f", &path, "--now", NOW, "-o", "json"]);
        assert!(o.status.success(), "{}", stderr(&o));
        let got: Value = serde_json::from_str(&stdout(&o)).unwrap();
        assert_eq!(got["daemonSet"], "infra/agent");
        assert_eq!(got["nodes"], 3);
        let hash = got["updateRevision"].as_str().unwrap().to_string();
        assert!(!hash.is_empty(), "{got:#}");
        let actions = got["actions"].as_array().unwrap();
        let kinds: Vec<&str> = actions.iter().map(|a| a["action"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["createRevision", "create"], "{api_version}: {got:#}");
        assert_eq!(actions[0]["revision"], format!("agent-{hash}"));
        assert_eq!(actions[1]["revision"], hash);
        assert!(actions[1]["pod"].as_str().unwrap().starts_with("agent-"), "{got:#}");
        assert_eq!(actions[1]["reason"], "node n-b should run a daemon pod and has none");
        assert_eq!(got["errors"], json!([]));
        assert_eq!(got["status"]["desiredNumberScheduled"], 2, "n-c's taint is not tolerated: {got:#}");
        assert_eq!(got["statusWrite"], true);
    }
    let path = daemonset_snapshot(&dir, "apps.kruise.io/v1beta1", true);
    let o = kruise(&["plan", "-f", &path, "--now", NOW]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("DaemonSet infra/agent: update revision ") && lines[0].ends_with(", 3 nodes in the input"),
        "{text}"
    );
    assert!(lines[1].starts_with("  nodes: 2 desired"), "{text}");
    assert!(text.contains("node n-b should run a daemon pod and has none"), "{text}");
    assert!(!text.contains("n-c"), "{text}");
}

/// Without nodes, no plan says anything true about a DaemonSet's pods: it says so, and deletes
/// nothing.
#[test]
fn a_daemonset_without_nodes_is_not_planned() {
    let dir = tempfile::tempdir().unwrap();
    let path = daemonset_snapshot(&dir, "apps.kruise.io/v1beta1", false);
    let o = kruise(&["plan", "-f", &path, "--now", NOW, "-o", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let got: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(got["actions"], json!([]));
    assert!(got["errors"][0].as_str().unwrap().starts_with("no Node in the input"), "{got:#}");
    let o = kruise(&["plan", "daemonset"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("`daemonset NAME`"), "{}", stderr(&o));
}

/// With gate PreDownloadImageForDaemonSetUpdate the Advanced DaemonSet's plan shows the
/// ImagePullJob its rollout would create (kruise's `daemonset_predownload_image.go`: one per
/// changed container, `<update revision>-<container>`, owned by the v1beta1 DaemonSet); the
/// CloneSet's gate alone does not, and without the gate there is no `preDownload` key.
#[test]
fn a_daemonset_plan_shows_the_pre_download_job() {
    use kruise::apis::daemonset::v1beta1::DaemonSet;
    use kruise::core::rollout::daemonset::revision::construct_history;
    let set = |image: &str| {
        json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "DaemonSet",
            "metadata": {"name": "agent", "namespace": "infra", "uid": "u-agent", "generation": 2, "resourceVersion": "5",
                "annotations": {"apps.kruise.io/image-predownload-parallelism": "3"}},
            "spec": {"selector": {"matchLabels": {"app": "agent"}},
                "template": {"metadata": {"labels": {"app": "agent"}},
                             "spec": {"containers": [{"name": "main", "image": image}]}},
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate":
                    {"rollingUpdateType": "InPlaceIfPossible", "maxUnavailable": 1, "partition": 1}},
                "revisionHistoryLimit": 10, "scaleStrategy": {}},
            "status": {"desiredNumberScheduled": 3, "currentNumberScheduled": 3, "numberMisscheduled": 0,
                "numberReady": 3, "updatedNumberScheduled": 3, "observedGeneration": 1, "updateRevision": "old"}})
    };
    let revision = |image: &str, number: i64| {
        let ds: DaemonSet = serde_json::from_value(set(image)).unwrap();
        let mut r = construct_history(&ds, &[], &[]).current;
        r.revision = number;
        r.metadata.resource_version = Some(number.to_string());
        serde_json::to_value(&r).unwrap()
    };
    let (old, new) = (revision("busybox:1.35", 1), revision("busybox:1.36", 2));
    let new_name = new["metadata"]["name"].as_str().unwrap().to_string();
    let node = |name: &str| {
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
               "status": {"conditions": [{"type": "Ready", "status": "True"}]}})
    };
    let dir = tempfile::tempdir().unwrap();
    let path = snapshot_file(&dir, vec![set("busybox:1.36"), old, new, node("n-a"), node("n-b"), node("n-c")]);
    let plan = |gates: &str| {
        let o = kruise(&["plan", "-f", &path, "--now", NOW, "-o", "json", "--feature-gates", gates]);
        assert!(o.status.success(), "{}", stderr(&o));
        serde_json::from_str::<Value>(&stdout(&o)).unwrap()
    };
    let got = plan("PreDownloadImageForDaemonSetUpdate=true");
    let pd = &got["preDownload"];
    assert_eq!(pd["jobs"].as_array().map(Vec::len), Some(1), "{got:#}");
    let job = &pd["jobs"][0];
    assert_eq!(job["metadata"]["name"], format!("{new_name}-main"));
    assert_eq!(job["spec"]["image"], "busybox:1.36");
    assert_eq!(job["spec"]["parallelism"], 3);
    assert_eq!(job["metadata"]["ownerReferences"][0]["kind"], "DaemonSet");
    assert_eq!(job["metadata"]["ownerReferences"][0]["apiVersion"], "apps.kruise.io/v1beta1");
    let actions: Vec<&str> = pd["actions"].as_array().unwrap().iter().map(|a| a["action"].as_str().unwrap()).collect();
    assert_eq!(actions, ["createImagePullJob", "markPreDownload"]);
    assert!(plan("PreDownloadImageForInPlaceUpdate=true").get("preDownload").is_none());
    assert!(plan("PreDownloadImageForDaemonSetUpdate=false").get("preDownload").is_none());
    let o = kruise(&["plan", "-f", &path, "--now", NOW, "--feature-gates", "PreDownloadImageForDaemonSetUpdate=true"]);
    let text = stdout(&o);
    assert!(
        text.contains(&format!("    ImagePullJob {new_name}-main: image busybox:1.36, parallelism 3, timeout 300s")),
        "{text}"
    );
}

/// A UnitedDeployment of 4 under `reserveUnschedulablePods` (zone-a at most 2, zone-b the rest)
/// whose zone-a pods have been pending unschedulable for a minute: its round labels them reserved
/// and the zone-b pods not, gives zone-b all 4 and counts 2 replicas and 2 reserved pods. The
/// template and revision are the Go fixture's ("cloneset minimal": `web-775ccf8795`, computed by
/// kruise v1.9.0's code), so the revision in the input is used as it is and no note says it
/// differs from the status's.
#[test]
fn a_united_deployment_plan_shows_the_reservation_round() {
    const REVISION: &str = "web-775ccf8795";
    let fixtures: Vec<Value> = serde_json::from_str(
        &std::fs::read_to_string(format!("{}/src/core/uniteddeployment/go_fixtures.json", env!("CARGO_MANIFEST_DIR")))
            .unwrap(),
    )
    .unwrap();
    let fixture = fixtures.iter().find(|f| f["case"] == "cloneset minimal").unwrap();
    assert_eq!(fixture["name"], REVISION);
    let owner = |kind: &str, name: &str, uid: &str| {
        json!([{"apiVersion": "apps.kruise.io/v1alpha1", "kind": kind, "name": name, "uid": uid,
                "controller": true, "blockOwnerDeletion": true}])
    };
    let ud = json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "UnitedDeployment",
        "metadata": {"name": "web", "namespace": "shop", "uid": "ud-uid", "generation": 1},
        "spec": {"replicas": 4, "selector": {"matchLabels": {"app": "web"}}, "template": fixture["template"],
            "topology": {
                "scheduleStrategy": {"type": "Adaptive", "adaptive": {
                    "rescheduleCriticalSeconds": 10, "unschedulableDuration": 30, "reserveUnschedulablePods": true}},
                "subsets": [{"name": "zone-a", "maxReplicas": 2}, {"name": "zone-b"}]}},
        "status": {"observedGeneration": 1, "currentRevision": REVISION, "replicas": 4,
            "updateStatus": {"updatedRevision": REVISION}}});
    let revision = json!({"apiVersion": "apps/v1", "kind": "ControllerRevision",
        "metadata": {"name": REVISION, "namespace": "shop", "labels": {"controller-revision-hash": REVISION},
                     "ownerReferences": owner("UnitedDeployment", "web", "ud-uid")},
        "data": serde_json::from_str::<Value>(fixture["data"].as_str().unwrap()).unwrap(), "revision": 1});
    let cloneset = |subset: &str, ready: i32| {
        json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
            "metadata": {"name": format!("web-{subset}-x"), "namespace": "shop", "uid": format!("{subset}-uid"),
                "creationTimestamp": "2024-05-01T11:00:00Z", "generation": 1,
                "labels": {"app": "web", "apps.kruise.io/subset-name": subset, "apps.kruise.io/controller-revision-hash": REVISION},
                "annotations": {"apps.kruise.io/subset-patch": ""},
                "ownerReferences": owner("UnitedDeployment", "web", "ud-uid")},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web", "apps.kruise.io/subset-name": subset}},
                "template": {"metadata": {"labels": {"app": "web", "apps.kruise.io/subset-name": subset}},
                    "spec": {"containers": [{"name": "main", "image": "nginx:alpine"}]}},
                "updateStrategy": {"partition": 0}},
            "status": {"observedGeneration": 1, "replicas": 2, "readyReplicas": ready, "updatedReplicas": 2}})
    };
    let pod = |subset: &str, i: usize, pending: bool| {
        let status = if pending {
            json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]})
        } else {
            json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2024-05-01T11:00:00Z"}]})
        };
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("web-{subset}-{i}"), "namespace": "shop", "uid": format!("{subset}-{i}"),
                "creationTimestamp": "2024-05-01T11:59:00Z",
                "labels": {"app": "web", "apps.kruise.io/subset-name": subset, "apps.kruise.io/controller-revision-hash": REVISION},
                "ownerReferences": owner("CloneSet", &format!("web-{subset}-x"), &format!("{subset}-uid"))},
            "spec": {"containers": [{"name": "main", "image": "nginx:alpine"}]},
            "status": status})
    };
    let dir = tempfile::tempdir().unwrap();
    let path = snapshot_file(
        &dir,
        vec![
            ud,
            revision,
            cloneset("zone-a", 0),
            cloneset("zone-b", 2),
            pod("zone-a", 1, true),
            pod("zone-a", 2, true),
            pod("zone-b", 1, false),
            pod("zone-b", 2, false),
        ],
    );
    let o = kruise(&["plan", "-f", &path, "--now", NOW]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let start = text.find("UnitedDeployment shop/web").unwrap_or_else(|| panic!("{text}"));
    let lines: Vec<&str> = text[start..].lines().collect();
    assert_eq!(
        lines,
        [
            "UnitedDeployment shop/web: update revision web-775ccf8795, current revision web-775ccf8795",
            "  subsets: zone-a 2, zone-b 4",
            "  label pod web-zone-a-1 of subset zone-a reserved=true",
            "  label pod web-zone-a-2 of subset zone-a reserved=true",
            "  label pod web-zone-b-1 of subset zone-b reserved=false",
            "  label pod web-zone-b-2 of subset zone-b reserved=false",
            "  update the CloneSet web-zone-b-x of subset zone-b (4 replicas, revision web-775ccf8795)",
            "  status: 2 replicas (2 reserved), 2 ready, 4 updated (2 ready); written",
            "  looked at again in 30s (adaptive scheduling)",
        ],
        "{text}"
    );
    let o = kruise(&["plan", "-f", &path, "--now", NOW, "-o", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    // One JSON object per workload: the CloneSets' first, then the UnitedDeployment's.
    let got = serde_json::Deserializer::from_str(&out)
        .into_iter::<Value>()
        .map(Result::unwrap)
        .find(|v| v.get("unitedDeployment").is_some())
        .unwrap_or_else(|| panic!("{out}"));
    assert_eq!(got["unitedDeployment"], "shop/web");
    assert_eq!(got["revisionWrite"], Value::Null);
    assert_eq!(got["subsetReplicas"], json!({"zone-a": 2, "zone-b": 4}));
    assert_eq!(got["status"]["labelSelector"], "app=web,apps.kruise.io/united-deployment-reserved-pod=false");
    assert_eq!(got["status"]["reservedPods"], 2);
    assert_eq!(got["notes"], json!([]));

    // A status naming another update revision for this generation gets a note.
    let mut snapshot: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    snapshot["items"][0]["status"]["updateStatus"]["updatedRevision"] = json!("web-5d8f7b9c4");
    std::fs::write(&path, snapshot.to_string()).unwrap();
    let o = kruise(&["plan", "-f", &path, "--now", NOW]);
    let text = stdout(&o);
    assert!(
        text.contains(
            "  note: the status names update revision web-5d8f7b9c4 for this generation: a revision computed \
             differently (after a switch from Go kruise, every subset would be rewritten)"
        ),
        "{text}"
    );
}
