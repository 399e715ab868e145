//! The image pre-download controllers end to end (issue 29 items 2 and 3) on the real control
//! plane of `testenv/`: `kruise serve` with `ImagePullJobGate` on, running with exactly the rights
//! `deploy/rbac.yaml` gives it, and a tiny fake daemon in the test that answers NodeImage tags as
//! kruise-daemon would (a tag behind its spec version turns Pulling, then Succeeded a second
//! later, through the status subresource). Asserted:
//! - the NodeImage controller creates one NodeImage per simulated Node, with its labels;
//! - an ImagePullJob for all 3 nodes with `parallelism: 2` never has more than 2 nodes pulling at
//!   once (sampled by the daemon on every pass) and ends with `succeeded: 3`, `desired: 3` and a
//!   completion time; every NodeImage lists the job as the tag's owner;
//! - an ImagePullJob with `ttlSecondsAfterFinished` is deleted after it completes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod e2e_common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use e2e_common::{Kruise, cluster, install, manager_kubeconfig};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kruise::apis::imagepulljob::v1beta1::ImagePullJob;
use kruise::apis::nodeimage::v1beta1::NodeImage;
use kruise::apis::nodeimage::{ImageTagStatus, NodeImageStatus};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

async fn poll<T, F, Fut>(what: &str, timeout: Duration, check: F) -> T
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Nodes pulling for the job `uid`'s `image:tag`: its tag owned, its status not finished.
fn pulling(nis: &[NodeImage], image: &str, tag: &str, uid: &str) -> usize {
    nis.iter()
        .filter(|ni| {
            let Some(t) = ni.spec.images.get(image).and_then(|s| s.tags.iter().find(|t| t.tag == tag)) else {
                return false;
            };
            if !t.owner_references.iter().any(|r| r.uid.as_deref() == Some(uid)) {
                return false;
            }
            let st = ni
                .status
                .as_ref()
                .and_then(|s| s.image_statuses.get(image))
                .and_then(|s| s.tags.iter().find(|s| s.tag == tag));
            !st.is_some_and(|s| s.version == t.version && (s.phase == "Succeeded" || s.phase == "Failed"))
        })
        .count()
}

/// One pass of the fake daemon over every NodeImage: a tag behind its spec version starts
/// pulling; one pulling for a second succeeds.
async fn daemon_pass(api: &Api<NodeImage>) -> Vec<NodeImage> {
    let nis = api.list(&ListParams::default()).await.unwrap().items;
    let now = Timestamp::now();
    for ni in &nis {
        let mut status: NodeImageStatus = ni.status.clone().unwrap_or_default();
        let mut changed = false;
        for (image, spec) in &ni.spec.images {
            let st = status.image_statuses.entry(image.clone()).or_default();
            for t in &spec.tags {
                let fresh = ImageTagStatus {
                    tag: t.tag.clone(),
                    phase: "Pulling".into(),
                    version: t.version,
                    start_time: Some(Time(now)),
                    ..Default::default()
                };
                match st.tags.iter_mut().find(|s| s.tag == t.tag) {
                    None => {
                        st.tags.push(fresh);
                        changed = true;
                    }
                    Some(s) if s.version != t.version => {
                        *s = fresh;
                        changed = true;
                    }
                    Some(s)
                        if s.phase == "Pulling"
                            && s.start_time.as_ref().is_some_and(|t| now.duration_since(t.0).as_secs() >= 1) =>
                    {
                        s.phase = "Succeeded".into();
                        s.progress = 100;
                        s.completion_time = Some(Time(now));
                        s.image_id = format!("sha256:{}", "0".repeat(64));
                        changed = true;
                    }
                    Some(_) => {}
                }
            }
        }
        if changed {
            let count =
                |p: &str| status.image_statuses.values().flat_map(|s| &s.tags).filter(|t| t.phase == p).count() as i32;
            status.desired = ni.spec.images.values().map(|s| s.tags.len() as i32).sum();
            status.pulling = count("Pulling");
            status.succeeded = count("Succeeded");
            status.failed = count("Failed");
            let patch = json!({"status": status});
            let name = ni.metadata.name.clone().unwrap();
            // A conflict with the controller's own write is retried on the next pass.
            let _ = api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch)).await;
        }
    }
    nis
}

