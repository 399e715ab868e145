//! `kruise serve` in a cluster (issue 10), end to end on the real control plane: started as a
//! user starts it (a kubeconfig — here the token of deploy/'s ServiceAccount, so deploy/'s RBAC is
//! what it has — no `--standalone`, certificates managed), reached by the apiserver through its
//! Service.
//! One test in its own binary (its own control plane): it registers cluster-wide webhooks and
//! runs its steps in order — readiness before the CRDs exist, a fresh install (the leader creates
//! the Secret and publishes caBundle), the live view feeding injection and
//! SidecarSet conflicts, an undecodable SidecarSet skipped, leader election with two replicas
//! under a steady stream of admission requests (SIGTERM: the lease is released), the new leader's
//! CloneSet controller, and a leader killed with SIGKILL replaced once its lease expires.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod e2e_common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use e2e_common::{
    ELECTION, Kruise, Kubectl, NAMESPACE, cluster, eventually, eventually_ok, manager_kubeconfig, publish, root,
};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

/// The value of a metric line `name{labels} value` in `/metrics` of `kruise`.
async fn metric(kruise: &Kruise, line_start: &str) -> Option<f64> {
    let (code, body) = kruise.admin_get("/metrics").await;
    if code != 200 {
        return None;
    }
    body.lines().find(|l| l.starts_with(line_start)).and_then(|l| l.rsplit(' ').next()).and_then(|v| v.parse().ok())
}

fn leading(kruise: &Kruise) -> impl std::future::Future<Output = Option<f64>> + '_ {
    metric(kruise, "leader_election_master_status{name=\"kruise-manager\"}")
}

fn sidecarset(name: &str, app: &str, container: &str) -> String {
    format!(
        "apiVersion: apps.kruise.io/v1alpha1\nkind: SidecarSet\nmetadata:\n  name: {name}\nspec:\n  selector:\n    \
         matchLabels:\n      app: {app}\n  containers:\n  - name: {container}\n    image: busybox:1.36\n    \
         command: [sleep, '3600']\n"
    )
}

fn pod(name: &str, app: &str) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": app}},
        "spec": {"containers": [{"name": "main", "image": "nginx:1.27"}]}
    }))
    .unwrap()
}

fn container_names(pod: &Pod) -> Vec<String> {
    pod.spec.as_ref().map(|s| s.containers.iter().map(|c| c.name.clone()).collect()).unwrap_or_default()
}

/// A pod created with server dry run: what admission makes of it, nothing stored.
async fn dry_run_create(pods: &Api<Pod>, pod: &Pod) -> Result<Pod, kube::Error> {
    pods.create(&PostParams { dry_run: true, field_manager: None }, pod).await
}

fn base64_decode(text: &str) -> Vec<u8> {
    let bytes: k8s_openapi::ByteString = serde_json::from_value(json!(text)).unwrap();
    bytes.0
}

