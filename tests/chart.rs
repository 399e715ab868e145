//! The Helm chart under `deploy/chart/` (issue 32), with Helm built from its Go module
//! (tools/helm/build.sh, once, stamped):
//! - `helm lint --strict` with the defaults and with a values file written for OpenKruise's chart;
//! - the defaults render exactly the kustomize base `deploy/` (`kubectl kustomize`), object by
//!   object: the hand-written templates cannot drift from `deploy/` (the CRDs and webhook
//!   configurations are generated for both by `kruise manifests`);
//! - an OpenKruise values file renders the flags and objects it asks for (feature gates, replicas,
//!   resources, image, log level, pod webhook failurePolicy, timeouts, namespace);
//! - on the test control plane: every rendered object passes a server-side dry run; `helm install`,
//!   kruise serving with the chart's ServiceAccount (so the chart's RBAC is what it has), a
//!   CloneSet admitted through the chart's webhooks, `helm upgrade` (new values reach the cluster,
//!   the caBundle kruise published stays), `helm uninstall` (the CRDs and the CloneSet survive).
//!
//! Skipped, saying so, only when Go is not installed (Helm cannot be built).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod e2e_common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use e2e_common::{Kruise, cluster, eventually_ok, publish, root};
use serde_json::{Value, json};

const NAMESPACE: &str = "kruise-system";

/// The Helm binary, built when missing; `None` (with the reason printed) without Go.
fn helm() -> Option<&'static Path> {
    static HELM: OnceLock<Option<PathBuf>> = OnceLock::new();
    HELM.get_or_init(|| {
        if Command::new("go").arg("version").output().is_err() {
            return None;
        }
        let out = Command::new("bash").arg(root().join("tools/helm/build.sh")).output().unwrap();
        assert!(
            out.status.success(),
            "tools/helm/build.sh failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        Some(root().join("target/tools/helm"))
    })
    .as_deref()
}

macro_rules! helm_or_skip {
    ($test:literal) => {
        match helm() {
            Some(h) => h,
            None => {
                eprintln!("SKIPPED {}: Go is not installed, so Helm cannot be built (tools/helm/build.sh)", $test);
                return;
            }
        }
    };
}

/// Runs helm with its own config, cache and data directories; (success, stdout, stderr).
fn run_helm(helm: &Path, home: &Path, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(helm)
        .args(args)
        .env("HELM_CONFIG_HOME", home.join("config"))
        .env("HELM_CACHE_HOME", home.join("cache"))
        .env("HELM_DATA_HOME", home.join("data"))
        .current_dir(root())
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn helm_ok(helm: &Path, home: &Path, args: &[&str]) -> String {
    let (ok, stdout, stderr) = run_helm(helm, home, args);
    assert!(ok, "helm {args:?} failed:\n{stdout}{stderr}");
    stdout
}

/// `helm template` of the chart with `args` (values files, --set).
fn template(helm: &Path, args: &[&str]) -> Vec<Value> {
    let home = tempfile::tempdir().unwrap();
    let text = helm_ok(helm, home.path(), &[&["template", "kruise", "deploy/chart"][..], args].concat());
    kruise_testenv::manifests::parse(&text).unwrap()
}

fn key(obj: &Value) -> String {
    format!(
        "{} {} {}/{}",
        obj["apiVersion"].as_str().unwrap_or(""),
        obj["kind"].as_str().unwrap_or(""),
        obj["metadata"]["namespace"].as_str().unwrap_or(""),
        obj["metadata"]["name"].as_str().unwrap_or("")
    )
}

fn by_key(objects: Vec<Value>) -> BTreeMap<String, Value> {
    let mut map = BTreeMap::new();
    for obj in objects {
        let k = key(&obj);
        assert!(map.insert(k.clone(), obj).is_none(), "{k} rendered twice");
    }
    map
}

fn find<'a>(objects: &'a [Value], kind: &str, name: &str) -> &'a Value {
    objects
        .iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name} rendered"))
}

fn container(objects: &[Value]) -> &Value {
    &find(objects, "Deployment", "kruise-manager")["spec"]["template"]["spec"]["containers"][0]
}