fn job(name: &str, image: &str, ttl: Option<i32>) -> ImagePullJob {
    let mut policy = json!({"type": "Always"});
    if let Some(ttl) = ttl {
        policy["ttlSecondsAfterFinished"] = json!(ttl);
    }
    serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "ImagePullJob",
        "metadata": {"name": name},
        "spec": {"image": image, "parallelism": 2, "completionPolicy": policy,
            "pullPolicy": {"timeoutSeconds": 60, "backoffLimit": 1}}
    }))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn image_pull_jobs_spread_over_node_images_within_parallelism() {
    let c = cluster();
    let dir = tempfile::tempdir().unwrap();
    let certs = tempfile::tempdir().unwrap();
    let kubeconfig = manager_kubeconfig(dir.path()).await;
    let log = std::env::var("KRUISE_E2E_LOG").unwrap_or_else(|_| "warn".into());
    let made = std::process::Command::new(env!("CARGO_BIN_EXE_kruise"))
        .args(["certs", "--out"])
        .arg(certs.path())
        .status()
        .unwrap();
    assert!(made.success());
    let kruise = Kruise::spawn(certs.path(), &kubeconfig, &["--feature-gates", "ImagePullJobGate=true"], &log);
    install(&[&kruise]).await;
    let client = c.client().await.unwrap();

    // One NodeImage per Node, labels copied (the creation waits 30 s after a Node turns Ready).
    let nodes: Vec<Node> = Api::<Node>::all(client.clone()).list(&ListParams::default()).await.unwrap().items;
    assert_eq!(nodes.len(), 3);
    let api: Api<NodeImage> = Api::all(client.clone());
    poll("a NodeImage per Node", Duration::from_secs(120), || async {
        let nis = api.list(&ListParams::default()).await.ok()?.items;
        let all = nodes.iter().all(|n| {
            nis.iter().any(|ni| ni.metadata.name == n.metadata.name && ni.metadata.labels == n.metadata.labels)
        });
        all.then_some(())
    })
    .await;

    // The fake daemon, sampling how many nodes pull for the job at once.
    let stop = Arc::new(AtomicBool::new(false));
    let most = Arc::new(AtomicUsize::new(0));
    let uid: Arc<std::sync::Mutex<Option<String>>> = Arc::default();
    let daemon = {
        let (api, stop, most, uid) = (api.clone(), Arc::clone(&stop), Arc::clone(&most), Arc::clone(&uid));
        tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                let nis = daemon_pass(&api).await;
                if let Some(u) = uid.lock().unwrap().clone() {
                    most.fetch_max(pulling(&nis, "busybox", "1.36", &u), Ordering::SeqCst);
                }
                tokio::time::sleep(Duration::from_millis(150)).await;
            }
        })
    };

    let ns = c.namespace("e2e-ipj").await.unwrap();
    let jobs: Api<ImagePullJob> = Api::namespaced(client.clone(), ns.name());
    let created = jobs.create(&PostParams::default(), &job("warm", "busybox:1.36", None)).await.unwrap();
    *uid.lock().unwrap() = created.metadata.uid.clone();
    let done = poll("the job to complete", Duration::from_secs(120), || async {
        let j = jobs.get("warm").await.ok()?;
        let s = j.status.clone()?;
        s.completion_time.is_some().then_some(j)
    })
    .await;
    let s = done.status.unwrap();
    assert_eq!((s.desired, s.succeeded, s.failed, s.active), (3, 3, 0, 0), "{s:?}");
    assert_eq!(s.message, "job has completed");
    let most = most.load(Ordering::SeqCst);
    assert!(most <= 2, "{most} nodes pulled at once with parallelism 2");
    assert!(most >= 1, "the daemon saw the job pulling");
    for ni in api.list(&ListParams::default()).await.unwrap().items {
        let t = &ni.spec.images["busybox"].tags[0];
        assert!(t.owner_references.iter().any(|r| r.uid == created.metadata.uid), "{ni:?}");
    }

    // ttlSecondsAfterFinished deletes the job.
    jobs.create(&PostParams::default(), &job("short", "busybox:1.37", Some(2))).await.unwrap();
    poll("the TTL job to complete and be deleted", Duration::from_secs(120), || async {
        match jobs.get_opt("short").await {
            Ok(None) => Some(()),
            _ => None,
        }
    })
    .await;
    stop.store(true, Ordering::SeqCst);
    daemon.await.unwrap();
}
