//! PodUnavailableBudget end to end (issue 31 items 1–2): `kruise serve` with deploy/'s
//! ServiceAccount and the generated `webhook-config/` registered, on the real control plane with
//! the simulated kubelet. A budget of `maxUnavailable: 1` over three pods (bare pods: the test
//! cluster runs no ReplicaSet controller, so `pub.kruise.io/protect-total-replicas` says how
//! many are expected): the pod webhook names the budget on new pods, the controller counts them,
//! a server-side dry run takes nothing, the first eviction passes, the second is a 429 naming the
//! budget (what `kubectl drain` retries) while the first pod is gone, `kubectl delete pod` is
//! refused the same way, and once a replacement is ready the next eviction passes; ten evictions
//! at once against a budget of three take exactly three units; a budget on a CloneSet by
//! `targetRef` counts its replicas and pods and is paid back when the CloneSet replaces a pod;
//! `kubectl drain` of a second node is refused, retried and times out; with gate
//! PodUnavailableBudgetUpdateGate (on for the whole test) an in-place rollout of a CloneSet, then
//! of a Parallel Advanced StatefulSet, each allowed three unavailable, moves one pod at a time under
//! a budget of one. Events: each refusal leaves `PubPreventPodDeletion` on the pod. Its own test
//! binary: it registers webhooks with its own CA.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod e2e_common;

use std::time::Duration;

use e2e_common::{Kruise, Kubectl, cluster, eventually_ok, install, manager_kubeconfig, root};
use k8s_openapi::api::core::v1::Pod;
use kruise::apis::podunavailablebudget::PodUnavailableBudget;
use kube::api::{Api, EvictParams, PostParams};
use serde_json::{Value, json};

const REFUSED: &str =
    "podunavailablebudget.policy.kruise.io \"web-pub\" is forbidden: pub unavailable allowed is negative";

fn pod(name: &str) -> Pod {
    serde_json::from_value(json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}], "terminationGracePeriodSeconds": 1}}))
    .unwrap()
}

/// `(desiredAvailable, currentAvailable, unavailableAllowed, totalReplicas)` of the budget.
async fn counts(api: &Api<PodUnavailableBudget>) -> Result<(i32, i32, i32, i32), String> {
    let b = api.get("web-pub").await.map_err(|e| e.to_string())?;
    let s = b.status.unwrap_or_default();
    Ok((s.desired_available, s.current_available, s.unavailable_allowed, s.total_replicas))
}

async fn wait_counts(api: &Api<PodUnavailableBudget>, want: (i32, i32, i32, i32)) {
    eventually_ok(&format!("budget status {want:?}"), Duration::from_secs(60), || async {
        let got = counts(api).await?;
        if got == want { Ok(()) } else { Err(format!("{got:?}")) }
    })
    .await;
}

async fn wait_ready(pods: &Api<Pod>, name: &str) {
    eventually_ok(&format!("pod {name} ready"), Duration::from_secs(60), || async {
        let p = pods.get(name).await.map_err(|e| e.to_string())?;
        let ready = p
            .status
            .and_then(|s| s.conditions)
            .unwrap_or_default()
            .iter()
            .any(|c| c.type_ == "Ready" && c.status == "True");
        if ready { Ok(()) } else { Err("not ready".into()) }
    })
    .await;
}

