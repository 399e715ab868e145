//! `kruise plan cloneset NAME -n NS` (issue 11 item 7), `kruise plan statefulset NAME -n NS`
//! (issue 27 item 7), `kruise plan sidecarset NAME` (issue 28 item 10) and `kruise plan daemonset
//! NAME -n NS` (issue 33 item 5): the objects the CloneSet, Advanced StatefulSet, SidecarSet or
//! Advanced DaemonSet controller would plan with, read from the cluster
//! (kubeconfig, or in-cluster), then planned exactly as manifests are ([`super::plan_workloads`]).
//! Nothing is written. Nodes are read when allowed (they only matter for the CloneSet's
//! topology-spread scale-down ranking); the rest must be readable. An Advanced DaemonSet is read
//! through v1beta1 (the storage version its controller reconciles), and the Nodes must be readable
//! for it: they decide where its pods belong.
//!
//! A SidecarSet is read through v1beta1, the storage version, and converted as the cluster view
//! converts it (v1alpha1 when the cluster serves only that); with it the pods of the namespaces it
//! can reach ([`crate::core::sidecar::scope`]), the Namespaces (their labels feed a
//! `namespaceSelector`; when they may not be listed, the pods' namespaces are read one by one,
//! and one that cannot be read does not match, as for the controller) and its revisions in the
//! manager namespace (`kruise.io/sidecarset-name=NAME`).

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{Namespace, Node, PersistentVolumeClaim, Pod};
use kube::api::{Api, ListParams};
use kube::{Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::apis::SidecarSet;
use crate::apis::cloneset::CloneSet;
use crate::apis::sidecarset::v1beta1;
use crate::apis::statefulset::v1beta1::StatefulSet;
use crate::check::input::Manifest;
use crate::core::sidecar::{Scope, pod_namespace, scope};

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
    /// The workload does not exist.
    #[error("{0} not found")]
    NotFound(String),
}

/// The workload kinds `kruise plan` reads from the cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    CloneSet,
    /// The Advanced StatefulSet (`apps.kruise.io`).
    StatefulSet,
    /// The SidecarSet (cluster-scoped; its revisions live in the manager namespace).
    SidecarSet,
    /// The Advanced DaemonSet (`apps.kruise.io`; planned over every Node).
    DaemonSet,
    /// The UnitedDeployment (planned over its subset workloads of every kind).
    UnitedDeployment,
}

