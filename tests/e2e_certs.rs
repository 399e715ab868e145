//! Self-managed webhook certificates end to end on the real control plane (issue 10 item 3,
//! spec §8.4): servers started with an empty certificate store, `certs::follow` per replica and
//! `certs::lead` against the cluster, webhook configurations of their own (cluster-scoped, so this
//! binary registers them and no other test binary sees them; each test's webhooks match only its
//! own namespace) reached by the apiserver through a Service as pods are. The apiserver's calls
//! are admission requests for dry-run pod creations that go through `/mutate-pod` and
//! `/validate-pod`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::{get, post};
use base64::Engine;
use k8s_openapi::api::admissionregistration::v1::{MutatingWebhookConfiguration, ValidatingWebhookConfiguration};
use k8s_openapi::api::core::v1::{Pod, Secret, Service};
use kruise::certs::follow::{CERTIFICATE, SELF_CHECK};
use kruise::certs::issue::fingerprints;
use kruise::certs::{Mode, Settings};
use kruise::core::certs::Lifetimes;
use kruise::server::tls::CertStore;
use kruise::server::{Readiness, ServeOptions, ServerHandle};
use kruise_testenv::{Endpoint, PodAddress, TestCluster, TestNamespace, publish_endpoints};
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const SERVICE: &str = "kruise-webhook-service";
const PORT: u16 = 9876;

fn cluster() -> &'static TestCluster {
    TestCluster::shared().unwrap_or_else(|e| panic!("the test cluster did not start: {e}"))
}

/// An admission answer allowing everything, counted, on a connection closed after it.
fn app(served: Arc<AtomicUsize>) -> Router {
    let answer = move |body: axum::Json<Value>| {
        let served = Arc::clone(&served);
        async move {
            served.fetch_add(1, Ordering::Relaxed);
            // Every call closes its connection, so every call is a new TLS handshake with the
            // certificate served at that moment (pooled keep-alive connections would hide a
            // certificate the apiserver cannot verify).
            (
                [(axum::http::header::CONNECTION, "close")],
                axum::Json(json!({
                    "apiVersion": "admission.k8s.io/v1",
                    "kind": "AdmissionReview",
                    "response": {"uid": body.0["request"]["uid"], "allowed": true}
                })),
            )
        }
    };
    Router::new()
        .route("/mutate-pod", post(answer.clone()))
        .route("/validate-pod", post(answer))
        .route("/healthz", get(|| async { "ok" }))
}

/// One replica: a server with an empty store, and its `follow` task.
struct Replica {
    server: ServerHandle,
    store: Arc<CertStore>,
    readiness: Arc<Readiness>,
    served: Arc<AtomicUsize>,
    address: PodAddress,
}