/// The error of an eviction as the API server answers it: (code, message).
async fn evict(pods: &Api<Pod>, name: &str) -> Result<(), (u16, String)> {
    match pods.evict(name, &EvictParams::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) => Err((s.code, s.message.clone())),
        Err(e) => Err((0, e.to_string())),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_of_one_guards_evictions_and_deletes() {
    let certs = tempfile::tempdir().unwrap();
    let kubeconfig = manager_kubeconfig(certs.path()).await;
    let kruise = Kruise::start(certs.path(), &kubeconfig, &["--feature-gates=PodUnavailableBudgetUpdateGate=true"]);
    install(&[&kruise]).await;
    let ca = std::fs::read(certs.path().join("ca.crt")).unwrap();
    let c = cluster();
    let client = c.client().await.unwrap();
    kruise_testenv::register_webhooks(&client, &root().join("webhook-config"), &ca).await.unwrap();
    let ns = c.namespace("e2e-pub").await.unwrap();
    let kubectl = Kubectl::new();

    // The budget first, through the PUB webhook; an invalid one is refused with its field error.
    let budget = json!({"apiVersion": "policy.kruise.io/v1alpha1", "kind": "PodUnavailableBudget",
        "metadata": {"name": "web-pub", "namespace": ns.name(),
                     "annotations": {"pub.kruise.io/protect-total-replicas": "3"}},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 1}});
    let path = kubectl.dir().join("pub.json");
    let mut invalid = budget.clone();
    invalid["metadata"]["name"] = json!("invalid");
    invalid["spec"]["minAvailable"] = json!(1);
    std::fs::write(&path, serde_json::to_vec(&invalid).unwrap()).unwrap();
    let (ok, _, err) = kubectl.run(&["apply", "-f", path.to_str().unwrap()]).await;
    assert!(!ok, "a budget with maxUnavailable and minAvailable is invalid");
    assert!(err.contains("admission webhook \"vpodunavailablebudget.kb.io\" denied the request"), "{err}");
    assert!(err.contains("maxUnavailable and minAvailable are mutually exclusive"), "{err}");
    std::fs::write(&path, serde_json::to_vec(&budget).unwrap()).unwrap();
    // The view may not have listed budgets yet when the webhook starts answering: retry.
    eventually_ok("the budget is created", Duration::from_secs(60), || async {
        let (ok, _, err) = kubectl.run(&["apply", "-f", path.to_str().unwrap()]).await;
        if ok { Ok(()) } else { Err(err) }
    })
    .await;
    let budgets: Api<PodUnavailableBudget> = Api::namespaced(client.clone(), ns.name());

    // Three pods: the pod webhook names the budget on each.
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    for name in ["web-0", "web-1", "web-2"] {
        let created = eventually_ok(&format!("create {name}"), Duration::from_secs(30), || async {
            let p = pods.create(&PostParams::default(), &pod(name)).await.map_err(|e| e.to_string())?;
            let related = p.metadata.annotations.clone().unwrap_or_default().get("kruise.io/related-pub").cloned();
            if related.as_deref() == Some("web-pub") {
                Ok(p)
            } else {
                // Created before the view held the budget: start again.
                let _ = pods.delete(name, &Default::default()).await;
                Err(format!("{name} names {related:?}"))
            }
        })
        .await;
        assert_eq!(created.metadata.name.as_deref(), Some(name));
    }
    for name in ["web-0", "web-1", "web-2"] {
        wait_ready(&pods, name).await;
    }
    wait_counts(&budgets, (2, 3, 1, 3)).await;

    // A server-side dry run is answered as the real delete would be and takes nothing.
    let (ok, _, err) = kubectl.run(&["-n", ns.name(), "delete", "pod", "web-2", "--dry-run=server"]).await;
    assert!(ok, "{err}");
    let held = budgets.get("web-pub").await.unwrap().status.unwrap_or_default();
    assert_eq!(held.unavailable_allowed, 1);
    assert!(held.disrupted_pods.is_empty(), "{held:?}");

    // Evictions through a client that does not retry a 429 itself (kube's default client, like
    // kubectl drain, keeps retrying it for minutes: the refusal is the retryable kind).
    let kubeconfig = kube::config::Kubeconfig::read_from(c.kubeconfig()).unwrap();
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await.unwrap();
    config.default_retry = false;
    let evictions: Api<Pod> = Api::namespaced(kube::Client::try_from(config).unwrap(), ns.name());

    // The first eviction takes the unit and records the pod.
    evict(&evictions, "web-0").await.unwrap_or_else(|e| panic!("first eviction: {e:?}"));
    // The second is refused with 429 (kubectl drain retries it) while web-0 is going or gone.
    let (code, message) = evict(&evictions, "web-1").await.expect_err("second eviction must be refused");
    assert_eq!(code, 429, "{message}");
    assert!(message.contains("admission webhook \"vpodeviction.kb.io\" denied the request"), "{message}");
    assert!(message.contains(REFUSED), "{message}");
    // kubectl delete of another pod is refused the same way (403).
    let (ok, _, err) = kubectl.run(&["-n", ns.name(), "delete", "pod", "web-2", "--wait=false"]).await;
    assert!(!ok, "the delete must be refused");
    assert!(err.contains("admission webhook \"vpod.kb.io\" denied the request"), "{err}");
    assert!(err.contains(REFUSED), "{err}");
    // Each refusal leaves kruise's Warning Event on the pod.
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(client.clone(), ns.name());
    eventually_ok("PubPreventPodDeletion Events on the refused pods", Duration::from_secs(30), || async {
        let list = events.list(&Default::default()).await.map_err(|e| e.to_string())?;
        let on = |pod: &str| {
            list.items.iter().any(|e| {
                e.reason.as_deref() == Some("PubPreventPodDeletion")
                    && e.type_.as_deref() == Some("Warning")
                    && e.note.as_deref() == Some("openkruise pub prevents pod deletion")
                    && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(pod)
            })
        };
        if on("web-1") && on("web-2") { Ok(()) } else { Err(format!("{} events", list.items.len())) }
    })
    .await;

    // web-0 goes; the controller counts two available, none allowed, and forgets the record.
    eventually_ok("web-0 is gone", Duration::from_secs(60), || async {
        match pods.get_opt("web-0").await {
            Ok(None) => Ok(()),
            other => Err(format!("{:?}", other.map(|p| p.map(|p| p.metadata.deletion_timestamp)))),
        }
    })
    .await;
    wait_counts(&budgets, (2, 2, 0, 3)).await;
    eventually_ok("no disrupted pods left", Duration::from_secs(60), || async {
        let s = budgets.get("web-pub").await.map_err(|e| e.to_string())?.status.unwrap_or_default();
        if s.disrupted_pods.is_empty() { Ok(()) } else { Err(format!("{:?}", s.disrupted_pods)) }
    })
    .await;
    let (code, _) = evict(&evictions, "web-1").await.expect_err("still refused");
    assert_eq!(code, 429);

    // A replacement is ready: one unit again, and the next eviction passes.
    pods.create(&PostParams::default(), &pod("web-3")).await.unwrap();
    wait_ready(&pods, "web-3").await;
    wait_counts(&budgets, (2, 3, 1, 3)).await;
    evict(&evictions, "web-1").await.unwrap_or_else(|e| panic!("eviction after the replacement: {e:?}"));
    let status: Value = serde_json::to_value(budgets.get("web-pub").await.unwrap().status).unwrap();
    assert_eq!(status["unavailableAllowed"], 0, "{status}");

    // Ten evictions at once against a budget of three over ten pods: exactly three pass, the
    // status writes racing through the API server's resourceVersion checks.
    let mut burst = budget.clone();
    burst["metadata"]["name"] = json!("burst-pub");
    burst["metadata"]["annotations"]["pub.kruise.io/protect-total-replicas"] = json!("10");
    burst["spec"] = json!({"selector": {"matchLabels": {"app": "burst"}}, "maxUnavailable": 3});
    std::fs::write(&path, serde_json::to_vec(&burst).unwrap()).unwrap();
    let (ok, _, err) = kubectl.run(&["apply", "-f", path.to_str().unwrap()]).await;
    assert!(ok, "{err}");
    let names: Vec<String> = (0..10).map(|i| format!("burst-{i}")).collect();
    eventually_ok("the view holds burst-pub", Duration::from_secs(30), || async {
        let mut probe = pod("burst-probe");
        probe.metadata.labels = Some([("app".to_string(), "burst".to_string())].into());
        probe.spec.as_mut().unwrap().containers[0].image = Some("nginx:1.25".into());
        let p = pods
            .create(&PostParams { dry_run: true, ..Default::default() }, &probe)
            .await
            .map_err(|e| e.to_string())?;
        let related = p.metadata.annotations.unwrap_or_default().get("kruise.io/related-pub").cloned();
        if related.as_deref() == Some("burst-pub") { Ok(()) } else { Err(format!("{related:?}")) }
    })
    .await;
    for name in &names {
        let mut p = pod(name);
        p.metadata.labels = Some([("app".to_string(), "burst".to_string())].into());
        pods.create(&PostParams::default(), &p).await.unwrap();
    }
    for name in &names {
        wait_ready(&pods, name).await;
    }
    eventually_ok("burst-pub counts ten", Duration::from_secs(60), || async {
        let s = budgets.get("burst-pub").await.map_err(|e| e.to_string())?.status.unwrap_or_default();
        let got = (s.desired_available, s.current_available, s.unavailable_allowed, s.total_replicas);
        if got == (7, 10, 3, 10) { Ok(()) } else { Err(format!("{got:?}")) }
    })
    .await;
    let answers = futures::future::join_all(names.iter().map(|n| evict(&evictions, n))).await;
    let passed = answers.iter().filter(|a| a.is_ok()).count();
    let refused = answers.iter().filter(|a| matches!(a, Err((429, _)))).count();
    assert_eq!((passed, refused), (3, 7), "{answers:?}");
    let s = budgets.get("burst-pub").await.unwrap().status.unwrap_or_default();
    assert_eq!(s.unavailable_allowed, 0, "{s:?}");

    // A budget on a CloneSet by targetRef: the controller finds the CloneSet and its replicas,
    // the pods its controller creates name the budget, and an eviction it replaces is paid back.
    let mut by_ref = budget.clone();
    by_ref["metadata"]["name"] = json!("cs-pub");
    by_ref["metadata"]["annotations"] = json!({});
    by_ref["spec"] = json!({"targetRef": {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "cs"},
                            "maxUnavailable": 1});
    std::fs::write(&path, serde_json::to_vec(&by_ref).unwrap()).unwrap();
    let (ok, _, err) = kubectl.run(&["apply", "-f", path.to_str().unwrap()]).await;
    assert!(ok, "{err}");
    tokio::time::sleep(Duration::from_secs(2)).await;
    let cloneset = json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
        "metadata": {"name": "cs", "namespace": ns.name()},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "cs"}},
                 "template": {"metadata": {"labels": {"app": "cs"}},
                              "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}],
                                       "terminationGracePeriodSeconds": 1}}}});
    std::fs::write(&path, serde_json::to_vec(&cloneset).unwrap()).unwrap();
    let (ok, _, err) = kubectl.run(&["apply", "-f", path.to_str().unwrap()]).await;
    assert!(ok, "{err}");
    let wait_cs = |want: (i32, i32, i32, i32)| {
        let budgets = budgets.clone();
        async move {
            eventually_ok(&format!("cs-pub counts {want:?}"), Duration::from_secs(90), || async {
                let s = budgets.get("cs-pub").await.map_err(|e| e.to_string())?.status.unwrap_or_default();
                let got = (s.desired_available, s.current_available, s.unavailable_allowed, s.total_replicas);
                if got == want { Ok(()) } else { Err(format!("{got:?}")) }
            })
            .await
        }
    };
    wait_cs((2, 3, 1, 3)).await;
    let cs_pods: Vec<String> = pods
        .list(&kube::api::ListParams::default().labels("app=cs"))
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|p| {
            p.metadata.annotations.as_ref().and_then(|a| a.get("kruise.io/related-pub")).map(String::as_str)
                == Some("cs-pub")
        })
        .filter_map(|p| p.metadata.name)
        .collect();
    assert_eq!(cs_pods.len(), 3, "every CloneSet pod names cs-pub: {cs_pods:?}");
    evict(&evictions, &cs_pods[0]).await.unwrap_or_else(|e| panic!("first CloneSet eviction: {e:?}"));
    let (code, message) = evict(&evictions, &cs_pods[1]).await.expect_err("second CloneSet eviction");
    assert_eq!(code, 429, "{message}");
    assert!(message.contains("podunavailablebudget.policy.kruise.io \"cs-pub\" is forbidden"), "{message}");
    // The CloneSet replaces the evicted pod; once it is ready the unit is back.
    wait_cs((2, 3, 1, 3)).await;
    evict(&evictions, &cs_pods[1]).await.unwrap_or_else(|e| panic!("after the replacement: {e:?}"));

    // kubectl drain as a user runs it: two pods of a budget of one, on two nodes. The first drain
    // evicts; the second is refused with the budget's message, retried, and times out.
    let nodes: Vec<String> = Api::<k8s_openapi::api::core::v1::Node>::all(client.clone())
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    assert!(nodes.len() >= 2, "{nodes:?}");
    let mut drain_pub = budget.clone();
    drain_pub["metadata"]["name"] = json!("drain-pub");
    drain_pub["metadata"]["annotations"]["pub.kruise.io/protect-total-replicas"] = json!("2");
    drain_pub["spec"] = json!({"selector": {"matchLabels": {"app": "drain"}}, "maxUnavailable": 1});
    std::fs::write(&path, serde_json::to_vec(&drain_pub).unwrap()).unwrap();
    let (ok, _, err) = kubectl.run(&["apply", "-f", path.to_str().unwrap()]).await;
    assert!(ok, "{err}");
    tokio::time::sleep(Duration::from_secs(2)).await;
    for (i, node) in nodes.iter().take(2).enumerate() {
        let mut p = pod(&format!("drain-{i}"));
        p.metadata.labels = Some([("app".to_string(), "drain".to_string())].into());
        p.spec.as_mut().unwrap().node_name = Some(node.clone());
        pods.create(&PostParams::default(), &p).await.unwrap();
        wait_ready(&pods, &format!("drain-{i}")).await;
    }
    eventually_ok("drain-pub allows one", Duration::from_secs(60), || async {
        let s = budgets.get("drain-pub").await.map_err(|e| e.to_string())?.status.unwrap_or_default();
        let got = (s.desired_available, s.current_available, s.unavailable_allowed, s.total_replicas);
        if got == (1, 2, 1, 2) { Ok(()) } else { Err(format!("{got:?}")) }
    })
    .await;
    let drain = |node: String, timeout: &'static str| {
        let kubectl = &kubectl;
        async move {
            let args = ["drain", node.as_str(), "--pod-selector=app=drain", "--force", "--timeout", timeout];
            kubectl.run(&args).await
        }
    };
    let (ok, out, err) = drain(nodes[0].clone(), "60s").await;
    let _ = kubectl.run(&["uncordon", &nodes[0]]).await;
    assert!(ok, "{out}{err}");
    assert!(out.contains("evicted"), "{out}");
    let (ok, out, err) = drain(nodes[1].clone(), "8s").await;
    let _ = kubectl.run(&["uncordon", &nodes[1]]).await;
    assert!(!ok, "the second drain must not get through: {out}");
    assert!(err.contains("will retry after"), "kubectl drain retries the refusal: {err}");
    assert!(err.contains("podunavailablebudget.policy.kruise.io \"drain-pub\" is forbidden"), "{err}");
    assert!(pods.get_opt("drain-1").await.unwrap().is_some_and(|p| p.metadata.deletion_timestamp.is_none()));

    in_place_rollout_under_a_budget_of_one(&kubectl, &path, &budget, &pods, &budgets, ns.name(), "CloneSet").await;
    in_place_rollout_under_a_budget_of_one(&kubectl, &path, &budget, &pods, &budgets, ns.name(), "StatefulSet").await;
    drop(kruise);
}