fn args(objects: &[Value]) -> Vec<String> {
    container(objects)["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_string()).collect()
}

fn webhooks(objects: &[Value]) -> Vec<&Value> {
    objects
        .iter()
        .filter(|o| o["kind"].as_str().is_some_and(|k| k.ends_with("WebhookConfiguration")))
        .flat_map(|o| o["webhooks"].as_array().unwrap())
        .collect()
}

#[test]
fn lint_with_defaults_and_openkruise_values() {
    let helm = helm_or_skip!("lint_with_defaults_and_openkruise_values");
    let home = tempfile::tempdir().unwrap();
    helm_ok(helm, home.path(), &["lint", "--strict", "deploy/chart"]);
    helm_ok(helm, home.path(), &["lint", "--strict", "deploy/chart", "-f", "tests/data/chart/openkruise-values.yaml"]);
}

/// `kubectl kustomize DIR` (relative to the repository root), by key.
fn kustomize(dir: &str) -> BTreeMap<String, Value> {
    let out = Command::new("kubectl").args(["kustomize", dir]).current_dir(root()).output();
    let out = out.expect("kubectl runs (is it installed? .ci/run installs it)");
    assert!(out.status.success(), "kubectl kustomize {dir}: {}", String::from_utf8_lossy(&out.stderr));
    by_key(kruise_testenv::manifests::parse(&String::from_utf8_lossy(&out.stdout)).unwrap())
}

/// The chart rendered with `args`, and the kustomize build of `dir`, install the same objects
/// (Helm's keep annotation on the CRDs aside).
fn chart_matches_kustomize(helm: &Path, args: &[&str], dir: &str) -> Vec<String> {
    let kustomize = kustomize(dir);
    let mut chart = by_key(template(helm, args));
    // The one difference on purpose: Helm keeps the CRDs on uninstall.
    for (k, obj) in chart.iter_mut().filter(|(k, _)| k.contains(" CustomResourceDefinition ")) {
        let annotations = obj["metadata"]["annotations"].as_object_mut().unwrap();
        assert_eq!(annotations.remove("helm.sh/resource-policy"), Some(json!("keep")), "{k}");
        assert!(annotations.is_empty(), "{k}: {annotations:?}");
        obj["metadata"].as_object_mut().unwrap().remove("annotations");
    }
    let (chart_keys, base_keys): (Vec<_>, Vec<_>) = (chart.keys().collect(), kustomize.keys().collect());
    assert_eq!(chart_keys, base_keys, "the chart and {dir} install different objects");
    for (k, obj) in &chart {
        assert!(
            obj == &kustomize[k],
            "{k} differs between the chart (left) and {dir} (right):\n{}\n---\n{}",
            serde_yaml_ng::to_string(obj).unwrap(),
            serde_yaml_ng::to_string(&kustomize[k]).unwrap()
        );
    }
    chart_keys.into_iter().cloned().collect()
}

fn cloneset_versions(objects: &BTreeMap<String, Value>) -> Vec<String> {
    let (_, crd) = objects.iter().find(|(k, _)| k.ends_with("/clonesets.apps.kruise.io")).unwrap();
    crd["spec"]["versions"].as_array().unwrap().iter().map(|v| v["name"].as_str().unwrap().to_string()).collect()
}

#[test]
fn defaults_render_the_kustomize_base() {
    let helm = helm_or_skip!("defaults_render_the_kustomize_base");
    let keys = chart_matches_kustomize(helm, &[], "deploy");
    assert!(keys.len() >= 14, "{keys:?}");
    assert_eq!(cloneset_versions(&kustomize("deploy")), ["v1alpha1"], "as released kruise serves CloneSets");
}

/// Issue 32 item 3: CloneSet v1beta1 (kruise HEAD's) is opt-in: the chart value
/// `crds.cloneSetV1beta1` and the kustomize Component `deploy/components/cloneset-v1beta1` give
/// the same CRD, serving both versions with v1alpha1 stored and converted by /convert.
#[test]
fn the_cloneset_v1beta1_opt_in_renders_alike_in_the_chart_and_kustomize() {
    let helm = helm_or_skip!("the_cloneset_v1beta1_opt_in_renders_alike_in_the_chart_and_kustomize");
    let overlay = root().join("target/tmp/cloneset-v1beta1-overlay");
    std::fs::create_dir_all(&overlay).unwrap();
    std::fs::write(
        overlay.join("kustomization.yaml"),
        "resources:\n- ../../../deploy\ncomponents:\n- ../../../deploy/components/cloneset-v1beta1\n",
    )
    .unwrap();
    chart_matches_kustomize(helm, &["--set", "crds.cloneSetV1beta1=true"], "target/tmp/cloneset-v1beta1-overlay");
    let objects = kustomize("target/tmp/cloneset-v1beta1-overlay");
    assert_eq!(cloneset_versions(&objects), ["v1alpha1", "v1beta1"]);
    let (_, crd) = objects.iter().find(|(k, _)| k.ends_with("/clonesets.apps.kruise.io")).unwrap();
    assert_eq!(crd["spec"]["conversion"]["strategy"], "Webhook");
    let stored: Vec<&Value> =
        crd["spec"]["versions"].as_array().unwrap().iter().filter(|v| v["storage"] == true).collect();
    assert_eq!(stored[0]["name"], "v1alpha1");
}

/// `crds.podUnavailableBudgetV1beta1` and the kustomize Component
/// `deploy/components/podunavailablebudget-v1beta1` give the same CRD: both versions, v1beta1
/// stored (as kruise HEAD), converted by /convert.
#[test]
fn the_pub_v1beta1_opt_in_renders_alike_in_the_chart_and_kustomize() {
    let helm = helm_or_skip!("the_pub_v1beta1_opt_in_renders_alike_in_the_chart_and_kustomize");
    let overlay = root().join("target/tmp/pub-v1beta1-overlay");
    std::fs::create_dir_all(&overlay).unwrap();
    std::fs::write(
        overlay.join("kustomization.yaml"),
        "resources:\n- ../../../deploy\ncomponents:\n- ../../../deploy/components/podunavailablebudget-v1beta1\n",
    )
    .unwrap();
    chart_matches_kustomize(
        helm,
        &["--set", "crds.podUnavailableBudgetV1beta1=true"],
        "target/tmp/pub-v1beta1-overlay",
    );
    let objects = kustomize("target/tmp/pub-v1beta1-overlay");
    let (_, crd) = objects.iter().find(|(k, _)| k.ends_with("/podunavailablebudgets.policy.kruise.io")).unwrap();
    assert_eq!(crd["spec"]["conversion"]["strategy"], "Webhook");
    let versions = crd["spec"]["versions"].as_array().unwrap();
    let mut names: Vec<&str> = versions.iter().map(|v| v["name"].as_str().unwrap()).collect();
    names.sort_unstable();
    assert_eq!(names, ["v1alpha1", "v1beta1"]);
    let stored: Vec<&Value> = versions.iter().filter(|v| v["storage"] == true).collect();
    assert_eq!(stored[0]["name"], "v1beta1");
}

#[test]
fn openkruise_values_render_what_they_ask_for() {
    let helm = helm_or_skip!("openkruise_values_render_what_they_ask_for");
    let objects = template(helm, &["-f", "tests/data/chart/openkruise-values.yaml"]);
    let deployment = find(&objects, "Deployment", "kruise-manager");
    assert_eq!(deployment["spec"]["replicas"], 3);
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(pod["imagePullSecrets"], json!([{"name": "registry-credentials"}]));
    assert_eq!(pod["nodeSelector"], json!({"node-role.kubernetes.io/control-plane": ""}));
    assert_eq!(pod["tolerations"][0]["key"], "node-role.kubernetes.io/control-plane");
    let c = container(&objects);
    assert_eq!(c["image"], "registry.example.com/kruise:0.1.0-custom");
    assert_eq!(
        c["resources"],
        json!({"limits": {"cpu": "500m", "memory": "1Gi"}, "requests": {"cpu": "250m", "memory": "512Mi"}})
    );
    let args = args(&objects);
    assert_eq!(
        args,
        [
            "serve",
            "--cert-mode=managed",
            "--log-format=text",
            "--log=info,kruise=debug",
            "--feature-gates=ImagePullJobGate=true,ResourcesDeletionProtection=true,PreDownloadImageForInPlaceUpdate=false"
        ]
    );
    // The flags are ones `kruise serve` takes: the gates parse with kruise's names.
    let gates = args[4].strip_prefix("--feature-gates=").unwrap();
    kruise::core::features::FeatureGates::parse(gates).unwrap();
    let sa = find(&objects, "ServiceAccount", "kruise-manager");
    assert_eq!(sa["metadata"]["annotations"]["eks.amazonaws.com/role-arn"], "arn:aws:iam::123456789012:role/kruise");

    let hooks = webhooks(&objects);
    assert!(hooks.len() >= 7);
    for w in &hooks {
        assert_eq!(w["timeoutSeconds"], 30, "{w}");
        let pods =
            w["rules"].as_array().unwrap().iter().any(|r| r["resources"].as_array().unwrap().contains(&json!("pods")));
        // The deletion-protection webhooks are Ignore whatever the values (kruise's chart).
        let protection = w["objectSelector"]["matchExpressions"][0]["key"] == "policy.kruise.io/delete-protection";
        assert_eq!(w["failurePolicy"], if pods || protection { "Ignore" } else { "Fail" }, "{w}");
    }
    assert!(hooks.iter().any(|w| w["name"] == "mpod.kb.io" && w["failurePolicy"] == "Ignore"));
    let crds: Vec<_> = objects.iter().filter(|o| o["kind"] == "CustomResourceDefinition").collect();
    let generated = std::fs::read_dir(root().join("deploy/crds")).unwrap().count();
    assert_eq!(crds.len(), generated, "every CRD of deploy/crds");
    assert!(generated >= 11, "{generated} CRDs");
    assert!(crds.iter().all(|c| c["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"));
}

#[test]
fn other_namespace_ports_external_certs_gates_and_unmanaged_crds() {
    let helm = helm_or_skip!("other_namespace_ports_external_certs_gates_and_unmanaged_crds");
    let objects = template(
        helm,
        &[
            "--set",
            "installation.namespace=kruise",
            "--set",
            "crds.managed=false",
            "--set",
            "featureGates=EnableExternalCerts=true\\,PodWebhook=false",
            "--set",
            "externalCerts.annotations.cert-manager\\.io/inject-ca-from=kruise/kruise-webhook-certs",
            "--set",
            "manager.webhook.port=9443",
            "--set",
            "manager.healthProbe.port=8081",
        ],
    );
    assert!(objects.iter().all(|o| o["kind"] != "CustomResourceDefinition"));
    assert_eq!(find(&objects, "Namespace", "kruise")["metadata"]["labels"]["control-plane"], "openkruise");
    for o in &objects {
        let cluster_scoped = ["Namespace", "ClusterRole", "ClusterRoleBinding"].contains(&o["kind"].as_str().unwrap())
            || o["kind"].as_str().unwrap().ends_with("WebhookConfiguration");
        // kruise daemon's pull-secret Role lives where kruise's manager copies the secrets.
        let daemon_config = o["metadata"]["namespace"] == "kruise-daemon-config";
        if !cluster_scoped && !daemon_config {
            assert_eq!(o["metadata"]["namespace"], "kruise", "{}", key(o));
        }
    }
    assert_eq!(
        args(&objects),
        [
            "serve",
            "--cert-mode=external",
            "--log-format=json",
            "--feature-gates=EnableExternalCerts=true,PodWebhook=false",
            "--addr=0.0.0.0:9443",
            "--admin-addr=0.0.0.0:8081"
        ]
    );
    assert_eq!(
        container(&objects)["ports"],
        json!([{"name": "webhook", "containerPort": 9443}, {"name": "admin", "containerPort": 8081}])
    );
    assert_eq!(find(&objects, "Service", "kruise-webhook-service")["spec"]["ports"][0]["targetPort"], 9443);
    let binding = find(&objects, "ClusterRoleBinding", "kruise-manager");
    assert_eq!(binding["subjects"][0]["namespace"], "kruise");
    for (kind, name) in [("ClusterRoleBinding", "kruise-daemon"), ("RoleBinding", "kruise-daemon-secrets")] {
        assert_eq!(find(&objects, kind, name)["subjects"][0]["namespace"], "kruise", "{kind} {name}");
    }
    assert_eq!(find(&objects, "DaemonSet", "kruise-daemon")["metadata"]["namespace"], "kruise");
    for o in objects.iter().filter(|o| o["kind"].as_str().unwrap().ends_with("WebhookConfiguration")) {
        assert_eq!(o["metadata"]["annotations"]["cert-manager.io/inject-ca-from"], "kruise/kruise-webhook-certs");
    }
    // PodWebhook=false leaves the pod webhook out, as OpenKruise's chart does; the others stay.
    let names: Vec<&str> = webhooks(&objects).iter().map(|w| w["name"].as_str().unwrap()).collect();
    assert!(!names.contains(&"mpod.kb.io") && names.contains(&"mcloneset.kb.io"), "{names:?}");
    for w in webhooks(&objects) {
        assert_eq!(w["clientConfig"]["service"]["namespace"], "kruise", "{w}");
    }
    // With the CRDs managed, their conversion webhooks call the Service in that namespace too
    // (the CRDs converting with `strategy: None` call nothing).
    let objects = template(helm, &["--set", "installation.namespace=kruise", "--set", "crds.cloneSetV1beta1=true"]);
    let converting: Vec<&Value> = objects
        .iter()
        .filter(|o| o["kind"] == "CustomResourceDefinition" && o["spec"]["conversion"]["strategy"] == "Webhook")
        .collect();
    assert_eq!(
        converting.len(),
        6,
        "CloneSet (opted in), StatefulSet, SidecarSet, ImagePullJob, DaemonSet, ContainerRecreateRequest"
    );
    for crd in converting {
        assert_eq!(crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["namespace"], "kruise");
    }
}

/// kubectl on the test cluster's admin kubeconfig, `stdin` piped in.
fn kubectl(args: &[&str], stdin: Option<&str>) -> (bool, String) {
    use std::io::Write;
    let home = tempfile::tempdir().unwrap();
    let mut child = Command::new("kubectl")
        .args(args)
        .env("KUBECONFIG", cluster().kubeconfig())
        .env("HOME", home.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("kubectl runs (is it installed? .ci/run installs it)");
    child.stdin.take().unwrap().write_all(stdin.unwrap_or("").as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    (out.status.success(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

fn cloneset(name: &str, namespace: &str) -> String {
    format!(
        "apiVersion: apps.kruise.io/v1alpha1\nkind: CloneSet\nmetadata:\n  name: {name}\n  namespace: {namespace}\n\
         spec:\n  replicas: 1\n  selector:\n    matchLabels: {{app: {name}}}\n  template:\n    metadata:\n      \
         labels: {{app: {name}}}\n    spec:\n      containers: [{{name: main, image: 'nginx:1.27'}}]\n"
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn install_upgrade_uninstall_on_the_control_plane() {
    let helm = helm_or_skip!("install_upgrade_uninstall_on_the_control_plane");
    let c = cluster();
    let home = tempfile::tempdir().unwrap();
    let kubeconfig = c.kubeconfig().to_str().unwrap().to_string();
    // Release in `default`, objects in installation.namespace, as OpenKruise's chart is installed.
    // No replicas: the simulated nodes cannot run an image, and their pods' addresses in the
    // Services would take the webhook calls; kruise runs here instead (as e2e_incluster does).
    let base = ["--kubeconfig", &kubeconfig, "--namespace", "default", "--set", "manager.replicas=0"];

    // Every object the chart renders is valid for the apiserver (server-side dry run).
    let rendered = helm_ok(helm, home.path(), &[&["template", "kruise", "deploy/chart"][..], &base].concat());
    let (ok, out) = kubectl(&["create", "--dry-run=server", "-f", "-"], Some(&rendered));
    // Namespaced objects cannot be dry-run before their namespace exists: those are checked again below.
    // (kruise daemon's pull-secret Role and RoleBinding live in kruise-daemon-config.)
    let not_yet = |l: &str| {
        l.contains("namespaces \"kruise-system\" not found")
            || l.contains("namespaces \"kruise-daemon-config\" not found")
    };
    let missing_namespace = out.lines().filter(|l| not_yet(l)).count();
    assert!(ok || missing_namespace > 0, "{out}");
    assert!(out.lines().all(|l| !l.starts_with("Error") || not_yet(l)), "{out}");

    helm_ok(helm, home.path(), &[&["install", "kruise", "deploy/chart"][..], &base].concat());
    let (ok, out) = kubectl(
        &["apply", "--server-side", "--dry-run=server", "--force-conflicts", "--field-manager=chart-test", "-f", "-"],
        Some(&rendered),
    );
    assert!(ok, "server-side dry run of every rendered object after install:\n{out}");
    for (kind, name) in [
        ("deployment", "kruise-manager"),
        ("service", "kruise-webhook-service"),
        ("service", "kruise-conversion-service"),
        ("serviceaccount", "kruise-manager"),
        ("role", "kruise-manager"),
        ("rolebinding", "kruise-manager"),
        ("poddisruptionbudget", "kruise-manager"),
        ("daemonset", "kruise-daemon"),
        ("serviceaccount", "kruise-daemon"),
    ] {
        let (ok, out) = kubectl(&["-n", NAMESPACE, "get", kind, name], None);
        assert!(ok, "{kind} {name} after install: {out}");
    }
    for (kind, name) in [
        ("clusterrole", "kruise-manager"),
        ("clusterrolebinding", "kruise-manager"),
        ("mutatingwebhookconfiguration", "kruise-mutating-webhook-configuration"),
        ("validatingwebhookconfiguration", "kruise-validating-webhook-configuration"),
        ("crd", "clonesets.apps.kruise.io"),
        ("crd", "statefulsets.apps.kruise.io"),
        ("crd", "sidecarsets.apps.kruise.io"),
        ("crd", "imagepulljobs.apps.kruise.io"),
    ] {
        let (ok, out) = kubectl(&["get", kind, name], None);
        assert!(ok, "{kind} {name} after install: {out}");
    }

    // kruise with the chart's ServiceAccount, reached through the chart's Services: the leader
    // creates the certificate and publishes caBundle, and the chart's webhooks admit a CloneSet.
    let dir = tempfile::tempdir().unwrap();
    let sa_kubeconfig = c.service_account_kubeconfig(NAMESPACE, "kruise-manager", dir.path()).await.unwrap();
    let kruise = Kruise::managed(&sa_kubeconfig, &[], "warn");
    publish(&[&kruise]).await;
    let workloads = c.namespace("chart").await.unwrap();
    let manifest = cloneset("survivor", workloads.name());
    eventually_ok("a CloneSet admitted through the chart's webhooks", Duration::from_secs(60), || async {
        match kubectl(&["apply", "-f", "-"], Some(&manifest)) {
            (true, _) => Ok(()),
            (false, out) => Err(out),
        }
    })
    .await;
    let bundle = |kind: &str, name: &str| {
        kubectl(&["get", kind, name, "-o", "jsonpath={.webhooks[0].clientConfig.caBundle}"], None).1
    };
    let published = bundle("mutatingwebhookconfiguration", "kruise-mutating-webhook-configuration");
    assert!(!published.is_empty());

    // Upgrade: new values reach the cluster; kruise's caBundle stays.
    helm_ok(
        helm,
        home.path(),
        &[&["upgrade", "kruise", "deploy/chart"][..], &base, &["--set", "webhookConfiguration.timeoutSeconds=20"]]
            .concat(),
    );
    let (_, timeouts) = kubectl(
        &[
            "get",
            "validatingwebhookconfiguration",
            "kruise-validating-webhook-configuration",
            "-o",
            "jsonpath={.webhooks[*].timeoutSeconds}",
        ],
        None,
    );
    assert!(timeouts.split_whitespace().all(|t| t == "20") && !timeouts.is_empty(), "{timeouts}");
    assert_eq!(bundle("mutatingwebhookconfiguration", "kruise-mutating-webhook-configuration"), published);
    let (_, status) = kubectl(&["get", "secret", "-n", "default", "-l", "owner=helm,name=kruise", "-o", "name"], None);
    assert_eq!(status.lines().count(), 2, "two release revisions: {status}");
    let (ok, out) =
        kubectl(&["apply", "--dry-run=server", "-f", "-"], Some(&cloneset("after-upgrade", workloads.name())));
    assert!(ok, "a CloneSet admitted after the upgrade: {out}");

    // Uninstall: the CRDs and the CloneSet stay.
    drop(kruise);
    let uninstall =
        helm_ok(helm, home.path(), &["uninstall", "kruise", "--kubeconfig", &kubeconfig, "--namespace", "default"]);
    for name in ["clonesets", "statefulsets", "sidecarsets", "imagepulljobs"] {
        let (ok, out) = kubectl(&["get", "crd", &format!("{name}.apps.kruise.io")], None);
        assert!(ok, "CRD {name} deleted by helm uninstall ({uninstall}): {out}");
    }
    // Read at its storage version: another version needs /convert, whose Service is gone with the
    // release (until kruise is installed again).
    let (ok, out) =
        kubectl(&["get", "clonesets.v1alpha1.apps.kruise.io", "survivor", "-n", workloads.name(), "-o", "name"], None);
    assert!(ok && out.trim() == "cloneset.apps.kruise.io/survivor", "the CloneSet after uninstall: {out}");
    for kind in ["mutatingwebhookconfiguration", "validatingwebhookconfiguration", "clusterrole"] {
        let (_, out) = kubectl(&["get", kind, "-o", "name"], None);
        assert!(!out.contains("kruise"), "{kind} left after uninstall: {out}");
    }

    // Installing again adopts the kept CRDs (same release), and the CloneSet is still there. (The
    // uninstalled namespace must be gone first: a terminating one takes no new objects.)
    for namespace in [NAMESPACE, "kruise-daemon-config"] {
        eventually_ok(&format!("namespace {namespace} deleted"), Duration::from_secs(60), || async move {
            match kubectl(&["get", "namespace", namespace, "-o", "name"], None) {
                (false, out) if out.contains("NotFound") => Ok(()),
                (_, out) => Err(out),
            }
        })
        .await;
    }
    helm_ok(helm, home.path(), &[&["install", "kruise", "deploy/chart"][..], &base].concat());
    let (ok, out) =
        kubectl(&["get", "clonesets.v1alpha1.apps.kruise.io", "survivor", "-n", workloads.name(), "-o", "name"], None);
    assert!(ok, "the CloneSet after installing again: {out}");
    helm_ok(helm, home.path(), &["uninstall", "kruise", "--kubeconfig", &kubeconfig, "--namespace", "default"]);
}

#[test]
fn cert_manager_issues_the_certificate() {
    let helm = helm_or_skip!("cert_manager_issues_the_certificate");
    let objects = template(helm, &["--set", "certManager.enabled=true"]);
    assert!(args(&objects).contains(&"--cert-mode=external".to_string()), "{:?}", args(&objects));
    let certificate = find(&objects, "Certificate", "kruise-webhook-certs");
    assert_eq!(certificate["spec"]["secretName"], "kruise-webhook-certs");
    assert_eq!(
        certificate["spec"]["dnsNames"],
        json!(["kruise-webhook-service.kruise-system.svc", "kruise-conversion-service.kruise-system.svc"])
    );
    assert_eq!(
        certificate["spec"]["issuerRef"]["name"],
        find(&objects, "Issuer", "kruise-selfsigned")["metadata"]["name"]
    );
    let injected = objects
        .iter()
        .filter(|o| {
            o["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == "kruise-system/kruise-webhook-certs"
        })
        .count();
    assert_eq!(
        injected,
        2 + 5,
        "both webhook configurations and the five CRDs with a conversion webhook (StatefulSet, SidecarSet, \
         ImagePullJob, DaemonSet, ContainerRecreateRequest; CloneSet's only with its opt-in)"
    );
}

/// kruise daemon's values: its port, pulls at once, log level, resources and `featureGates` reach
/// the DaemonSet; `KruiseDaemon=false` (OpenKruise's switch) leaves out the DaemonSet and its RBAC.
#[test]
fn daemon_values_and_the_kruise_daemon_gate() {
    let helm = helm_or_skip!("daemon_values_and_the_kruise_daemon_gate");
    let objects = template(
        helm,
        &[
            "--set",
            "daemon.port=10300",
            "--set",
            "daemon.maxConcurrentPulls=3",
            "--set",
            "daemon.log.level=5",
            "--set",
            "daemon.socketLocation=/var/run",
        ],
    );
    let ds = find(&objects, "DaemonSet", "kruise-daemon");
    let c = &ds["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        c["args"],
        json!([
            "daemon",
            "--log-format=json",
            "--log=info,kruise=debug",
            "--admin-addr=0.0.0.0:10300",
            "--max-concurrent-pulls=3"
        ])
    );
    assert_eq!(c["ports"], json!([{"name": "admin", "containerPort": 10300}]));
    assert_eq!(c["env"][0]["valueFrom"]["fieldRef"]["fieldPath"], "spec.nodeName");
    assert_eq!(ds["spec"]["template"]["spec"]["volumes"][0]["hostPath"]["path"], "/var/run");
    // The flags are ones `kruise daemon` takes.
    let mut argv = vec!["kruise".to_string()];
    argv.extend(c["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_string()));
    argv.push("--node-name=n".into());
    <kruise::cli::Cli as clap::Parser>::try_parse_from(argv).unwrap();

    // `featureGates` reach the daemon too, as OpenKruise's chart passes them to kruise-daemon
    // (it reads DaemonWatchingPod, InPlaceUpdateEnvFromMetadata, PodProbeMarkerGate...), and
    // `kruise daemon` takes them.
    let gates = "DaemonWatchingPod=false,PodProbeMarkerGate=false";
    let objects = template(helm, &["--set-string", &format!("featureGates={}", gates.replace(',', "\\,"))]);
    let c = &find(&objects, "DaemonSet", "kruise-daemon")["spec"]["template"]["spec"]["containers"][0];
    let daemon_args: Vec<&str> = c["args"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(daemon_args.contains(&format!("--feature-gates={gates}").as_str()), "{daemon_args:?}");
    let manager_args = args(&objects);
    assert!(manager_args.contains(&format!("--feature-gates={gates}")), "{manager_args:?}");
    let mut argv = vec!["kruise".to_string()];
    argv.extend(daemon_args.iter().map(|a| (*a).to_string()));
    argv.push("--node-name=n".into());
    let parsed = <kruise::cli::Cli as clap::Parser>::try_parse_from(argv).unwrap();
    let kruise::cli::Command::Daemon(d) = parsed.command else { panic!("daemon") };
    assert!(!d.feature_gates.enabled(kruise::core::features::Gate::DaemonWatchingPod), "the daemon reads the gate");
    // None set: no flag (the daemon's defaults).
    let objects = template(helm, &[]);
    let c = &find(&objects, "DaemonSet", "kruise-daemon")["spec"]["template"]["spec"]["containers"][0];
    assert!(!c["args"].as_array().unwrap().iter().any(|a| a.as_str().unwrap().starts_with("--feature-gates")));

    let objects = template(helm, &["--set", "featureGates=KruiseDaemon=false"]);
    for o in &objects {
        let name = o["metadata"]["name"].as_str().unwrap_or("");
        assert!(!name.starts_with("kruise-daemon"), "{} rendered with KruiseDaemon=false", key(o));
    }
}

/// OpenKruise's `daemon.credentialProvider` values: the plugin config from a ConfigMap and the
/// plugins from a node directory reach `kruise daemon`'s `--plugin-config-file` and
/// `--plugin-bin-dir`, read-only; the AWS credentials directory only when given.
#[test]
fn daemon_credential_provider_values() {
    let helm = helm_or_skip!("daemon_credential_provider_values");
    let objects = template(
        helm,
        &[
            "--set",
            "daemon.credentialProvider.enable=true",
            "--set",
            "daemon.credentialProvider.hostPath=/etc/eks/image-credential-provider",
            "--set",
            "daemon.credentialProvider.awsCredentialsDir=/root/.aws",
        ],
    );
    let ds = find(&objects, "DaemonSet", "kruise-daemon");
    let spec = &ds["spec"]["template"]["spec"];
    let c = &spec["containers"][0];
    let args: Vec<&str> = c["args"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(
        args.contains(&"--plugin-config-file=/credential-provider-config/CredentialProviderPlugin.yaml"),
        "{args:?}"
    );
    assert!(args.contains(&"--plugin-bin-dir=/credential-provider-plugin"), "{args:?}");
    let mounts = c["volumeMounts"].as_array().unwrap();
    for (name, path) in [
        ("credential-provider-plugin-config", "/credential-provider-config"),
        ("credential-provider-plugin", "/credential-provider-plugin"),
        ("aws-credentials-dir", "/root/.aws"),
    ] {
        let m = mounts.iter().find(|m| m["name"] == name).unwrap_or_else(|| panic!("no mount {name}: {mounts:?}"));
        assert_eq!((m["mountPath"].as_str(), m["readOnly"].as_bool()), (Some(path), Some(true)), "{name}");
    }
    let volumes = spec["volumes"].as_array().unwrap();
    let volume = |name: &str| volumes.iter().find(|v| v["name"] == name).cloned().unwrap_or(Value::Null);
    assert_eq!(volume("credential-provider-plugin-config")["configMap"]["name"], "credential-provider-config");
    assert_eq!(volume("credential-provider-plugin")["hostPath"]["path"], "/etc/eks/image-credential-provider");
    assert_eq!(volume("aws-credentials-dir")["hostPath"]["path"], "/root/.aws");
    let mut argv = vec!["kruise".to_string()];
    argv.extend(args.iter().map(|a| a.to_string()));
    argv.push("--node-name=n".into());
    <kruise::cli::Cli as clap::Parser>::try_parse_from(argv).unwrap();

    // Off by default: no plugin flags, no extra volumes.
    let objects = template(helm, &[]);
    let ds = find(&objects, "DaemonSet", "kruise-daemon");
    let text = ds.to_string();
    assert!(!text.contains("credential-provider") && !text.contains("plugin-"), "{text}");
}
