//! Image pre-download end to end with REAL daemons (issue 29 "done means": a daemon per simulated
//! node) on the real control plane of `testenv/`: `kruise serve` with `ImagePullJobGate` on and
//! the rights of `deploy/rbac.yaml`, and one `kruise daemon` process per simulated node with the
//! `kruise-daemon` ServiceAccount's token (`deploy/daemon-rbac.yaml`), each pulling through its
//! node's CRI socket (the testenv FakeRuntime, whose pulls show in that node's `status.images`).
//! ImagePullJobs are written as a user writes them: `apps.kruise.io/v1alpha1` through kubectl.
//! Asserted:
//! - `parallelism: 2` over 3 nodes, each pull taking 2 s: sampled every 20 ms, never more than 2
//!   runtimes pulling at once (the runtimes' own in-flight counts) nor more than 2 NodeImages with
//!   an unfinished tag of the job; the job ends `desired: 3`, `succeeded: 3`, with a completion
//!   time; every NodeImage's tag says Succeeded with the runtime's image id; every node's
//!   `status.images` names the image;
//! - an image the runtime of one node answers "not found": that node's tag ends Failed with the
//!   runtime's message after `backoffLimit + 1` attempts (the daemon's retries, as kruise-daemon
//!   retries before reporting), the job counts it (`failed: 1`, `failedNodes: [node]`,
//!   `succeeded: 2`) and completes — kruise counts a node failed only once its NodeImage says so;
//! - a job with `ttlSecondsAfterFinished: 2` completes and is then deleted.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod e2e_common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use e2e_common::{Kubectl, cluster, eventually as poll, start_daemons};
use k8s_openapi::api::core::v1::Node;
use kruise::apis::nodeimage::v1beta1::NodeImage;
use kruise_cri::fake::{Behaviour, FakeRuntime, image_id};
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use kube::core::GroupVersionKind;
use serde_json::{Value, json};

/// The job's image tag as NodeImage `ni` reports it (its status entry), when its spec has the tag.
fn tag_status(ni: &NodeImage, image: &str, tag: &str) -> Option<Value> {
    let st = ni.status.as_ref()?.image_statuses.get(image)?;
    let t = st.tags.iter().find(|t| t.tag == tag)?;
    Some(serde_json::to_value(t).unwrap())
}

/// NodeImages with a tag `tag` of `image` whose status (at the tag's spec version) is not yet
/// Succeeded or Failed: what the controller's `parallelism` bounds.
fn unfinished(nis: &[NodeImage], image: &str, tag: &str) -> usize {
    nis.iter()
        .filter(|ni| {
            let Some(t) = ni.spec.images.get(image).and_then(|s| s.tags.iter().find(|t| t.tag == tag)) else {
                return false;
            };
            let st = ni
                .status
                .as_ref()
                .and_then(|s| s.image_statuses.get(image))
                .and_then(|s| s.tags.iter().find(|s| s.tag == tag));
            !st.is_some_and(|s| s.version == t.version && (s.phase == "Succeeded" || s.phase == "Failed"))
        })
        .count()
}

fn v1alpha1_jobs(client: kube::Client, ns: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("apps.kruise.io", "v1alpha1", "ImagePullJob");
    Api::namespaced_with(client, ns, &ApiResource::from_gvk(&gvk))
}

/// `kubectl apply` of a v1alpha1 ImagePullJob as a user writes it, for `nodes` by name.
async fn apply_job(kubectl: &Kubectl, ns: &str, nodes: &[String], name: &str, image: &str, spec: Value) {
    let mut spec = spec;
    spec["image"] = json!(image);
    spec["selector"] = json!({"names": nodes});
    let job = json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "ImagePullJob",
        "metadata": {"name": name, "namespace": ns}, "spec": spec});
    let path = kubectl.dir().join(format!("{name}.json"));
    std::fs::write(&path, job.to_string()).unwrap();
    let (ok, out, err) = kubectl.run(&["apply", "-f", path.to_str().unwrap()]).await;
    assert!(ok, "kubectl apply: {out}{err}");
}

