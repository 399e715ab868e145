//! Deletion protection end to end (spec §8.2; issue 31 item 3): `kruise serve
//! --feature-gates=ResourcesDeletionProtection=true` with deploy/'s ServiceAccount (so the
//! listing a Cascading namespace check does needs only deploy/rbac.yaml), the generated
//! `webhook-config/` registered, and kubectl deleting as a user would: a namespace labelled
//! `Always` is refused with kruise's message, one labelled `Cascading` is refused while a pod in it
//! is active, a Deployment labelled `Cascading` is refused while it wants 2 replicas and deleted
//! once scaled to 0. Its own test binary: it registers webhooks with its own CA.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod e2e_common;

use e2e_common::{Kruise, Kubectl, cluster, install, manager_kubeconfig, root};

const ALWAYS: &str = "forbidden by ResourcesProtectionDeletion for policy.kruise.io/delete-protection=Always";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_delete_is_refused_for_protected_objects() {
    let certs = tempfile::tempdir().unwrap();
    let kubeconfig = manager_kubeconfig(certs.path()).await;
    let kruise = Kruise::start(certs.path(), &kubeconfig, &["--feature-gates=ResourcesDeletionProtection=true"]);
    install(&[&kruise]).await;
    let ca = std::fs::read(certs.path().join("ca.crt")).unwrap();
    let c = cluster();
    kruise_testenv::register_webhooks(&c.client().await.unwrap(), &root().join("webhook-config"), &ca).await.unwrap();
    let kubectl = Kubectl::new();

    // A namespace labelled Always cannot be deleted; without the label it can.
    let (ok, _, err) = kubectl.run(&["create", "namespace", "e2e-protect-always"]).await;
    assert!(ok, "{err}");
    let (ok, _, err) =
        kubectl.run(&["label", "namespace", "e2e-protect-always", "policy.kruise.io/delete-protection=Always"]).await;
    assert!(ok, "{err}");
    let (ok, _, err) = kubectl.run(&["delete", "namespace", "e2e-protect-always", "--wait=false"]).await;
    assert!(!ok, "the namespace must be protected");
    assert!(err.contains("admission webhook \"vnamespace.kb.io\" denied the request"), "{err}");
    assert!(err.contains(ALWAYS), "{err}");
    let (ok, out, err) =
        kubectl.run(&["get", "namespace", "e2e-protect-always", "-o", "jsonpath={.status.phase}"]).await;
    assert!(ok && out == "Active", "{out}{err}");
    let (ok, _, err) =
        kubectl.run(&["label", "namespace", "e2e-protect-always", "policy.kruise.io/delete-protection-"]).await;
    assert!(ok, "{err}");
    let (ok, _, err) = kubectl.run(&["delete", "namespace", "e2e-protect-always", "--wait=false"]).await;
    assert!(ok, "{err}");

    // Cascading: refused while a pod in it is active (listed by the manager at admission time).
    let ns = "e2e-protect-cascading";
    let (ok, _, err) = kubectl.run(&["create", "namespace", ns]).await;
    assert!(ok, "{err}");
    let (ok, _, err) = kubectl.run(&["label", "namespace", ns, "policy.kruise.io/delete-protection=Cascading"]).await;
    assert!(ok, "{err}");
    let (ok, _, err) = kubectl.run(&["-n", ns, "run", "sleeper", "--image=busybox:1.36", "--restart=Never"]).await;
    assert!(ok, "{err}");
    let (ok, _, err) = kubectl.run(&["delete", "namespace", ns, "--wait=false"]).await;
    assert!(!ok, "a namespace with an active pod must be protected");
    assert!(
        err.contains(
            "forbidden by ResourcesProtectionDeletion for policy.kruise.io/delete-protection=Cascading and active pods 1>0"
        ),
        "{err}"
    );

    // A Deployment labelled Cascading: refused with 2 replicas, deleted at 0.
    let (ok, _, err) =
        kubectl.run(&["-n", ns, "create", "deployment", "web", "--image=nginx:1.25", "--replicas=2"]).await;
    assert!(ok, "{err}");
    let (ok, _, err) =
        kubectl.run(&["-n", ns, "label", "deployment", "web", "policy.kruise.io/delete-protection=Cascading"]).await;
    assert!(ok, "{err}");
    let (ok, _, err) = kubectl.run(&["-n", ns, "delete", "deployment", "web", "--wait=false"]).await;
    assert!(!ok, "a Deployment wanting replicas must be protected");
    assert!(err.contains("admission webhook \"vbuiltindeployment.kb.io\" denied the request"), "{err}");
    assert!(
        err.contains(
            "forbidden by ResourcesProtectionDeletion for policy.kruise.io/delete-protection=Cascading and replicas 2>0"
        ),
        "{err}"
    );
    let (ok, _, err) = kubectl.run(&["-n", ns, "scale", "deployment", "web", "--replicas=0"]).await;
    assert!(ok, "{err}");
    let (ok, _, err) = kubectl.run(&["-n", ns, "delete", "deployment", "web", "--wait=false"]).await;
    assert!(ok, "{err}");

    // Without the label everything goes, and the namespace with it.
    let (ok, _, err) = kubectl.run(&["label", "namespace", ns, "policy.kruise.io/delete-protection-"]).await;
    assert!(ok, "{err}");
    let (ok, _, err) = kubectl.run(&["delete", "namespace", ns, "--wait=false"]).await;
    assert!(ok, "{err}");
}
