//! Applying manifests to the test cluster: YAML or JSON files (multi-document, `kind: List`),
//! server-side applied with field manager [`FIELD_MANAGER`]; CRDs are waited for until
//! Established so that objects of their kinds can follow in the same call.

use crate::Error;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::GroupVersionKind;
use kube::discovery::{self, Scope};
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

/// The field manager of the harness's writes.
pub const FIELD_MANAGER: &str = "kruise-testenv";

/// One applied object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// `kind`.
    pub kind: String,
    /// Namespace, if namespaced.
    pub namespace: Option<String>,
    /// Name.
    pub name: String,
}

/// Reads every manifest of a file, or of the `.yaml`/`.yml`/`.json` files of a directory (sorted;
/// a directory's `kustomization.yaml` is kustomize's configuration, not an object, and is skipped).
pub fn read_path(path: &Path) -> Result<Vec<Value>, Error> {
    let mut files = Vec::new();
    if path.is_dir() {
        let entries = std::fs::read_dir(path).map_err(|e| Error::io(format!("read {}", path.display()), e))?;
        for entry in entries {
            let p = entry.map_err(|e| Error::io(format!("read {}", path.display()), e))?.path();
            let kustomization = p.file_stem().is_some_and(|s| s == "kustomization");
            if !kustomization && matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml" | "json")) {
                files.push(p);
            }
        }
        files.sort();
    } else {
        files.push(path.to_path_buf());
    }
    let mut docs = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).map_err(|e| Error::io(format!("read {}", file.display()), e))?;
        docs.extend(parse(&text).map_err(|detail| Error::Manifest { path: file.display().to_string(), detail })?);
    }
    Ok(docs)
}

/// The objects of a multi-document YAML (or JSON) text, `kind: List` items expanded.
pub fn parse(text: &str) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    for doc in serde_yaml_ng::Deserializer::from_str(text) {
        let v: Value = serde::Deserialize::deserialize(doc).map_err(|e| e.to_string())?;
        match v {
            Value::Null => {}
            Value::Object(ref o) if o.get("kind").and_then(Value::as_str) == Some("List") => {
                out.extend(o.get("items").and_then(Value::as_array).cloned().unwrap_or_default());
            }
            v => out.push(v),
        }
    }
    Ok(out)
}

/// Applies every manifest under `path`.
pub async fn apply_path(client: &kube::Client, path: &Path) -> Result<Vec<Applied>, Error> {
    apply_all(client, read_path(path)?).await
}

/// Applies objects in order (waiting for CRDs to be Established).
pub async fn apply_all(client: &kube::Client, objects: Vec<Value>) -> Result<Vec<Applied>, Error> {
    let mut applied = Vec::with_capacity(objects.len());
    for obj in objects {
        applied.push(apply(client, obj).await?);
    }
    Ok(applied)
}

/// Server-side applies one object (forced, field manager [`FIELD_MANAGER`]).
pub async fn apply(client: &kube::Client, obj: Value) -> Result<Applied, Error> {
    let bad = |detail: String| Error::Manifest { path: "object".into(), detail };
    let api_version = obj.get("apiVersion").and_then(Value::as_str).ok_or_else(|| bad("no apiVersion".into()))?;
    let kind = obj.get("kind").and_then(Value::as_str).ok_or_else(|| bad("no kind".into()))?.to_string();
    let name =
        obj.pointer("/metadata/name").and_then(Value::as_str).ok_or_else(|| bad(format!("{kind} without a name")))?;
    let name = name.to_string();
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let gvk = GroupVersionKind::gvk(group, version, &kind);
    let (resource, caps) = discover(client, &gvk).await?;
    let namespace = match caps.scope {
        Scope::Namespaced => {
            Some(obj.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("default").to_string())
        }
        Scope::Cluster => None,
    };
    let api: Api<DynamicObject> = match &namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    api.patch(&name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(&obj)).await?;
    if kind == "CustomResourceDefinition" {
        wait_established(client, &name).await?;
    }
    Ok(Applied { kind, namespace, name })
}

async fn discover(
    client: &kube::Client,
    gvk: &GroupVersionKind,
) -> Result<(kube::discovery::ApiResource, kube::discovery::ApiCapabilities), Error> {
    // A CRD applied a moment ago may not be in discovery yet.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match discovery::pinned_kind(client, gvk).await {
            Ok(found) => return Ok(found),
            Err(e) if Instant::now() > deadline => return Err(e.into()),
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

async fn wait_established(client: &kube::Client, name: &str) -> Result<(), Error> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let crd = api.get(name).await?;
        let established = crd
            .status
            .and_then(|s| s.conditions)
            .unwrap_or_default()
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True");
        if established {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(Error::Timeout(format!("CRD {name} to be Established")));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