/// Whether the budget counts a pod unavailable (not ready, or not running what its spec says).
fn unavailable(p: &Pod) -> bool {
    !kruise::core::budget::pod::is_ready(p) || !kruise::core::budget::pod::is_state_consistent(p, false)
}

fn image_of(p: &Pod) -> String {
    p.spec.as_ref().and_then(|s| s.containers.first()).and_then(|c| c.image.clone()).unwrap_or_default()
}

/// Gate PodUnavailableBudgetUpdateGate: a budget of `maxUnavailable: 1` on a CloneSet of three
/// whose strategy would update all three at once (`maxUnavailable: 3`). An in-place image
/// rollout takes them one by one: a pod watcher never sees two unavailable, and it completes.
async fn in_place_rollout_under_a_budget_of_one(
    kubectl: &Kubectl,
    path: &std::path::Path,
    budget: &Value,
    pods: &Api<Pod>,
    budgets: &Api<PodUnavailableBudget>,
    ns: &str,
    kind: &str,
) {
    use futures::StreamExt;
    use kube::runtime::{WatchStreamExt, watcher};
    use std::collections::BTreeMap;
    use std::sync::{Arc, Mutex};

    // The workload (`up`, or `upsts` for the Advanced StatefulSet) and its budget.
    let (name, api_version) =
        if kind == "CloneSet" { ("up", "apps.kruise.io/v1alpha1") } else { ("upsts", "apps.kruise.io/v1beta1") };
    let (budget_name, selector) = (format!("{name}-pub"), format!("app={name}"));
    let mut up_pub = budget.clone();
    up_pub["metadata"]["name"] = json!(budget_name);
    up_pub["metadata"]["annotations"] = json!({});
    up_pub["spec"] = json!({"targetRef": {"apiVersion": api_version, "kind": kind, "name": name},
                            "maxUnavailable": 1});
    std::fs::write(path, serde_json::to_vec(&up_pub).unwrap()).unwrap();
    let (ok, _, err) = kubectl.run(&["apply", "-f", path.to_str().unwrap()]).await;
    assert!(ok, "{err}");
    tokio::time::sleep(Duration::from_secs(2)).await;
    let cloneset = |image: &str| {
        let mut template = json!({"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "main", "image": image}],
                                       "terminationGracePeriodSeconds": 1}});
        if kind != "CloneSet" {
            // The Advanced StatefulSet's webhook asks for the gate itself (kruise's validation).
            template["spec"]["readinessGates"] = json!([{"conditionType": "InPlaceUpdateReady"}]);
        }
        if kind == "CloneSet" {
            json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": name, "namespace": ns},
                "spec": {"replicas": 3, "selector": {"matchLabels": {"app": name}},
                         "updateStrategy": {"type": "InPlaceIfPossible", "maxUnavailable": 3}, "template": template}})
        } else {
            json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": name, "namespace": ns},
                "spec": {"replicas": 3, "selector": {"matchLabels": {"app": name}}, "serviceName": name,
                         "podManagementPolicy": "Parallel",
                         "updateStrategy": {"type": "RollingUpdate", "rollingUpdate":
                             {"maxUnavailable": 3, "podUpdatePolicy": "InPlaceIfPossible"}},
                         "template": template}})
        }
    };
    std::fs::write(path, serde_json::to_vec(&cloneset("nginx:1.25")).unwrap()).unwrap();
    let (ok, _, err) = kubectl.run(&["apply", "-f", path.to_str().unwrap()]).await;
    assert!(ok, "{err}");
    eventually_ok(&format!("{budget_name} counts three"), Duration::from_secs(90), || async {
        let s = budgets.get(&budget_name).await.map_err(|e| e.to_string())?.status.unwrap_or_default();
        let got = (s.desired_available, s.current_available, s.unavailable_allowed, s.total_replicas);
        if got == (2, 3, 1, 3) { Ok(()) } else { Err(format!("{got:?}")) }
    })
    .await;
    let listed = pods.list(&kube::api::ListParams::default().labels(&selector)).await.unwrap().items;
    let related: Vec<Option<String>> = listed
        .iter()
        .map(|p| p.metadata.annotations.as_ref().and_then(|a| a.get("kruise.io/related-pub")).cloned())
        .collect();
    assert_eq!(related, vec![Some(budget_name.clone()); 3], "every pod names {budget_name}");

    // The watcher: the latest of each pod, and the most unavailable at once it saw.
    let seen: Arc<Mutex<(BTreeMap<String, Pod>, usize)>> = Arc::default();
    let api = pods.clone();
    let seen2 = Arc::clone(&seen);
    let labels = selector.clone();
    let watch = tokio::spawn(async move {
        let config = watcher::Config::default().labels(&labels);
        let mut events = std::pin::pin!(watcher(api, config).default_backoff());
        while let Some(ev) = events.next().await {
            let mut s = seen2.lock().unwrap();
            match ev {
                Ok(watcher::Event::Apply(p) | watcher::Event::InitApply(p)) => {
                    s.0.insert(p.metadata.name.clone().unwrap_or_default(), p);
                }
                Ok(watcher::Event::Delete(p)) => {
                    s.0.remove(p.metadata.name.as_deref().unwrap_or(""));
                }
                _ => continue,
            }
            let n = s.0.values().filter(|p| unavailable(p)).count();
            s.1 = s.1.max(n);
        }
    });
    eventually_ok("the watcher sees three available pods", Duration::from_secs(30), || async {
        let s = seen.lock().unwrap();
        let available = s.0.values().filter(|p| !unavailable(p)).count();
        if available == 3 { Ok(()) } else { Err(format!("{available} available")) }
    })
    .await;
    seen.lock().unwrap().1 = 0;

    std::fs::write(path, serde_json::to_vec(&cloneset("nginx:1.26")).unwrap()).unwrap();
    let (ok, _, err) = kubectl.run(&["apply", "-f", path.to_str().unwrap()]).await;
    assert!(ok, "{err}");
    eventually_ok(&format!("the {kind} rollout completes"), Duration::from_secs(180), || async {
        let s = seen.lock().unwrap();
        let done = s.0.values().filter(|p| image_of(p) == "nginx:1.26" && !unavailable(p)).count();
        assert!(s.1 <= 1, "the watcher saw {} pods unavailable at once", s.1);
        if done == 3 && s.0.len() == 3 { Ok(()) } else { Err(format!("{done} of {} updated and available", s.0.len())) }
    })
    .await;
    let (max_seen, uids) = {
        let s = seen.lock().unwrap();
        (s.1, s.0.values().filter_map(|p| p.metadata.uid.clone()).collect::<Vec<_>>())
    };
    watch.abort();
    assert_eq!(max_seen, 1, "{kind}: one pod at a time was unavailable (and one was)");
    let before: Vec<String> = listed.iter().filter_map(|p| p.metadata.uid.clone()).collect();
    assert!(uids.iter().all(|u| before.contains(u)), "updated in place, not recreated");
}
