//! The container runtime of each simulated node, as `kruise daemon` sees it (issue 29 item 6): a
//! [`FakeRuntime`] serving CRI v1 on a unix socket of its own, whose images are the node's. An
//! image pulled through the socket shows in the node's `status.images` (names and sizeBytes, as
//! the kubelet reports them); a pod container started on the node pulls its image into the
//! node's runtime and reports the imageID the runtime gives it (see `pods.rs`).
//!
//! The node runtimes are shared by every test of a binary: tests script and pull images whose
//! names are their own.

use crate::Error;
use crate::kubelet::nodes::NodeInfo;
use k8s_openapi::api::core::v1::Node;
use kruise_cri::fake::FakeRuntime;
use kruise_cri::v1;
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::sync::mpsc;

/// The kubelet's `nodeStatusMaxImages` default: the node status lists the biggest 50 images.
pub const MAX_IMAGES_IN_NODE_STATUS: usize = 50;

/// The kubelet's `MaxNamesPerImageInNodeStatus`.
pub const MAX_NAMES_PER_IMAGE: usize = 5;

/// One node's runtime.
#[derive(Clone)]
pub struct NodeRuntime {
    /// The node's name.
    pub node: String,
    /// The socket its CRI service listens on.
    pub socket: PathBuf,
    /// The runtime, to script and inspect.
    pub runtime: FakeRuntime,
}

/// The runtimes of all simulated nodes, and the directory of their sockets.
pub struct NodeRuntimes {
    dir: PathBuf,
    nodes: Vec<NodeRuntime>,
    // Kept for the sockets' lifetime when the directory is ours.
    _owned_dir: Option<tempfile::TempDir>,
}

impl NodeRuntimes {
    /// Starts a runtime per node, sockets `<dir>/<node>.sock` (a temp dir of their own when `dir`
    /// is `None`), on the current tokio runtime; each node's images are reported into its status.
    pub async fn start(client: kube::Client, nodes: &[NodeInfo], dir: Option<&Path>) -> Result<Self, Error> {
        let (dir, owned) = match dir {
            Some(d) => {
                std::fs::create_dir_all(d).map_err(|e| Error::io(format!("create {}", d.display()), e))?;
                (d.to_path_buf(), None)
            }
            None => {
                let t = tempfile::Builder::new()
                    .prefix("kruise-cri-")
                    .tempdir()
                    .map_err(|e| Error::io("CRI socket directory", e))?;
                (t.path().to_path_buf(), Some(t))
            }
        };
        let (tx, rx) = mpsc::unbounded_channel::<usize>();
        let mut runtimes = Vec::with_capacity(nodes.len());
        for (i, node) in nodes.iter().enumerate() {
            let runtime = FakeRuntime::new("containerd");
            let socket = dir.join(format!("{}.sock", node.name));
            let _server =
                runtime.serve(&socket).await.map_err(|e| Error::io(format!("serve {}", socket.display()), e))?;
            let tx = tx.clone();
            runtime.on_pull(move |_| {
                let _ = tx.send(i);
            });
            runtimes.push(NodeRuntime { node: node.name.clone(), socket, runtime });
        }
        let runtimes = Self { dir, nodes: runtimes, _owned_dir: owned };
        tokio::spawn(report_images(client, runtimes.nodes.clone(), rx));
        Ok(runtimes)
    }

    /// The socket directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The runtime of `node`.
    pub fn get(&self, node: &str) -> Option<&NodeRuntime> {
        self.nodes.iter().find(|n| n.node == node)
    }

    /// Every node's runtime.
    pub fn all(&self) -> &[NodeRuntime] {
        &self.nodes
    }
}

