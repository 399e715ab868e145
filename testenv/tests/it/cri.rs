//! Each simulated node's container runtime over its CRI socket (issue 29 item 6): an image pulled
//! through a node's socket shows in that node's `status.images`, only there; a pod's container
//! started on a node pulls its image into that node's runtime and reports the runtime's imageID;
//! scripted failures reach the client classified. The runtimes are shared by the tests of this
//! binary, so every test uses image names of its own.

use crate::common::{cluster, eventually};
use k8s_openapi::api::core::v1::{Node, Pod};
use kruise_cri::fake::Behaviour;
use kruise_cri::{CriClient, v1};
use kube::api::{Api, PostParams};
use serde_json::json;
use std::time::Duration;

fn unique(prefix: &str) -> String {
    let suffix: String = (0..6).map(|_| fastrand::lowercase()).collect();
    format!("{prefix}-{suffix}")
}

async fn connect(node: &str) -> CriClient {
    let socket = cluster().cri_socket(node);
    CriClient::connect(socket.to_str().unwrap(), Duration::from_secs(5)).await.unwrap()
}

/// The `(names, sizeBytes)` of the node's status image named `name`, if listed.
async fn node_image(node: &str, name: &str) -> Option<(Vec<String>, i64)> {
    let api: Api<Node> = Api::all(cluster().client().await.ok()?);
    let n = api.get(node).await.ok()?;
    n.status?.images?.into_iter().find_map(|i| {
        let names = i.names.unwrap_or_default();
        names.iter().any(|n| n == name).then(|| (names.clone(), i.size_bytes.unwrap_or_default()))
    })
}

#[tokio::test]
async fn an_image_pulled_through_a_nodes_socket_shows_in_its_status() {
    let c = cluster();
    let nodes = c.kubelet().nodes();
    let node = nodes[1].clone();
    let client = connect(&node).await;
    let version = client.version().await.unwrap();
    assert_eq!((version.runtime_name.as_str(), version.runtime_api_version.as_str()), ("containerd", "v1"));

    let image = format!("registry.example/cri-it/{}:1", unique("pulled"));
    let id = client.pull_image(&image, None, None).await.unwrap();
    let pulled = c.cri(&node).unwrap().image(&image).unwrap();
    assert_eq!(pulled.id, id);
    assert_eq!(client.image_status(&image).await.unwrap().unwrap().id, id);

    let (names, size) = eventually(&format!("{image} in {node}'s status.images"), Duration::from_secs(30), || {
        node_image(&node, &image)
    })
    .await;
    // Named by repo digest then tag, as the kubelet lists them.
    assert_eq!(names, [pulled.repo_digests[0].clone(), image.clone()]);
    assert_eq!(size, i64::try_from(pulled.size).unwrap());

    for other in nodes.iter().filter(|n| **n != node) {
        assert!(node_image(other, &image).await.is_none(), "{image} is not on {other}");
        assert!(c.cri(other).unwrap().image(&image).is_none());
    }
}

#[tokio::test]
async fn scripted_failures_reach_the_client_and_leave_the_node_as_it_was() {
    let c = cluster();
    let node = c.kubelet().nodes()[2].clone();
    let runtime = c.cri(&node).unwrap();
    let private = format!("registry.example/cri-it/{}:1", unique("private"));
    let missing = format!("registry.example/cri-it/{}:1", unique("missing"));
    runtime
        .script(&private, Behaviour::RequireAuth { username: "u".into(), password: "p".into(), delay: Duration::ZERO });
    runtime.script(&missing, Behaviour::NotFound);
    let client = connect(&node).await;

    let e = client.pull_image(&missing, None, None).await.unwrap_err();
    assert!(e.is_not_found(), "{e}");
    let wrong = v1::AuthConfig { username: "u".into(), password: "nope".into(), ..Default::default() };
    let e = client.pull_image(&private, Some(wrong), None).await.unwrap_err();
    assert!(e.is_auth_failure(), "{e}");
    assert!(runtime.image(&private).is_none() && runtime.image(&missing).is_none());

    let right = v1::AuthConfig { username: "u".into(), password: "p".into(), ..Default::default() };
    client.pull_image(&private, Some(right), None).await.unwrap();
    eventually(&format!("{private} in {node}'s status.images"), Duration::from_secs(30), || {
        node_image(&node, &private)
    })
    .await;
    assert!(node_image(&node, &missing).await.is_none());
}

#[tokio::test]
async fn a_pods_container_pulls_into_its_nodes_runtime_and_reports_its_image_id() {
    let c = cluster();
    let ns = c.namespace("cri-pod").await.unwrap();
    let api: Api<Pod> = Api::namespaced(c.client().await.unwrap(), ns.name());
    let image = format!("registry.example/cri-it/{}:2", unique("app"));
    let pod: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "app"},
        "spec": {"containers": [{"name": "app", "image": image}]}
    }))
    .unwrap();
    api.create(&PostParams::default(), &pod).await.unwrap();
    let (node, image_id) = eventually("pod app running with an imageID", Duration::from_secs(60), || async {
        let p = api.get("app").await.ok()?;
        let node = p.spec?.node_name?;
        let status = p.status?.container_statuses?.into_iter().next()?;
        status.state?.running?;
        Some((node, status.image_id))
    })
    .await;
    let pulled = c.cri(&node).unwrap().image(&image).expect("the kubelet pulled the image into the node's runtime");
    assert_eq!(image_id, pulled.repo_digests[0], "imageID is the runtime's repo digest");
    // The daemon sees it through the socket as present.
    assert_eq!(connect(&node).await.image_status(&image).await.unwrap().unwrap().id, pulled.id);
    eventually(&format!("{image} in {node}'s status.images"), Duration::from_secs(30), || node_image(&node, &image))
        .await;
}