impl Kind {
    /// The kind named by KIND as kubectl accepts it for kruise's resources: the kind, its plural,
    /// its short name and their `.apps.kruise.io` forms (case-insensitive). `statefulset` and
    /// `daemonset` mean kruise's, as they do for `kruise plan`.
    pub fn parse(kind: &str) -> Option<Kind> {
        let k = kind.to_ascii_lowercase();
        let k = k.strip_suffix(".apps.kruise.io").unwrap_or(&k);
        match k {
            "cloneset" | "clonesets" => Some(Kind::CloneSet),
            "statefulset" | "statefulsets" | "asts" => Some(Kind::StatefulSet),
            "sidecarset" | "sidecarsets" => Some(Kind::SidecarSet),
            "daemonset" | "daemonsets" | "ads" | "daemon" => Some(Kind::DaemonSet),
            "uniteddeployment" | "uniteddeployments" | "ud" => Some(Kind::UnitedDeployment),
            _ => None,
        }
    }
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

async fn get<K>(client: &Client, ns: &str, name: &str, source: &str) -> Result<Manifest, LiveError>
where
    K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + Serialize
        + std::fmt::Debug,
{
    let what = format!("{} {ns}/{name}", K::kind(&()));
    let api: Api<K> = Api::namespaced(client.clone(), ns);
    match api.get_opt(name).await {
        Ok(Some(o)) => Ok(manifest(source, o)),
        Ok(None) => Err(LiveError::NotFound(what)),
        Err(source) => Err(LiveError::Read { what, source }),
    }
}

/// The workload `namespace/name` of `kind` and what it may own, as manifests; for a SidecarSet
/// (cluster-scoped, `namespace` unused) what [`read_sidecarset`] reads.
pub async fn read(
    client: &Client,
    kind: Kind,
    namespace: &str,
    name: &str,
    manager_namespace: &str,
) -> Result<Vec<Manifest>, LiveError> {
    let source = format!("cluster:{namespace}/{name}");
    let workload = match kind {
        Kind::CloneSet => get::<CloneSet>(client, namespace, name, &source).await?,
        Kind::StatefulSet => get::<StatefulSet>(client, namespace, name, &source).await?,
        Kind::SidecarSet => return read_sidecarset(client, name, manager_namespace).await,
        Kind::DaemonSet => get::<crate::apis::daemonset::v1beta1::DaemonSet>(client, namespace, name, &source).await?,
        Kind::UnitedDeployment => {
            get::<crate::apis::uniteddeployment::UnitedDeployment>(client, namespace, name, &source).await?
        }
    };
    let mut out = vec![workload];
    let ns = namespace;
    // A UnitedDeployment's subsets, of every kind it may have written (a kind this user may not
    // list, or a cluster does not serve, is left out: its subsets then look missing).
    if kind == Kind::UnitedDeployment {
        out.extend(list::<CloneSet>(client, ns, "CloneSets").await?.into_iter().map(|o| manifest(&source, o)));
        if let Ok(sets) = list::<StatefulSet>(client, ns, "StatefulSets").await {
            out.extend(sets.into_iter().map(|o| manifest(&source, o)));
        }
        if let Ok(sets) = list::<k8s_openapi::api::apps::v1::StatefulSet>(client, ns, "StatefulSets.apps").await {
            out.extend(sets.into_iter().map(|o| manifest(&source, o)));
        }
        if let Ok(sets) = list::<k8s_openapi::api::apps::v1::Deployment>(client, ns, "Deployments").await {
            out.extend(sets.into_iter().map(|o| manifest(&source, o)));
        }
    }
    out.extend(list::<Pod>(client, ns, "pods").await?.into_iter().map(|o| manifest(&source, o)));
    out.extend(list::<PersistentVolumeClaim>(client, ns, "PVCs").await?.into_iter().map(|o| manifest(&source, o)));
    out.extend(
        list::<ControllerRevision>(client, ns, "ControllerRevisions").await?.into_iter().map(|o| manifest(&source, o)),
    );
    // Nodes only refine the topology-spread ranking; a user who may not list them still gets a plan.
    if kind == Kind::CloneSet
        && let Ok(nodes) = Api::<Node>::all(client.clone()).list(&ListParams::default()).await
    {
        out.extend(nodes.items.into_iter().map(|o| manifest(&source, o)));
    }
    // A DaemonSet's pods belong to nodes: without them no plan says anything true.
    if kind == Kind::DaemonSet {
        let nodes = Api::<Node>::all(client.clone())
            .list(&ListParams::default())
            .await
            .map_err(|source| LiveError::Read { what: "nodes".into(), source })?;
        out.extend(nodes.items.into_iter().map(|o| manifest(&source, o)));
    }
    Ok(out)
}

/// SidecarSet `name`, the pods it can reach, the Namespaces and its revisions in
/// `manager_namespace`, as manifests.
pub async fn read_sidecarset(client: &Client, name: &str, manager_namespace: &str) -> Result<Vec<Manifest>, LiveError> {
    let source = format!("cluster:sidecarset/{name}");
    let what = format!("SidecarSet {name}");
    let set = match Api::<v1beta1::SidecarSet>::all(client.clone()).get_opt(name).await {
        Ok(Some(set)) => manifest(&source, set),
        // A cluster that serves only v1alpha1 (kruise before v1.9).
        _ => match Api::<SidecarSet>::all(client.clone()).get_opt(name).await {
            Ok(Some(set)) => manifest(&source, set),
            Ok(None) => return Err(LiveError::NotFound(what)),
            Err(source) => return Err(LiveError::Read { what, source }),
        },
    };
    // Only its scope is read here; the planner reads the set through the cluster view's store.
    // A set that does not decode is planned (and its error reported) there: read everywhere.
    let decoded: SidecarSet = {
        let mut object = set.object.clone();
        if let serde_json::Value::Object(map) = &mut object
            && map.get("apiVersion").and_then(serde_json::Value::as_str) == Some(crate::core::conversion::V1BETA1)
        {
            crate::core::conversion::sidecarset::to_v1alpha1(map);
            map.insert("apiVersion".into(), crate::core::conversion::V1ALPHA1.into());
        }
        serde_json::from_value(object).unwrap_or_default()
    };
    let pods: Vec<Pod> = match scope(&decoded) {
        Scope::Namespaces(namespaces) => {
            let mut pods = Vec::new();
            for ns in namespaces {
                pods.extend(list::<Pod>(client, &ns, &format!("pods in {ns}")).await?);
            }
            pods
        }
        Scope::Cluster => Api::<Pod>::all(client.clone())
            .list(&ListParams::default())
            .await
            .map(|l| l.items)
            .map_err(|source| LiveError::Read { what: "pods of every namespace".into(), source })?,
    };
    let namespaces = match Api::<Namespace>::all(client.clone()).list(&ListParams::default()).await {
        Ok(l) => l.items,
        Err(_) => {
            let wanted: std::collections::BTreeSet<&str> =
                pods.iter().map(|p| pod_namespace(p.metadata.namespace.as_deref())).collect();
            let api = Api::<Namespace>::all(client.clone());
            let mut found = Vec::new();
            for ns in wanted {
                if let Ok(Some(n)) = api.get_opt(ns).await {
                    found.push(n);
                }
            }
            found
        }
    };
    let selector = format!("{}={name}", crate::core::sidecar::SIDECARSET_NAME_LABEL);
    let revisions = Api::<ControllerRevision>::namespaced(client.clone(), manager_namespace)
        .list(&ListParams::default().labels(&selector))
        .await
        .map(|l| l.items)
        .map_err(|source| LiveError::Read { what: format!("ControllerRevisions in {manager_namespace}"), source })?;
    let mut out = vec![set];
    out.extend(pods.into_iter().map(|o| manifest(&source, o)));
    out.extend(namespaces.into_iter().map(|o| manifest(&source, o)));
    out.extend(revisions.into_iter().map(|o| manifest(&source, o)));
    Ok(out)
}

/// [`read`] with the client of the environment.
pub async fn read_kind_default(
    kind: Kind,
    namespace: &str,
    name: &str,
    manager_namespace: &str,
) -> Result<Vec<Manifest>, LiveError> {
    let client = Client::try_default().await.map_err(LiveError::Client)?;
    read(&client, kind, namespace, name, manager_namespace).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_manifests() {
        for (kind, want) in [
            ("cloneset", Some(Kind::CloneSet)),
            ("CloneSets.apps.kruise.io", Some(Kind::CloneSet)),
            ("StatefulSet", Some(Kind::StatefulSet)),
            ("statefulsets.apps.kruise.io", Some(Kind::StatefulSet)),
            ("asts", Some(Kind::StatefulSet)),
            ("sidecarset", Some(Kind::SidecarSet)),
            ("SidecarSets", Some(Kind::SidecarSet)),
            ("sidecarset.apps.kruise.io", Some(Kind::SidecarSet)),
            ("statefulset.apps", None),
            ("daemonset", Some(Kind::DaemonSet)),
            ("ads", Some(Kind::DaemonSet)),
            ("daemon", Some(Kind::DaemonSet)),
            ("DaemonSets.apps.kruise.io", Some(Kind::DaemonSet)),
            ("daemonset.apps", None),
            ("deployment", None),
            ("uniteddeployment", Some(Kind::UnitedDeployment)),
            ("UnitedDeployments.apps.kruise.io", Some(Kind::UnitedDeployment)),
            ("ud", Some(Kind::UnitedDeployment)),
            ("", None),
        ] {
            assert_eq!(Kind::parse(kind), want, "{kind}");
        }
        let mut p = Pod::default();
        p.metadata.name = Some("web-a".into());
        let m = manifest("cluster:ns/web", p);
        assert_eq!((m.object["apiVersion"].as_str(), m.object["kind"].as_str()), (Some("v1"), Some("Pod")));
        assert_eq!(m.object["metadata"]["name"], "web-a");
    }
}