/// Stores SidecarSet `broken` (selecting `app: api`) whose `spec.containers` is a string, as a
/// CRD of another version could have let it in: the CRD's schema is loosened for the write and
/// restored after (before the webhooks are registered, which would refuse it).
async fn store_undecodable_sidecarset(admin: &kube::Client) {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let crds: Api<CustomResourceDefinition> = Api::all(admin.clone());
    let name = "sidecarsets.apps.kruise.io";
    // Both versions stay (v1beta1, the storage version, is in `status.storedVersions`); the object
    // is written in the storage version, so no conversion is needed to store it.
    let loose_version = |name: &str, storage: bool| {
        json!({
            "name": name, "served": true, "storage": storage, "subresources": {"status": {}},
            "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
        })
    };
    let loose = json!({"spec": {"versions": [loose_version("v1alpha1", false), loose_version("v1beta1", true)]}});
    crds.patch(name, &PatchParams::default(), &Patch::Merge(&loose)).await.unwrap();
    let sets: Api<kube::api::DynamicObject> = Api::all_with(
        admin.clone(),
        &kube::api::ApiResource::erase::<kruise::apis::sidecarset::v1beta1::SidecarSet>(&()),
    );
    let broken: kube::api::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet",
        "metadata": {"name": "broken"},
        "spec": {"selector": {"matchLabels": {"app": "api"}}, "containers": "oops"}
    }))
    .unwrap();
    eventually("the loose schema to take effect", Duration::from_secs(20), || async {
        match sets.create(&PostParams::default(), &broken).await {
            Ok(_) => Some(()),
            Err(kube::Error::Api(s)) if s.code == 409 => Some(()),
            Err(_) => None,
        }
    })
    .await;
    let kubectl = Kubectl::new();
    let crd = root().join("deploy/crds/apps.kruise.io_sidecarsets.yaml");
    let (ok, out, err) =
        kubectl.run(&["apply", "--server-side", "--force-conflicts", "-f", crd.to_str().unwrap()]).await;
    assert!(ok, "{out}{err}");
    let restored = crds.get(name).await.unwrap();
    let schema = serde_json::to_value(&restored.spec.versions[0].schema).unwrap();
    assert!(schema["openAPIV3Schema"]["properties"]["spec"].is_object(), "schema restored");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_view_readiness_injection_and_leader_election() {
    let c = cluster();
    let admin = c.client().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = manager_kubeconfig(dir.path()).await;
    let a = Kruise::managed(&kubeconfig, &[&ELECTION[..], &["--leader-identity", "replica-a"]].concat(), "warn");

    // Before the CRDs exist the SidecarSet watch cannot list: /readyz says so.
    let why = eventually("/readyz to name the missing list", Duration::from_secs(20), || async {
        let (code, body) = a.admin_get("/readyz").await;
        (code == 503 && body.contains("SidecarSet")).then_some(body)
    })
    .await;
    assert!(why.contains("caches"), "{why}");

    // Install as deploy/ does: CRDs, Service endpoints, and the webhook configurations without
    // caBundle. The leader creates the certificate Secret and publishes caBundle.
    e2e_common::install(&[&a]).await;
    store_undecodable_sidecarset(&admin).await;
    c.apply_path(root().join("webhook-config")).await.unwrap();
    eventually("/readyz ok: view synced, certificate served, self-check passed", Duration::from_secs(60), || async {
        (a.admin_get("/readyz").await.0 == 200).then_some(())
    })
    .await;
    let kubectl = Kubectl::new();
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(admin.clone(), NAMESPACE);
    let secret = secrets.get("kruise-webhook-certs").await.expect("the leader created the Secret");
    let data = secret.data.unwrap_or_default();
    for key in ["ca-cert.pem", "ca-key.pem", "cert.pem", "key.pem"] {
        assert!(data.contains_key(key), "kruise's key {key} in the Secret: {:?}", data.keys().collect::<Vec<_>>());
    }
    let ca = data["ca-cert.pem"].0.clone();
    let configs: Api<kube::api::DynamicObject> = Api::all_with(
        admin.clone(),
        &kube::api::ApiResource::erase::<k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration>(&()),
    );
    let bundles = eventually("caBundle in every webhook", Duration::from_secs(30), || async {
        let mutating = configs.get("kruise-mutating-webhook-configuration").await.ok()?;
        let bundles: Vec<String> = mutating.data["webhooks"]
            .as_array()?
            .iter()
            .map(|w| w["clientConfig"]["caBundle"].as_str().unwrap_or_default().to_string())
            .collect();
        (!bundles.is_empty() && bundles.iter().all(|b| !b.is_empty())).then_some(bundles)
    })
    .await;
    let bundle = base64_decode(&bundles[0]);
    assert!(String::from_utf8_lossy(&bundle).contains(String::from_utf8_lossy(&ca).trim()), "caBundle trusts the CA");
    // The apiserver reads webhook configurations through an informer: wait until its calls verify
    // (a server-side dry run of a SidecarSet passes both SidecarSet webhooks).
    let probe = kubectl.dir().join("probe.yaml");
    std::fs::write(&probe, sidecarset("probe", "nothing", "probe")).unwrap();
    eventually_ok("the apiserver to trust the published caBundle", Duration::from_secs(30), || async {
        let (ok, out, err) = kubectl.run(&["apply", "--dry-run=server", "-f", probe.to_str().unwrap()]).await;
        if ok { Ok(()) } else { Err(format!("{out}{err}")) }
    })
    .await;

    // A SidecarSet applied with kubectl reaches the live view; a pod created with kubectl in a
    // matched namespace gets its sidecar.
    let ns = c.namespace("e2e-incluster").await.unwrap();
    let first = kubectl.dir().join("first.yaml");
    std::fs::write(&first, sidecarset("first", "web", "logger")).unwrap();
    let (ok, out, err) = kubectl.run(&["apply", "-f", first.to_str().unwrap()]).await;
    assert!(ok, "{out}{err}");
    let pods: Api<Pod> = Api::namespaced(admin.clone(), ns.name());
    eventually("the SidecarSet to inject", Duration::from_secs(10), || async {
        let answer = dry_run_create(&pods, &pod("probe", "web")).await.ok()?;
        container_names(&answer).contains(&"logger".to_string()).then_some(())
    })
    .await;
    let manifest = kubectl.dir().join("pod.yaml");
    std::fs::write(&manifest, serde_json::to_string(&pod("web-1", "web")).unwrap()).unwrap();
    let (ok, out, err) = kubectl.run(&["-n", ns.name(), "create", "-f", manifest.to_str().unwrap()]).await;
    assert!(ok, "{out}{err}");
    let stored = pods.get("web-1").await.unwrap();
    assert_eq!(container_names(&stored), ["logger", "main"].map(String::from), "sidecar injected before main");
    let annotations = stored.metadata.annotations.clone().unwrap_or_default();
    assert!(annotations.get("kruise.io/sidecarset-hash").is_some_and(|h| h.contains("first")), "{annotations:?}");

    // A SidecarSet whose container name another set already injects into the same pods is denied.
    let clash = kubectl.dir().join("clash.yaml");
    std::fs::write(&clash, sidecarset("clash", "web", "logger")).unwrap();
    let (ok, _, err) = kubectl.run(&["apply", "-f", clash.to_str().unwrap()]).await;
    assert!(!ok, "the conflicting SidecarSet must be denied");
    assert!(err.contains("container logger already exist in first"), "{err}");

    eventually("the decode failure to be counted", Duration::from_secs(10), || async {
        metric(&a, "kruise_cluster_view_decode_failures_total{kind=\"SidecarSet\"}").await.filter(|v| *v >= 1.0)
    })
    .await;
    let skipped = dry_run_create(&pods, &pod("probe", "api")).await.unwrap();
    assert_eq!(container_names(&skipped), ["main"], "the undecodable set is not acted on");
    let still = dry_run_create(&pods, &pod("probe", "web")).await.unwrap();
    assert!(container_names(&still).contains(&"logger".to_string()), "the other sets still inject");

    // A pod admitted without the webhook (here another writer's objectSelector lets it bypass the
    // pod webhook, as failurePolicy Ignore would while no replica answers) is reported by the
    // leader: a Warning Event on the pod and a metric.
    let mutating_api: Api<k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration> =
        Api::all(admin.clone());
    let bypass = |on: bool| {
        let selector = if on {
            json!({"matchExpressions": [{"key": "e2e-bypass", "operator": "DoesNotExist"}]})
        } else {
            json!(null)
        };
        json!({"webhooks": [{"name": "mpod.kb.io", "objectSelector": selector}]})
    };
    let ssa = PatchParams::apply("e2e-other-writer").force();
    let patch = |on: bool| {
        let mut p = bypass(on);
        p["apiVersion"] = json!("admissionregistration.k8s.io/v1");
        p["kind"] = json!("MutatingWebhookConfiguration");
        p
    };
    mutating_api.patch("kruise-mutating-webhook-configuration", &ssa, &Patch::Apply(&patch(true))).await.unwrap();
    tokio::time::sleep(Duration::from_secs(6)).await; // the set is older than the grace period
    let mut unseen = pod("bypassed", "web");
    unseen.metadata.labels.as_mut().unwrap().insert("e2e-bypass".into(), "yes".into());
    let created = eventually("the pod to bypass the webhook", Duration::from_secs(10), || async {
        let p = dry_run_create(&pods, &unseen).await.ok()?;
        (container_names(&p) == ["main"]).then_some(())
    });
    created.await;
    pods.create(&PostParams::default(), &unseen).await.unwrap();
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(admin.clone(), ns.name());
    let note = eventually("the Event on the pod", Duration::from_secs(20), || async {
        let list = events.list(&Default::default()).await.ok()?;
        list.items.into_iter().find_map(|e| {
            let about = e.regarding.as_ref().and_then(|r| r.name.clone());
            (e.reason.as_deref() == Some("SidecarSetNotInjected") && about.as_deref() == Some("bypassed"))
                .then_some(e.note)
        })
    })
    .await;
    assert!(note.unwrap_or_default().contains("SidecarSet first"), "the Event names the set");
    assert_eq!(
        metric(&a, "kruise_sidecarset_uninjected_pods_total").await,
        Some(1.0),
        "web-1 (injected) is not counted"
    );
    // The other writer takes its selector away again.
    let clear = PatchParams::apply("e2e-other-writer").force();
    let minimal = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration"});
    mutating_api.patch("kruise-mutating-webhook-configuration", &clear, &Patch::Apply(&minimal)).await.unwrap();

    // Two replicas elect one leader.
    let b = Kruise::managed(&kubeconfig, &[&ELECTION[..], &["--leader-identity", "replica-b"]].concat(), "warn");
    eventually("b ready", Duration::from_secs(30), || async { (b.admin_get("/readyz").await.0 == 200).then_some(()) })
        .await;
    publish(&[&a, &b]).await;
    let leases: Api<Lease> = Api::namespaced(admin.clone(), NAMESPACE);
    let holder = |l: Lease| l.spec.and_then(|s| s.holder_identity).unwrap_or_default();
    assert_eq!(holder(leases.get("kruise-manager").await.unwrap()), "replica-a", "a started first");
    assert_eq!(leading(&a).await, Some(1.0));
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(leading(&b).await, Some(0.0), "one leader only");

    // A steady stream of admission requests (the apiserver calling the webhooks) while the leader
    // is terminated as the kubelet terminates a pod: SIGTERM, /readyz false, endpoints updated.
    let stop = Arc::new(AtomicBool::new(false));
    let (sent, failed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let stream = {
        let (pods, stop, sent, failed) = (pods.clone(), Arc::clone(&stop), Arc::clone(&sent), Arc::clone(&failed));
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                sent.fetch_add(1, Ordering::Relaxed);
                match dry_run_create(&pods, &pod("stream", "web")).await {
                    Ok(p) if container_names(&p).contains(&"logger".to_string()) => {}
                    Ok(p) => {
                        eprintln!("not injected: {:?}", container_names(&p));
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => {
                        eprintln!("admission failed: {e}");
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };
    tokio::time::sleep(Duration::from_secs(1)).await;
    let mut a = a;
    let terminated = Instant::now();
    a.terminate();
    eventually("a not ready after SIGTERM", Duration::from_secs(5), || async {
        (a.admin_get("/readyz").await.0 != 200).then_some(())
    })
    .await;
    publish(&[&b]).await;
    eventually("b to lead", Duration::from_secs(10), || async { (leading(&b).await == Some(1.0)).then_some(()) }).await;
    let handover = terminated.elapsed();
    assert_eq!(holder(leases.get("kruise-manager").await.unwrap()), "replica-b");
    assert!(a.wait(Duration::from_secs(30)).is_some_and(|s| s.success()), "a exits cleanly after its drain");
    tokio::time::sleep(Duration::from_secs(1)).await;
    stop.store(true, Ordering::Relaxed);
    stream.await.unwrap();
    let (sent, failed) = (sent.load(Ordering::Relaxed), failed.load(Ordering::Relaxed));
    eprintln!("leader handover after SIGTERM: {handover:?}; admission requests: {sent} sent, {failed} failed");
    assert!(sent > 20, "the stream ran ({sent} requests)");
    assert_eq!(failed, 0, "admission never stopped");
    // The released lease is taken at the next retry, well within the lease duration.
    assert!(handover < Duration::from_secs(4), "handover took {handover:?}");

    // The new leader runs the CloneSet controller with deploy/'s RBAC: a CloneSet applied with
    // kubectl gets its pods (through the pod webhook: with their sidecar), and its status follows.
    let cloneset = kubectl.dir().join("cloneset.yaml");
    std::fs::write(
        &cloneset,
        format!(
            "apiVersion: apps.kruise.io/v1alpha1\nkind: CloneSet\nmetadata:\n  name: web\n  namespace: {ns}\nspec:\n  \
             replicas: 2\n  selector:\n    matchLabels:\n      clone: web\n  template:\n    metadata:\n      labels:\n        \
             app: web\n        clone: web\n    spec:\n      containers:\n      - name: main\n        image: nginx:1.27\n",
            ns = ns.name()
        ),
    )
    .unwrap();
    let (ok, out, err) = kubectl.run(&["apply", "-f", cloneset.to_str().unwrap()]).await;
    assert!(ok, "{out}{err}");
    let clonesets: Api<kruise::apis::CloneSet> = Api::namespaced(admin.clone(), ns.name());
    // The pod webhook gives them the `KruisePodReady` readiness gate; the leader's pod-readiness
    // task sets the condition, so they turn Ready.
    eventually("the CloneSet's 2 pods ready", Duration::from_secs(60), || async {
        let cs = clonesets.get("web").await.ok()?;
        let st = cs.status.as_ref()?;
        (st.replicas == 2 && st.updated_replicas == 2 && st.ready_replicas == 2).then_some(())
    })
    .await;
    let owned: Vec<Pod> = pods
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|p| p.metadata.owner_references.iter().flatten().any(|o| o.kind == "CloneSet" && o.name == "web"))
        .collect();
    assert_eq!(owned.len(), 2);
    assert!(owned.iter().all(|p| container_names(p).contains(&"logger".to_string())), "the set injects CloneSet pods");
    // The leader's controller metrics: each pod created once, the work queue fed by the watches.
    let labels = "{controller=\"cloneset\",name=\"cloneset\"}";
    assert_eq!(
        metric(&b, "kruise_controller_api_writes_total{controller=\"cloneset\",write=\"create_pod\"}").await,
        Some(2.0)
    );
    assert!(metric(&b, &format!("workqueue_adds_total{labels}")).await.is_some_and(|v| v >= 1.0));
    assert!(metric(&b, &format!("workqueue_depth{labels}")).await.is_some(), "workqueue_depth is exposed");
    assert!(metric(&b, &format!("workqueue_queue_duration_seconds_count{labels}")).await.is_some_and(|v| v >= 1.0));
    // One pod watch on the leader for every controller and leader task (the CloneSet controller,
    // pod readiness, the fail-open check): the shared informers (issue 26).
    for kind in ["Pod", "PersistentVolumeClaim", "ControllerRevision", "Node"] {
        assert_eq!(metric(&b, &format!("kruise_informer_watches{{kind=\"{kind}\"}}")).await, Some(1.0), "{kind}");
    }
    // One CloneSet watch too, shared by the CloneSet and UnitedDeployment controllers.
    assert_eq!(metric(&b, "kruise_informer_watches{kind=\"CloneSet\"}").await, Some(1.0), "CloneSet");
    assert!(metric(&b, "kruise_informer_objects{kind=\"Pod\"}").await.is_some_and(|v| v >= 2.0));

    // A leader that crashes (SIGKILL: no drain, its lease not released) is replaced once the
    // lease expires, and the new leader's controller carries on from the cluster's state.
    let c = Kruise::managed(&kubeconfig, &[&ELECTION[..], &["--leader-identity", "replica-c"]].concat(), "warn");
    eventually("c ready", Duration::from_secs(30), || async { (c.admin_get("/readyz").await.0 == 200).then_some(()) })
        .await;
    publish(&[&b, &c]).await;
    assert_eq!(leading(&c).await, Some(0.0), "b still leads");
    let killed = Instant::now();
    drop(b); // SIGKILL
    publish(&[&c]).await;
    eventually("c to lead after b was killed", Duration::from_secs(30), || async {
        (leading(&c).await == Some(1.0)).then_some(())
    })
    .await;
    eprintln!("leader takeover after SIGKILL: {:?} (lease 4 s)", killed.elapsed());
    assert_eq!(holder(leases.get("kruise-manager").await.unwrap()), "replica-c");
    let (ok, out, err) = kubectl.run(&["scale", "clonesets.apps.kruise.io/web", "--replicas=3", "-n", ns.name()]).await;
    assert!(ok, "{out}{err}");
    eventually("the CloneSet's 3 pods ready under the new leader", Duration::from_secs(60), || async {
        let st = clonesets.get("web").await.ok()?.status?;
        (st.replicas == 3 && st.ready_replicas == 3).then_some(())
    })
    .await;
    assert_eq!(
        metric(&c, "kruise_controller_api_writes_total{controller=\"cloneset\",write=\"create_pod\"}").await,
        Some(1.0),
        "c creates the third pod only: the two b created are adopted as they are"
    );
    drop(c);
    drop(ns);
}