/// Writes `status.images` of the nodes whose runtime gained an image, coalescing bursts of pulls
/// into one write per node.
async fn report_images(client: kube::Client, nodes: Vec<NodeRuntime>, mut rx: mpsc::UnboundedReceiver<usize>) {
    let api: Api<Node> = Api::all(client);
    while let Some(first) = rx.recv().await {
        let mut dirty = BTreeSet::from([first]);
        while let Ok(i) = rx.try_recv() {
            dirty.insert(i);
        }
        for i in dirty {
            let Some(n) = nodes.get(i) else { continue };
            let patch = json!({"status": {"images": node_images(&n.runtime.images())}});
            // A merge patch replaces the list: the runtime's images are the whole truth.
            if let Err(e) = api.patch_status(&n.node, &PatchParams::default(), &Patch::Merge(&patch)).await {
                tracing::warn!(node = %n.node, error = %e, "node images report failed");
            }
        }
    }
}

/// `node.status.images` as the kubelet writes it (`setNodeStatusImages`): the biggest
/// [`MAX_IMAGES_IN_NODE_STATUS`] images, each named by its repo digests then its repo tags, at most
/// [`MAX_NAMES_PER_IMAGE`] names.
pub fn node_images(images: &[v1::Image]) -> Value {
    let mut sorted: Vec<&v1::Image> = images.iter().collect();
    // Ties by id keep the order stable, so unchanged images do not look like a change.
    sorted.sort_by(|a, b| b.size.cmp(&a.size).then_with(|| a.id.cmp(&b.id)));
    Value::Array(
        sorted
            .into_iter()
            .take(MAX_IMAGES_IN_NODE_STATUS)
            .map(|i| {
                let names: Vec<&String> =
                    i.repo_digests.iter().chain(i.repo_tags.iter()).take(MAX_NAMES_PER_IMAGE).collect();
                json!({"names": names, "sizeBytes": i.size})
            })
            .collect(),
    )
}

/// The handle the pod loop uses to pull a container's image into its node's runtime.
#[derive(Clone, Default)]
pub(crate) struct Runtimes(pub(crate) Arc<Vec<NodeRuntime>>);

impl Runtimes {
    pub(crate) fn of(&self, node: &str) -> Option<FakeRuntime> {
        self.0.iter().find(|n| n.node == node).map(|n| n.runtime.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(id: &str, size: u64, digests: &[&str], tags: &[&str]) -> v1::Image {
        v1::Image {
            id: id.into(),
            size,
            repo_digests: digests.iter().map(|s| s.to_string()).collect(),
            repo_tags: tags.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn node_images_as_the_kubelet_reports_them() {
        let many_tags: Vec<String> = (0..7).map(|i| format!("r/x:{i}")).collect();
        let many: Vec<&str> = many_tags.iter().map(String::as_str).collect();
        let images = vec![
            image("sha256:b", 10, &["r/b@sha256:b"], &["r/b:1"]),
            image("sha256:a", 30, &["r/a@sha256:a"], &["r/a:1", "r/a:latest"]),
            image("sha256:x", 20, &[], &many),
            image("sha256:c", 10, &[], &["r/c:1"]),
        ];
        let got = node_images(&images);
        assert_eq!(
            got,
            json!([
                {"names": ["r/a@sha256:a", "r/a:1", "r/a:latest"], "sizeBytes": 30},
                {"names": ["r/x:0", "r/x:1", "r/x:2", "r/x:3", "r/x:4"], "sizeBytes": 20},
                {"names": ["r/b@sha256:b", "r/b:1"], "sizeBytes": 10},
                {"names": ["r/c:1"], "sizeBytes": 10},
            ])
        );
        let lots: Vec<v1::Image> = (0..60).map(|i| image(&format!("sha256:{i:02}"), i, &[], &["t"])).collect();
        let got = node_images(&lots);
        let got = got.as_array().unwrap();
        assert_eq!(got.len(), MAX_IMAGES_IN_NODE_STATUS);
        assert_eq!(got[0]["sizeBytes"], 59);
        assert_eq!(got[49]["sizeBytes"], 10);
    }
}