/// A test's namespace, Service, webhook configurations, replicas and leader.
struct Rig {
    ns: TestNamespace,
    /// The test's own (admin) client.
    client: kube::Client,
    /// What `lead` and `follow` run with (admin unless a test restricts it).
    manager: kube::Client,
    settings: Settings,
    replicas: Vec<Replica>,
    token: CancellationToken,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Rig {
    /// The namespace, Service and webhook configurations (no `caBundle`), no replica yet.
    async fn new(prefix: &str) -> Rig {
        kruise::init_tracing(
            kruise::cli::LogFormat::Text,
            &std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".into()),
        );
        let c = cluster();
        let ns = c.namespace(prefix).await.unwrap();
        let client = c.client().await.unwrap();
        let service: Service = serde_json::from_value(json!({
            "metadata": {"name": SERVICE, "namespace": ns.name()},
            "spec": {"ports": [{"name": "https", "port": 443, "targetPort": PORT}]}
        }))
        .unwrap();
        Api::<Service>::namespaced(client.clone(), ns.name()).create(&PostParams::default(), &service).await.unwrap();
        let mut settings = Settings::new(ns.name(), "unused", ([127, 0, 0, 1], PORT).into());
        settings.mutating = format!("{}-mutating", ns.name());
        settings.validating = format!("{}-validating", ns.name());
        settings.crd_groups = Vec::new();
        settings.poll = Duration::from_millis(500);
        settings.settle = Duration::from_millis(500);
        settings.report_ttl = Duration::from_secs(10);
        let rig = Rig {
            ns,
            manager: client.clone(),
            client,
            settings,
            replicas: Vec::new(),
            token: CancellationToken::new(),
            tasks: Vec::new(),
        };
        rig.register_webhooks().await;
        rig
    }

    fn webhook(&self, name: &str, path: &str) -> Value {
        json!({
            "name": name,
            "admissionReviewVersions": ["v1"],
            "clientConfig": {"service": {"namespace": self.ns.name(), "name": SERVICE, "path": path, "port": 443}},
            "failurePolicy": "Fail",
            "sideEffects": "None",
            "timeoutSeconds": 10,
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": self.ns.name()}},
            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}]
        })
    }

    /// Registers both configurations as an installer would (its own field manager, no caBundle).
    async fn register_webhooks(&self) {
        let params = PatchParams::apply("e2e-installer").force();
        let mutating = json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": self.settings.mutating},
            "webhooks": [self.webhook("mpod.certs-e2e.kruise.io", "/mutate-pod")]
        });
        Api::<MutatingWebhookConfiguration>::all(self.client.clone())
            .patch(&self.settings.mutating, &params, &Patch::Apply(mutating))
            .await
            .unwrap();
        let validating = json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": self.settings.validating},
            "webhooks": [self.webhook("vpod.certs-e2e.kruise.io", "/validate-pod")]
        });
        Api::<ValidatingWebhookConfiguration>::all(self.client.clone())
            .patch(&self.settings.validating, &params, &Patch::Apply(validating))
            .await
            .unwrap();
    }

    fn settings_of(&self, identity: &str, address: PodAddress) -> Arc<Settings> {
        let mut s = self.settings.clone();
        s.identity = identity.to_string();
        s.webhook_addr = address.socket(PORT).into();
        Arc::new(s)
    }

    /// Starts `n` replicas (servers + `follow`) and publishes them as the Service's endpoints.
    async fn start_replicas(&mut self, n: usize) {
        for i in 0..n {
            let address = PodAddress::allocate(PORT).unwrap();
            let store = Arc::new(CertStore::empty());
            let readiness = Readiness::new(&[CERTIFICATE, SELF_CHECK]);
            let served = Arc::new(AtomicUsize::new(0));
            let mut opts =
                ServeOptions::new(address.socket(PORT).into(), ([127, 0, 0, 1], 0).into(), std::path::PathBuf::new());
            opts.shutdown_delay = Duration::ZERO;
            let server = kruise::server::start_with(
                opts,
                Arc::clone(&store),
                Arc::clone(&readiness),
                app(Arc::clone(&served)),
                kruise::metrics::Metrics::new(),
            )
            .await
            .unwrap();
            let settings = self.settings_of(&format!("replica-{i}"), address);
            self.tasks.push(tokio::spawn(kruise::certs::follow(
                self.manager.clone(),
                settings,
                Arc::clone(&store),
                Arc::clone(&readiness),
                self.token.child_token(),
            )));
            self.replicas.push(Replica { server, store, readiness, served, address });
        }
        let endpoints: Vec<Endpoint> =
            self.replicas.iter().map(|r| Endpoint { address: r.address, ready: true }).collect();
        publish_endpoints(&self.client, self.ns.name(), SERVICE, "https", PORT, &endpoints).await.unwrap();
    }

    fn start_leader(&mut self, identity: &str) {
        let settings = self.settings_of(identity, self.replicas[0].address);
        self.tasks.push(tokio::spawn(kruise::certs::lead(self.manager.clone(), settings, self.token.child_token())));
    }

    async fn secret(&self) -> Option<Secret> {
        Api::<Secret>::namespaced(self.client.clone(), self.ns.name()).get_opt(&self.settings.secret).await.unwrap()
    }

    /// The fingerprints of every webhook's caBundle, both configurations.
    async fn trusted(&self) -> Vec<Vec<String>> {
        let m =
            Api::<MutatingWebhookConfiguration>::all(self.client.clone()).get(&self.settings.mutating).await.unwrap();
        let v = Api::<ValidatingWebhookConfiguration>::all(self.client.clone())
            .get(&self.settings.validating)
            .await
            .unwrap();
        let mut out: Vec<Vec<String>> = Vec::new();
        for w in m.webhooks.unwrap_or_default() {
            out.push(w.client_config.ca_bundle.map(|b| fingerprints(&b.0)).unwrap_or_default());
        }
        for w in v.webhooks.unwrap_or_default() {
            out.push(w.client_config.ca_bundle.map(|b| fingerprints(&b.0)).unwrap_or_default());
        }
        out
    }

    /// Waits until the Secret exists, every caBundle holds its bundle, and every replica is ready.
    async fn converged(&self, within: Duration) {
        let deadline = Instant::now() + within;
        loop {
            let secret = self.secret().await;
            let bundle = secret.as_ref().and_then(bundle_of).map(|b| fingerprints(b.as_bytes()));
            let trusted = self.trusted().await;
            let ready = self.replicas.iter().all(|r| r.server.is_ready());
            if let Some(bundle) = &bundle
                && trusted.iter().all(|t| t == bundle)
                && ready
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "not converged: bundle {bundle:?}, trusted {trusted:?}, unmet {:?}",
                self.replicas.iter().map(|r| r.readiness.unmet()).collect::<Vec<_>>()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// A dry-run pod creation through the apiserver (it calls both webhooks).
    async fn admit_pod(&self, name: &str) -> Result<(), String> {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": self.ns.name()},
            "spec": {"containers": [{"name": "main", "image": "nginx:1.27"}]}
        }))
        .unwrap();
        let params = PostParams { dry_run: true, ..PostParams::default() };
        Api::<Pod>::namespaced(self.client.clone(), self.ns.name())
            .create(&params, &pod)
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    fn served(&self) -> usize {
        self.replicas.iter().map(|r| r.served.load(Ordering::Relaxed)).sum()
    }

    async fn stop(mut self) {
        self.token.cancel();
        for t in self.tasks.drain(..) {
            tokio::time::timeout(Duration::from_secs(10), t).await.expect("tasks stop when cancelled").unwrap();
        }
        for r in &self.replicas {
            r.server.shutdown();
        }
        for r in self.replicas.drain(..) {
            r.server.wait().await;
        }
        let dp = DeleteParams::default();
        let _ =
            Api::<MutatingWebhookConfiguration>::all(self.client.clone()).delete(&self.settings.mutating, &dp).await;
        let _ = Api::<ValidatingWebhookConfiguration>::all(self.client.clone())
            .delete(&self.settings.validating, &dp)
            .await;
    }
}

