//! The real kubectl (`--server`, `--validate=false`) against the harness: applying a CRD and a
//! CloneSet (create, then client-side apply's three-way merge patch), table and JSON output,
//! admission warnings and denials as kubectl prints them, `apply --dry-run=server` running
//! admission without storing, and delete (which waits through a field-selected watch).

use crate::common::*;
use kruise_testenv::TestEnv;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

struct Kubectl {
    server: String,
    dir: tempfile::TempDir,
}

struct Out {
    ok: bool,
    stdout: String,
    stderr: String,
}

impl Kubectl {
    fn new(env: &TestEnv) -> Self {
        let dir = tempfile::tempdir().unwrap();
        env.write_kubeconfig(dir.path().join("kubeconfig")).unwrap();
        Self { server: env.url(), dir }
    }

    async fn run(&self, args: &[&str]) -> Out {
        let cache = self.dir.path().join("cache");
        let out = within(
            &format!("kubectl {args:?}"),
            tokio::process::Command::new("kubectl")
                .arg("--server")
                .arg(&self.server)
                .arg("--cache-dir")
                .arg(&cache)
                .args(args)
                .env("KUBECONFIG", self.dir.path().join("kubeconfig"))
                .env("HOME", self.dir.path())
                .kill_on_drop(true)
                .output(),
        )
        .await
        .unwrap();
        Out {
            ok: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    async fn ok(&self, args: &[&str]) -> Out {
        let out = self.run(args).await;
        assert!(out.ok, "kubectl {args:?} failed:\n{}\n{}", out.stdout, out.stderr);
        out
    }

    fn write(&self, name: &str, yaml: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::write(&p, yaml).unwrap();
        p
    }
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn handler(path: &str, req: &Value) -> Value {
    let object = req.get("object").cloned().unwrap_or(Value::Null);
    match path {
        "/default-cloneset" if object.pointer("/spec/updateStrategy").is_none() => json!({
            "allowed": true,
            "patch": [{"op": "add", "path": "/spec/updateStrategy", "value": {"type": "ReCreate"}}],
            "warnings": ["defaulted by test"],
        }),
        "/validate-cloneset" => match object.pointer("/spec/replicas").and_then(Value::as_i64) {
            Some(r) if r > 10 => json!({"allowed": false, "status": {"code": 422, "reason": "Invalid",
                "message": format!("spec.replicas: Invalid value: {r}: must be at most 10")}}),
            _ => json!({"allowed": true}),
        },
        _ => json!({"allowed": true}),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_applies_gets_and_deletes_a_cloneset() {
    let env = TestEnv::start().await.unwrap();
    let kubectl = Kubectl::new(&env);
    let out = kubectl.ok(&["apply", "--validate=false", "-f", path(&fixture("cloneset-crd.yaml"))]).await;
    assert!(
        out.stdout.contains("customresourcedefinition.apiextensions.k8s.io/clonesets.apps.kruise.io created"),
        "{}",
        out.stdout
    );

    let wh = TestWebhook::start("webhooks", "admission", handler).await;
    env.set_service("webhooks", "admission", 443, wh.addr);
    let rules = rule(&["apps.kruise.io"], &["v1alpha1"], &["clonesets"], &["CREATE", "UPDATE"]);
    env.register_webhooks(
        &webhook_config(
            "MutatingWebhookConfiguration",
            "kruise-mutating",
            vec![hook("mcloneset.testenv.io", "/default-cloneset", rules.clone(), json!({}))],
        ),
        wh.ca_pem.as_bytes(),
    )
    .await
    .unwrap();
    env.register_webhooks(
        &webhook_config(
            "ValidatingWebhookConfiguration",
            "kruise-validating",
            vec![hook("vcloneset.testenv.io", "/validate-cloneset", rules, json!({}))],
        ),
        wh.ca_pem.as_bytes(),
    )
    .await
    .unwrap();

    let manifest = std::fs::read_to_string(fixture("cloneset.yaml")).unwrap();
    let out = kubectl.ok(&["apply", "--validate=false", "-f", path(&fixture("cloneset.yaml"))]).await;
    assert!(out.stdout.contains("cloneset.apps.kruise.io/sample created"), "{}", out.stdout);
    assert!(out.stderr.contains("Warning: defaulted by test"), "{}", out.stderr);

    let out = kubectl.ok(&["get", "clonesets"]).await;
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(lines[0].starts_with("NAME") && lines[0].contains("DESIRED") && lines[0].contains("AGE"), "{}", out.stdout);
    assert!(lines[1].starts_with("sample") && lines[1].contains(" 3 "), "{}", out.stdout);
    let got: Value =
        serde_json::from_str(&kubectl.ok(&["get", "cloneset", "sample", "-o", "json"]).await.stdout).unwrap();
    assert_eq!(got["spec"]["replicas"], 3);
    assert_eq!(got["spec"]["updateStrategy"]["type"], "ReCreate");
    assert!(got["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"].is_string());

    // A second apply patches (three-way merge) and keeps the webhook's default.
    let five = kubectl.write("five.yaml", &manifest.replace("replicas: 3", "replicas: 5"));
    let out = kubectl.ok(&["apply", "--validate=false", "-f", path(&five)]).await;
    assert!(out.stdout.contains("cloneset.apps.kruise.io/sample configured"), "{}", out.stdout);
    let stored = clonesets(&env.client().unwrap(), "default").get("sample").await.unwrap();
    assert_eq!(stored.data["spec"]["replicas"], 5);
    assert_eq!(stored.data["spec"]["updateStrategy"]["type"], "ReCreate");
    assert_eq!(stored.metadata.generation, Some(2));
    let out = kubectl.ok(&["apply", "--validate=false", "-f", path(&five)]).await;
    assert!(out.stdout.contains("cloneset.apps.kruise.io/sample unchanged"), "{}", out.stdout);

    // Denials read as kube-apiserver's.
    let eleven = kubectl.write("eleven.yaml", &manifest.replace("replicas: 3", "replicas: 11"));
    let out = kubectl.run(&["apply", "--validate=false", "-f", path(&eleven)]).await;
    assert!(!out.ok);
    assert!(
        out.stderr.contains("admission webhook \"vcloneset.testenv.io\" denied the request: spec.replicas: Invalid value: 11: must be at most 10"),
        "{}",
        out.stderr
    );

    // Server-side dry run: admission runs (with dryRun), nothing is stored.
    let dry = kubectl.write("dry.yaml", &manifest.replace("name: sample", "name: dry"));
    let out = kubectl.ok(&["apply", "--validate=false", "--dry-run=server", "-f", path(&dry)]).await;
    assert!(out.stdout.contains("cloneset.apps.kruise.io/dry created (server dry run)"), "{}", out.stdout);
    let reviews = wh.requests_on("/validate-cloneset");
    let dry_review = reviews.iter().find(|r| r["name"] == "dry").expect("the validating webhook saw the dry run");
    assert_eq!(dry_review["dryRun"], true);
    assert_eq!(dry_review["object"]["spec"]["updateStrategy"]["type"], "ReCreate", "mutation ran first");
    let out = kubectl.run(&["get", "cloneset", "dry"]).await;
    assert!(!out.ok && out.stderr.contains("NotFound"), "{}", out.stderr);
    let eleven_dry = kubectl.write(
        "eleven-dry.yaml",
        &manifest.replace("name: sample", "name: dry").replace("replicas: 3", "replicas: 11"),
    );
    let out = kubectl.run(&["apply", "--validate=false", "--dry-run=server", "-f", path(&eleven_dry)]).await;
    assert!(!out.ok && out.stderr.contains("denied the request"), "{}", out.stderr);

    // Built-in kinds: a second apply sends a strategic merge patch ($setElementOrder, keyed lists).
    let pod = |image: &str, env_value: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: main\n    image: {image}\n    env:\n    - name: A\n      value: \"{env_value}\"\n  - name: side\n    image: envoy:1\n"
        )
    };
    let web1 = kubectl.write("web1.yaml", &pod("nginx:1", "1"));
    assert!(kubectl.ok(&["apply", "--validate=false", "-f", path(&web1)]).await.stdout.contains("pod/web created"));
    let web2 = kubectl.write("web2.yaml", &pod("nginx:2", "2"));
    assert!(kubectl.ok(&["apply", "--validate=false", "-f", path(&web2)]).await.stdout.contains("pod/web configured"));
    let web: Value = serde_json::from_str(&kubectl.ok(&["get", "pod", "web", "-o", "json"]).await.stdout).unwrap();
    assert_eq!(web["spec"]["containers"][0]["image"], "nginx:2");
    assert_eq!(web["spec"]["containers"][0]["env"], json!([{"name": "A", "value": "2"}]));
    assert_eq!(web["spec"]["containers"][1]["name"], "side");
    let out = kubectl.ok(&["get", "namespaces"]).await;
    assert!(out.stdout.contains("kube-system"), "{}", out.stdout);
    let out = kubectl.ok(&["get", "pods", "--field-selector", "metadata.name=web", "-o", "name"]).await;
    assert_eq!(out.stdout.trim(), "pod/web");

    let out = kubectl.ok(&["delete", "cloneset", "sample"]).await;
    assert!(out.stdout.contains("cloneset.apps.kruise.io \"sample\" deleted"), "{}", out.stdout);
    let out = kubectl.run(&["get", "cloneset", "sample"]).await;
    assert!(!out.ok && out.stderr.contains("clonesets.apps.kruise.io \"sample\" not found"), "{}", out.stderr);
}