/// The job's status once it has a completion time.
async fn completed(jobs: &Api<DynamicObject>, name: &str) -> Value {
    poll(&format!("job {name} to complete"), Duration::from_secs(120), || async {
        let j = jobs.get(name).await.ok()?;
        let s = j.data.get("status")?.clone();
        s.get("completionTime").is_some_and(|t| !t.is_null()).then_some(s)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_daemons_pull_image_pull_jobs_through_each_nodes_runtime() {
    let started = Instant::now();
    let env = start_daemons("ImagePullJobGate=true", false).await;
    let c = cluster();
    let client = env.client.clone();
    let nodes = env.nodes.clone();
    assert_eq!(nodes.len(), 3, "{nodes:?}");
    let runtimes: Vec<FakeRuntime> = nodes.iter().map(|n| c.cri(n).expect("a simulated node's runtime")).collect();

    // The NodeImage controller makes one NodeImage per Node (30 s after the Node turned Ready).
    let node_images: Api<NodeImage> = Api::all(client.clone());
    poll("a NodeImage per Node", Duration::from_secs(120), || async {
        let nis = node_images.list(&ListParams::default()).await.ok()?.items;
        nodes.iter().all(|n| nis.iter().any(|ni| ni.metadata.name.as_deref() == Some(n))).then_some(())
    })
    .await;

    let ns = c.namespace("e2e-ipjd").await.unwrap();
    let jobs = v1alpha1_jobs(client.clone(), ns.name());
    let kubectl = Kubectl::new();
    let suffix: String = (0..6).map(|_| fastrand::lowercase()).collect();
    let apply = |name: &'static str, image: String, spec: Value| {
        let (kubectl, nodes, ns) = (&kubectl, &nodes, ns.name());
        async move { apply_job(kubectl, ns, nodes, name, &image, spec).await }
    };

    // 1. parallelism 2 over 3 nodes, each pull taking 2 s.
    let repo = format!("e2e.local/warm-{suffix}");
    let image = format!("{repo}:1");
    for rt in &runtimes {
        rt.script(&image, Behaviour::Succeed { delay: Duration::from_secs(2) });
        rt.reset_max_concurrent_pulls();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let (most_pulling, most_unfinished, samples) =
        (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let sampler = {
        let (stop, most_pulling, most_unfinished, samples) =
            (Arc::clone(&stop), Arc::clone(&most_pulling), Arc::clone(&most_unfinished), Arc::clone(&samples));
        let (runtimes, node_images, repo) = (runtimes.clone(), node_images.clone(), repo.clone());
        tokio::spawn(async move {
            let mut tick = 0u32;
            while !stop.load(Ordering::SeqCst) {
                let now: usize = runtimes.iter().map(FakeRuntime::pulls_in_flight).sum();
                most_pulling.fetch_max(now, Ordering::SeqCst);
                samples.fetch_add(1, Ordering::SeqCst);
                // The NodeImages every 5th sample (100 ms): a list is dearer than a lock.
                if tick.is_multiple_of(5)
                    && let Ok(nis) = node_images.list(&ListParams::default()).await
                {
                    most_unfinished.fetch_max(unfinished(&nis.items, &repo, "1"), Ordering::SeqCst);
                }
                tick += 1;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };
    apply(
        "warm",
        image.clone(),
        json!({"parallelism": 2, "completionPolicy": {"type": "Always"},
            "pullPolicy": {"timeoutSeconds": 60, "backoffLimit": 1}}),
    )
    .await;
    let s = completed(&jobs, "warm").await;
    stop.store(true, Ordering::SeqCst);
    sampler.await.unwrap();
    assert_eq!((&s["desired"], &s["succeeded"], &s["failed"]), (&json!(3), &json!(3), &json!(0)), "{s}");
    assert_eq!(s["message"], "job has completed", "{s}");
    let (most_pulling, most_unfinished) = (most_pulling.load(Ordering::SeqCst), most_unfinished.load(Ordering::SeqCst));
    eprintln!(
        "parallelism 2: at most {most_pulling} runtimes pulling, {most_unfinished} NodeImages unfinished ({} samples)",
        samples.load(Ordering::SeqCst)
    );
    assert!(most_pulling <= 2, "{most_pulling} nodes pulled at once with parallelism 2");
    assert!(most_unfinished <= 2, "{most_unfinished} NodeImages pulling at once with parallelism 2");
    // 2 s pulls sampled every 20 ms: the bound was reached, not vacuously met.
    assert_eq!(most_pulling, 2, "the runtimes were seen pulling 2 at once");
    for (node, rt) in nodes.iter().zip(&runtimes) {
        assert_eq!(rt.max_concurrent_pulls(), 1, "{node}");
        assert_eq!(rt.pulls().iter().filter(|p| **p == image).count(), 1, "{node}: {:?}", rt.pulls());
        assert!(rt.image(&image).is_some(), "{node}");
        let ni = node_images.get(node).await.unwrap();
        let t = tag_status(&ni, &repo, "1").unwrap_or_else(|| panic!("{node}: {:?}", ni.status));
        assert_eq!(t["phase"], "Succeeded", "{node}: {t}");
        assert_eq!(t["imageID"], format!("{repo}@{}", image_id(&image)), "{node}: {t}");
    }
    poll("the image in every node's status.images", Duration::from_secs(30), || async {
        let nodes_now = Api::<Node>::all(client.clone()).list(&ListParams::default()).await.ok()?.items;
        let has = |n: &Node| {
            n.status
                .as_ref()
                .and_then(|s| s.images.as_ref())
                .is_some_and(|imgs| imgs.iter().any(|i| i.names.as_ref().is_some_and(|ns| ns.contains(&image))))
        };
        (nodes_now.len() == 3 && nodes_now.iter().all(has)).then_some(())
    })
    .await;

    // 2. Not found on one node: Failed there with the runtime's message, counted by the job.
    let repo = format!("e2e.local/gone-{suffix}");
    let image = format!("{repo}:1");
    let broken = &nodes[1];
    for (node, rt) in nodes.iter().zip(&runtimes) {
        let b =
            if node == broken { Behaviour::NotFound } else { Behaviour::Succeed { delay: Duration::from_millis(200) } };
        rt.script(&image, b);
    }
    apply(
        "gone",
        image.clone(),
        json!({"parallelism": 3, "completionPolicy": {"type": "Always"},
            "pullPolicy": {"timeoutSeconds": 60, "backoffLimit": 1}}),
    )
    .await;
    let s = completed(&jobs, "gone").await;
    assert_eq!((&s["desired"], &s["succeeded"], &s["failed"]), (&json!(3), &json!(2), &json!(1)), "{s}");
    assert_eq!(s["failedNodes"], json!([broken]), "{s}");
    assert_eq!(s["message"], "job has completed", "{s}");
    for (node, rt) in nodes.iter().zip(&runtimes) {
        let ni = node_images.get(node).await.unwrap();
        let t = tag_status(&ni, &repo, "1").unwrap_or_else(|| panic!("{node}: {:?}", ni.status));
        let attempts = rt.pulls().iter().filter(|p| **p == image).count();
        if node == broken {
            assert_eq!(t["phase"], "Failed", "{node}: {t}");
            let runtime_says = format!(
                "failed to pull and unpack image \"{image}\": failed to resolve reference \"{image}\": {image}: not found"
            );
            // kruise's wording around the gRPC status as Go's CRI client prints it.
            let expected =
                format!("Failed to pull image reference {image:?}: rpc error: code = Unknown desc = {runtime_says}");
            assert_eq!(t["message"], expected, "{t}");
            assert_eq!(attempts, 2, "backoffLimit 1: two attempts on {node}");
            assert!(rt.image(&image).is_none());
        } else {
            assert_eq!(t["phase"], "Succeeded", "{node}: {t}");
            assert_eq!(attempts, 1, "{node}");
        }
    }

    // 3. ttlSecondsAfterFinished: completes, then is deleted.
    let image = format!("e2e.local/brief-{suffix}:1");
    for rt in &runtimes {
        rt.script(&image, Behaviour::Succeed { delay: Duration::from_secs(1) });
    }
    apply(
        "brief",
        image.clone(),
        json!({"parallelism": 3, "completionPolicy": {"type": "Always", "ttlSecondsAfterFinished": 2}}),
    )
    .await;
    let s = completed(&jobs, "brief").await;
    assert_eq!(s["succeeded"], 3, "{s}");
    let done = Instant::now();
    poll("the TTL job to be deleted", Duration::from_secs(60), || async {
        matches!(jobs.get_opt("brief").await, Ok(None)).then_some(())
    })
    .await;
    eprintln!("ttl job deleted {:?} after it was seen complete", done.elapsed());
    eprintln!("e2e_image_daemon took {:?}", started.elapsed());
}