fn data(secret: &Secret, key: &str) -> Option<String> {
    secret.data.as_ref()?.get(key).map(|v| String::from_utf8_lossy(&v.0).into_owned())
}

fn bundle_of(secret: &Secret) -> Option<String> {
    data(secret, "ca-bundle.pem").or_else(|| data(secret, "ca-cert.pem")).or_else(|| data(secret, "ca.crt"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fresh_install_creates_the_secret_publishes_the_bundle_and_serves() {
    let mut rig = Rig::new("certs-fresh").await;
    rig.start_replicas(1).await;
    assert!(!rig.replicas[0].store.is_loaded());
    assert!(!rig.replicas[0].server.is_ready(), "not ready without a certificate");
    rig.start_leader("replica-0");
    rig.converged(Duration::from_secs(60)).await;

    let secret = rig.secret().await.unwrap();
    assert_eq!(secret.type_.as_deref(), Some("Opaque"));
    for key in ["ca-cert.pem", "ca-key.pem", "cert.pem", "key.pem", "tls.crt", "tls.key", "ca-bundle.pem"] {
        assert!(data(&secret, key).is_some(), "the Secret holds {key}");
    }
    assert_eq!(data(&secret, "cert.pem"), data(&secret, "tls.crt"));
    let ca = data(&secret, "ca-cert.pem").unwrap();
    assert_eq!(rig.trusted().await, vec![fingerprints(ca.as_bytes()); 2], "caBundle of both webhooks is the CA");
    let served_pem = String::from_utf8(rig.replicas[0].store.chain_pem()).unwrap();
    assert_eq!(Some(served_pem), data(&secret, "tls.crt"), "the replica serves the Secret's leaf");

    let before = rig.served();
    rig.admit_pod("first").await.unwrap();
    assert!(rig.served() >= before + 2, "the apiserver called both webhooks");

    // The replica's report names the CA it serves.
    let leases = Api::<k8s_openapi::api::coordination::v1::Lease>::namespaced(rig.client.clone(), rig.ns.name())
        .get("kruise-webhook-certs-replica-0")
        .await
        .unwrap();
    let fp = fingerprints(ca.as_bytes()).remove(0);
    assert_eq!(leases.metadata.annotations.unwrap()["certs.kruise.io/serving-ca"], fp);

    // A second leader round changes nothing: the Secret is not rewritten.
    let rv = secret.metadata.resource_version.clone();
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(rig.secret().await.unwrap().metadata.resource_version, rv, "a converged Secret is left alone");
    rig.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leaf_renewal_and_ca_rotation_under_load_fail_no_request() {
    // Every webhook call is a fresh TLS handshake (see `app`): with the overlap removed (the new
    // CA's leaf served before caBundle trusts it) this test saw 181 of 2949 calls fail with
    // "x509: certificate signed by unknown authority".
    let mut rig = Rig::new("certs-rotate").await;
    // Short lifetimes force both: a leaf is renewed ~9 s after it is issued, the CA is rotated
    // ~25 s after it is created (when a new leaf would outlive it or a third of it is left).
    rig.settings.lifetimes = Lifetimes { ca: Duration::from_secs(40), leaf: Duration::from_secs(12) };
    rig.start_replicas(2).await;
    rig.start_leader("replica-0");
    rig.converged(Duration::from_secs(60)).await;
    let first_ca = data(&rig.secret().await.unwrap(), "ca-cert.pem").unwrap();

    let rig = Arc::new(rig);
    let stop = CancellationToken::new();
    let mut load = Vec::new();
    for worker in 0..2 {
        let (rig, stop) = (Arc::clone(&rig), stop.clone());
        load.push(tokio::spawn(async move {
            let (mut sent, mut failures) = (0usize, Vec::new());
            while !stop.is_cancelled() {
                sent += 1;
                if let Err(mut e) = rig.admit_pod(&format!("load-{worker}-{sent}")).await {
                    e.truncate(300);
                    failures.push(e);
                }
            }
            (sent, failures)
        }));
    }
    // Watch what happens: leaves per CA, bundles published, until a rotation finished and a leaf
    // was renewed under one CA.
    let served_before = rig.served();
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut leaves: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut bundles: BTreeSet<usize> = BTreeSet::new();
    loop {
        let secret = rig.secret().await.unwrap();
        let ca = data(&secret, "ca-cert.pem").unwrap();
        leaves.entry(ca.clone()).or_default().insert(data(&secret, "tls.crt").unwrap());
        for t in rig.trusted().await {
            bundles.insert(t.len());
        }
        let rotated = ca != first_ca && data(&secret, "ca-bundle.pem").as_deref() == Some(ca.as_str());
        let renewed = leaves.values().any(|l| l.len() >= 2);
        if rotated && renewed && rig.trusted().await.iter().all(|t| *t == fingerprints(ca.as_bytes())) {
            break;
        }
        assert!(Instant::now() < deadline, "no renewal and rotation within 120 s: {leaves:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // A little more load on the final state, then stop.
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop.cancel();
    let (mut sent, mut failures) = (0, Vec::new());
    for l in load {
        let (s, f) = l.await.unwrap();
        sent += s;
        failures.extend(f);
    }
    let served = rig.served() - served_before;
    let leaf_count: usize = leaves.values().map(BTreeSet::len).sum();
    eprintln!(
        "rotation under load: {sent} pod creations, {} failed, {served} webhook calls served, {} CAs, {leaf_count} leaves",
        failures.len(),
        leaves.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {sent} requests failed: {:?}",
        failures.len(),
        &failures[..failures.len().min(3)]
    );
    assert!(sent >= 20, "a steady stream was sent ({sent})");
    assert!(served >= sent, "the apiserver called the webhooks ({served} calls for {sent} creations)");
    assert!(bundles.contains(&2), "the bundle held old and new CA during the rotation");
    assert!(rig.replicas.iter().all(|r| r.served.load(Ordering::Relaxed) > 0), "both replicas served");
    Arc::try_unwrap(rig).ok().expect("load tasks ended").stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn selectors_added_by_another_writer_survive() {
    let mut rig = Rig::new("certs-selectors").await;
    rig.start_replicas(1).await;
    rig.start_leader("replica-0");
    rig.converged(Duration::from_secs(60)).await;
    let mutating = Api::<MutatingWebhookConfiguration>::all(rig.client.clone());

    // A cloud provider adds a selector with its own field manager...
    let selector = json!({"matchExpressions": [{"key": "provider.example.com/skip", "operator": "DoesNotExist"}]});
    let provider = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": rig.settings.mutating},
        "webhooks": [{"name": "mpod.certs-e2e.kruise.io", "objectSelector": selector}]
    });
    mutating
        .patch(&rig.settings.mutating, &PatchParams::apply("cloud-provider"), &Patch::Apply(provider))
        .await
        .unwrap();
    // ...and someone edits caBundle away (an update, as kubectl edit does).
    let mut c = mutating.get(&rig.settings.mutating).await.unwrap();
    for w in c.webhooks.iter_mut().flatten() {
        w.client_config.ca_bundle = None;
    }
    mutating.replace(&rig.settings.mutating, &PostParams::default(), &c).await.unwrap();
    assert_eq!(rig.trusted().await[0], Vec::<String>::new());

    // The leader puts caBundle back, and only caBundle.
    rig.converged(Duration::from_secs(30)).await;
    let c = mutating.get(&rig.settings.mutating).await.unwrap();
    let hook = &c.webhooks.as_ref().unwrap()[0];
    assert_eq!(serde_json::to_value(&hook.object_selector).unwrap(), selector, "the other writer's selector survives");
    let expected_ns = json!({"matchLabels": {"kubernetes.io/metadata.name": rig.ns.name()}});
    assert_eq!(serde_json::to_value(&hook.namespace_selector).unwrap(), expected_ns, "the installer's selector too");
    let ours: Vec<Value> = c
        .metadata
        .managed_fields
        .unwrap_or_default()
        .into_iter()
        .filter(|m| m.manager.as_deref() == Some(kruise::certs::FIELD_MANAGER))
        .map(|m| m.fields_v1.map(|f| f.0).unwrap_or_default())
        .collect();
    assert_eq!(ours.len(), 1, "one entry of our field manager");
    let fields = serde_json::to_string(&ours[0]).unwrap();
    assert!(fields.contains("f:caBundle"), "{fields}");
    for other in ["f:objectSelector", "f:namespaceSelector", "f:rules", "f:failurePolicy", "f:service"] {
        assert!(!fields.contains(other), "our field manager owns {other}: {fields}");
    }
    rig.admit_pod("after-edit").await.unwrap();
    rig.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_written_by_kruise_is_reused() {
    let mut rig = Rig::new("certs-kruise").await;
    // OpenKruise's Secret (RSA CA "webhook-cert-ca", PKCS#1 keys), moved into this namespace: its
    // leaf names kruise-system's Service, so ours is re-issued from kruise's CA — no new CA.
    let yaml =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/certs/kruise-secret.yaml")).unwrap();
    let mut secret: Secret = serde_yaml_ng::from_str(&yaml).unwrap();
    secret.metadata.namespace = Some(rig.ns.name().to_string());
    let secrets = Api::<Secret>::namespaced(rig.client.clone(), rig.ns.name());
    secrets.create(&PostParams::default(), &secret).await.unwrap();
    let kruise_ca = data(&secret, "ca-cert.pem").unwrap();
    let kruise_ca_key = data(&secret, "ca-key.pem").unwrap();

    rig.start_replicas(1).await;
    rig.start_leader("replica-0");
    rig.converged(Duration::from_secs(60)).await;
    let now = rig.secret().await.unwrap();
    assert_eq!(data(&now, "ca-cert.pem").as_deref(), Some(kruise_ca.as_str()), "kruise's CA is kept");
    assert_eq!(data(&now, "ca-key.pem").as_deref(), Some(kruise_ca_key.as_str()));
    assert_ne!(data(&now, "tls.crt"), data(&secret, "tls.crt"), "the leaf is re-issued for this Service");
    assert_eq!(rig.trusted().await, vec![fingerprints(kruise_ca.as_bytes()); 2], "caBundle is kruise's CA");
    rig.admit_pod("on-kruise-ca").await.unwrap();
    rig.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn external_certificates_are_only_read() {
    let mut rig = Rig::new("certs-external").await;
    rig.settings.mode = Mode::External;
    // cert-manager's Secret and CA injection, played by the test.
    let now = std::time::SystemTime::now();
    let ca = kruise::certs::issue::new_ca(now, Duration::from_secs(86400)).unwrap();
    let leaf = kruise::certs::issue::issue_leaf(&ca, &rig.settings.names(), now, Duration::from_secs(3600)).unwrap();
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": rig.settings.secret, "namespace": rig.ns.name()},
        "type": "kubernetes.io/tls",
        "stringData": {"ca.crt": ca.cert, "tls.crt": leaf.cert, "tls.key": leaf.key}
    }))
    .unwrap();
    let secrets = Api::<Secret>::namespaced(rig.client.clone(), rig.ns.name());
    let created = secrets.create(&PostParams::default(), &secret).await.unwrap();
    let bundle = base64::engine::general_purpose::STANDARD.encode(&ca.cert);
    for (kind, name, hook) in [
        ("MutatingWebhookConfiguration", &rig.settings.mutating, "mpod.certs-e2e.kruise.io"),
        ("ValidatingWebhookConfiguration", &rig.settings.validating, "vpod.certs-e2e.kruise.io"),
    ] {
        let patch = json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": name},
            "webhooks": [{"name": hook, "clientConfig": {"caBundle": bundle}}]
        });
        let params = PatchParams::apply("cainjector").force();
        if kind.starts_with("Mutating") {
            let api = Api::<MutatingWebhookConfiguration>::all(rig.client.clone());
            api.patch(name, &params, &Patch::Apply(patch)).await.unwrap();
        } else {
            let api = Api::<ValidatingWebhookConfiguration>::all(rig.client.clone());
            api.patch(name, &params, &Patch::Apply(patch)).await.unwrap();
        }
    }

    rig.start_replicas(1).await;
    rig.start_leader("replica-0");
    rig.converged(Duration::from_secs(60)).await;
    assert_eq!(String::from_utf8(rig.replicas[0].store.chain_pem()).unwrap(), leaf.cert);
    rig.admit_pod("external").await.unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = secrets.get(&rig.settings.secret).await.unwrap();
    assert_eq!(after.metadata.resource_version, created.metadata.resource_version, "the Secret is never written");
    let m = Api::<MutatingWebhookConfiguration>::all(rig.client.clone()).get(&rig.settings.mutating).await.unwrap();
    let managers: Vec<String> =
        m.metadata.managed_fields.unwrap_or_default().into_iter().filter_map(|f| f.manager).collect();
    assert!(!managers.iter().any(|m| m == kruise::certs::FIELD_MANAGER), "caBundle is never written: {managers:?}");
    rig.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_leaders_at_once_create_one_ca() {
    let mut rig = Rig::new("certs-race").await;
    rig.start_replicas(1).await;
    rig.start_leader("leader-a");
    rig.start_leader("leader-b");
    rig.converged(Duration::from_secs(60)).await;
    let ca = data(&rig.secret().await.unwrap(), "ca-cert.pem").unwrap();
    // Both leaders keep observing: the CA never changes and the caBundle holds just it.
    for _ in 0..10 {
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(data(&rig.secret().await.unwrap(), "ca-cert.pem").as_deref(), Some(ca.as_str()));
    }
    assert_eq!(rig.trusted().await, vec![fingerprints(ca.as_bytes()); 2]);
    rig.admit_pod("raced").await.unwrap();
    rig.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conversion_webhooks_of_kruise_crds_get_the_bundle() {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let mut rig = Rig::new("certs-crd").await;
    // A CRD of a group of this test's own (CRDs are cluster-scoped), converting through a webhook.
    let group = format!("{}.certs-e2e.example.com", rig.ns.name());
    let name = format!("widgets.{group}");
    let schema = json!({"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}});
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": name},
        "spec": {
            "group": group, "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": schema},
                {"name": "v2", "served": true, "storage": false, "schema": schema}
            ],
            "conversion": {"strategy": "Webhook", "webhook": {
                "conversionReviewVersions": ["v1"],
                "clientConfig": {"service": {"namespace": rig.ns.name(), "name": SERVICE, "path": "/convert", "port": 443}}
            }}
        }
    });
    let crds = Api::<CustomResourceDefinition>::all(rig.client.clone());
    crds.patch(&name, &PatchParams::apply("e2e-installer").force(), &Patch::Apply(crd.clone())).await.unwrap();
    rig.settings.crd_groups = vec![group.clone(), "apps.kruise.io".into()];
    // No polling: a CRD added later is seen because the leader watches CRDs.
    rig.settings.poll = Duration::from_secs(3600);
    rig.start_replicas(1).await;
    rig.start_leader("replica-0");
    rig.converged(Duration::from_secs(60)).await;

    let ca = data(&rig.secret().await.unwrap(), "ca-cert.pem").unwrap();
    let trusts_ca = |name: String| {
        let (crds, ca) = (crds.clone(), ca.clone());
        async move {
            let deadline = Instant::now() + Duration::from_secs(20);
            loop {
                let c = crds.get(&name).await.unwrap();
                let cc =
                    c.spec.conversion.as_ref().and_then(|v| v.webhook.as_ref()).and_then(|w| w.client_config.clone());
                if cc.as_ref().and_then(|cc| cc.ca_bundle.as_ref()).map(|b| fingerprints(&b.0))
                    == Some(fingerprints(ca.as_bytes()))
                {
                    break c;
                }
                assert!(Instant::now() < deadline, "the conversion caBundle of {name} was not set: {cc:?}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    };
    let stored = trusts_ca(name.clone()).await;
    // A CRD of the group created after the leader listed CRDs (kubectl apply -k creating CRDs
    // while the manager already runs) gets the bundle too, without waiting for a poll.
    let later = format!("gadgets.{group}");
    let mut second = crd.clone();
    second["metadata"]["name"] = json!(later);
    second["spec"]["names"] =
        json!({"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"});
    crds.patch(&later, &PatchParams::apply("e2e-installer").force(), &Patch::Apply(second)).await.unwrap();
    trusts_ca(later.clone()).await;
    let service = stored.spec.conversion.unwrap().webhook.unwrap().client_config.unwrap().service.unwrap();
    assert_eq!(
        (service.name.as_str(), service.path.as_deref()),
        (SERVICE, Some("/convert")),
        "the installer's service stays"
    );
    let ours: Vec<String> = stored
        .metadata
        .managed_fields
        .unwrap_or_default()
        .into_iter()
        .filter(|m| m.manager.as_deref() == Some(kruise::certs::FIELD_MANAGER))
        .map(|m| serde_json::to_string(&m.fields_v1.map(|f| f.0).unwrap_or_default()).unwrap())
        .collect();
    assert_eq!(ours.len(), 1);
    assert!(
        ours[0].contains("f:caBundle") && !ours[0].contains("f:service") && !ours[0].contains("f:strategy"),
        "{}",
        ours[0]
    );
    rig.stop().await;
    crds.delete(&name, &DeleteParams::default()).await.unwrap();
    crds.delete(&later, &DeleteParams::default()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn these_permissions_are_enough() {
    use k8s_openapi::api::coordination::v1::Lease;
    let mut rig = Rig::new("certs-rbac").await;
    let ns = rig.ns.name().to_string();
    // What certificate management needs, granted to a ServiceAccount of its own: in the manager
    // namespace the Secret and the replica reports; cluster-wide the two webhook configurations
    // (by name: list and watch are field-selected by name, so resourceNames apply) and CRDs
    // (list and watch, and patch of their conversion caBundle).
    let cluster_role = format!("{ns}-certs");
    let objects = vec![
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "certs", "namespace": ns}}),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "certs", "namespace": ns},
            "rules": [
                {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "watch", "create", "update"]},
                {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["list", "watch", "create", "patch", "delete"]}
            ]
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "certs", "namespace": ns},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "certs"},
            "subjects": [{"kind": "ServiceAccount", "name": "certs", "namespace": ns}]
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": cluster_role},
            "rules": [
                {"apiGroups": ["admissionregistration.k8s.io"], "resources": ["mutatingwebhookconfigurations"],
                 "resourceNames": [rig.settings.mutating], "verbs": ["get", "list", "watch", "patch"]},
                {"apiGroups": ["admissionregistration.k8s.io"], "resources": ["validatingwebhookconfigurations"],
                 "resourceNames": [rig.settings.validating], "verbs": ["get", "list", "watch", "patch"]},
                {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"], "verbs": ["list", "watch", "patch"]}
            ]
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": cluster_role},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": cluster_role},
            "subjects": [{"kind": "ServiceAccount", "name": "certs", "namespace": ns}]
        }),
    ];
    for o in objects {
        kruise_testenv::manifests::apply(&rig.client, o).await.unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = cluster().service_account_kubeconfig(&ns, "certs", dir.path()).await.unwrap();
    rig.manager = kruise_testenv::client_from_kubeconfig(&kubeconfig).await.unwrap();
    rig.settings.crd_groups = vec!["apps.kruise.io".into()];
    // No polling: what happens after the first rounds happens because a watch saw a change.
    rig.settings.poll = Duration::from_secs(3600);
    rig.start_replicas(1).await;
    rig.start_leader("replica-0");
    rig.converged(Duration::from_secs(60)).await;
    rig.admit_pod("least-privilege").await.unwrap();
    // caBundle edited away once the leader idles: its watch of the configuration brings it back.
    tokio::time::sleep(rig.settings.settle * 4).await;
    let mutating = Api::<MutatingWebhookConfiguration>::all(rig.client.clone());
    let mut c = mutating.get(&rig.settings.mutating).await.unwrap();
    for w in c.webhooks.iter_mut().flatten() {
        w.client_config.ca_bundle = None;
    }
    mutating.replace(&rig.settings.mutating, &PostParams::default(), &c).await.unwrap();
    rig.converged(Duration::from_secs(30)).await;
    let leases = Api::<Lease>::namespaced(rig.client.clone(), &ns);
    assert!(leases.get_opt("kruise-webhook-certs-replica-0").await.unwrap().is_some(), "the replica reports");
    let client = rig.client.clone();
    rig.stop().await;
    assert!(leases.get_opt("kruise-webhook-certs-replica-0").await.unwrap().is_none(), "and withdraws its report");
    let dp = DeleteParams::default();
    let _ = Api::<k8s_openapi::api::rbac::v1::ClusterRoleBinding>::all(client.clone()).delete(&cluster_role, &dp).await;
    let _ = Api::<k8s_openapi::api::rbac::v1::ClusterRole>::all(client).delete(&cluster_role, &dp).await;
}
