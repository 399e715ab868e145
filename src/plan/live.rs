//! `kruise plan cloneset NAME -n NS` (issue 11 item 7): the objects the CloneSet controller would
//! plan with, read from the cluster (kubeconfig, or in-cluster), then planned exactly as manifests
//! are ([`super::plan_manifests`]). Nothing is written. Nodes are read when allowed (they only
//! matter for topology-spread scale-down ranking); the rest must be readable.

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{Node, PersistentVolumeClaim, Pod};
use kube::api::{Api, ListParams};
use kube::{Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::apis::cloneset::CloneSet;
use crate::check::input::Manifest;

/// Why the cluster cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// No kubeconfig and not in a cluster.
    #[error("cannot reach the cluster: {0}")]
    Client(#[source] kube::Error),
    /// A read failed.
    #[error("cannot read {what}: {source}")]
    Read {
        what: String,
        #[source]
        source: kube::Error,
    },
    /// The CloneSet does not exist.
    #[error("CloneSet {0} not found")]
    NotFound(String),
}

/// The kinds `kruise plan` accepts as KIND.
pub fn is_cloneset_kind(kind: &str) -> bool {
    matches!(
        kind.to_ascii_lowercase().as_str(),
        "cloneset" | "clonesets" | "cloneset.apps.kruise.io" | "clonesets.apps.kruise.io"
    )
}

fn manifest<K: Resource<DynamicType = ()> + Serialize>(source: &str, mut o: K) -> Manifest {
    o.meta_mut().managed_fields = None;
    // Listed items carry no apiVersion/kind; the planner's reader needs them.
    let mut object = serde_json::to_value(&o).unwrap_or_default();
    object["apiVersion"] = K::api_version(&()).into_owned().into();
    object["kind"] = K::kind(&()).into_owned().into();
    Manifest { file: source.to_string(), line: 0, object }
}

async fn list<K>(client: &Client, ns: &str, what: &str) -> Result<Vec<K>, LiveError>
where
    K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
{
    let api: Api<K> = Api::namespaced(client.clone(), ns);
    api.list(&ListParams::default())
        .await
        .map(|l| l.items)
        .map_err(|source| LiveError::Read { what: what.to_string(), source })
}

/// The CloneSet `namespace/name` and what it may own, as manifests.
pub async fn read(client: &Client, namespace: &str, name: &str) -> Result<Vec<Manifest>, LiveError> {
    let source = format!("cluster:{namespace}/{name}");
    let api: Api<CloneSet> = Api::namespaced(client.clone(), namespace);
    let cs = api
        .get_opt(name)
        .await
        .map_err(|source| LiveError::Read { what: format!("CloneSet {namespace}/{name}"), source })?
        .ok_or_else(|| LiveError::NotFound(format!("{namespace}/{name}")))?;
    let mut out = vec![manifest(&source, cs)];
    let ns = namespace;
    out.extend(list::<Pod>(client, ns, "pods").await?.into_iter().map(|o| manifest(&source, o)));
    out.extend(list::<PersistentVolumeClaim>(client, ns, "PVCs").await?.into_iter().map(|o| manifest(&source, o)));
    out.extend(
        list::<ControllerRevision>(client, ns, "ControllerRevisions").await?.into_iter().map(|o| manifest(&source, o)),
    );
    // Nodes only refine the topology-spread ranking; a user who may not list them still gets a plan.
    if let Ok(nodes) = Api::<Node>::all(client.clone()).list(&ListParams::default()).await {
        out.extend(nodes.items.into_iter().map(|o| manifest(&source, o)));
    }
    Ok(out)
}

/// [`read`] with the client of the environment (KUBECONFIG, ~/.kube/config or in-cluster).
pub async fn read_default(namespace: &str, name: &str) -> Result<Vec<Manifest>, LiveError> {
    let client = Client::try_default().await.map_err(LiveError::Client)?;
    read(&client, namespace, name).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_manifests() {
        assert!(is_cloneset_kind("CloneSet") && is_cloneset_kind("clonesets.apps.kruise.io"));
        assert!(!is_cloneset_kind("statefulset"));
        let mut p = Pod::default();
        p.metadata.name = Some("web-a".into());
        let m = manifest("cluster:ns/web", p);
        assert_eq!((m.object["apiVersion"].as_str(), m.object["kind"].as_str()), (Some("v1"), Some("Pod")));
        assert_eq!(m.object["metadata"]["name"], "web-a");
    }
}
