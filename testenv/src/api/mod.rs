//! The API operations behind the REST front end (and used directly by the garbage collector, the
//! simulated kubelet and the library helpers): get, list, create, update, patch, delete, and the
//! status, scale, eviction and binding subresources, with kube-apiserver's semantics for system
//! metadata, resourceVersion preconditions, generation, finalizers and admission.

mod create;
mod delete;
mod prepare;
mod subresources;
mod update;
use update as guaranteed;

pub use create::create;
pub use delete::{DeleteOptions, delete, delete_collection};
pub use subresources::{bind, evict, get_scale, write_scale};
pub use update::{patch, update};

use crate::cluster::Cluster;
use crate::errors::ApiError;
use crate::meta;
use crate::resources::ResourceDef;
use crate::selectors::{FieldSelector, Selector};
use crate::store::ObjKey;
use base64::Engine;
use serde_json::{Value, json};
use std::sync::Arc;

/// `group/version`, or `version` for the core group.
pub fn group_version(group: &str, version: &str) -> String {
    if group.is_empty() { version.to_string() } else { format!("{group}/{version}") }
}

/// What a request addresses.
#[derive(Debug, Clone)]
pub struct Target {
    /// The resource.
    pub def: Arc<ResourceDef>,
    /// The version named in the request.
    pub version: String,
    /// Namespace ("" for cluster-scoped resources).
    pub namespace: String,
    /// Object name ("" for collections).
    pub name: String,
    /// Subresource ("" for the main resource).
    pub subresource: String,
}

impl Target {
    /// A target on the main resource.
    pub fn new(def: Arc<ResourceDef>, version: &str, namespace: &str, name: &str) -> Self {
        let namespace = if def.namespaced { namespace } else { "" };
        Self {
            def,
            version: version.into(),
            namespace: namespace.into(),
            name: name.into(),
            subresource: String::new(),
        }
    }

    /// The same target on a subresource.
    pub fn with_sub(mut self, subresource: &str) -> Self {
        self.subresource = subresource.into();
        self
    }

    /// The storage key.
    pub fn key(&self) -> ObjKey {
        ObjKey::new(&self.def.group, &self.def.resource, &self.namespace, &self.name)
    }

    /// `group/version` of the request.
    pub fn gv(&self) -> String {
        self.def.group_version(&self.version)
    }

    fn not_found(&self) -> ApiError {
        ApiError::not_found(&self.def.group, &self.def.resource, &self.name)
    }

    fn conflict(&self) -> ApiError {
        ApiError::conflict(&self.def.group, &self.def.resource, &self.name)
    }
}

/// The object as served in `version`.
pub fn present(obj: &Value, def: &ResourceDef, version: &str) -> Value {
    let mut out = obj.clone();
    if let Some(map) = out.as_object_mut() {
        map.insert("apiVersion".into(), json!(def.group_version(version)));
        map.insert("kind".into(), json!(def.kind));
    }
    out
}

/// The object as stored (storage version).
fn to_storage(obj: Value, def: &ResourceDef) -> Value {
    present(&obj, def, def.storage_version())
}

/// Checks a request body's type metadata against the target and fills it in when absent.
fn check_body(mut body: Value, t: &Target) -> Result<Value, ApiError> {
    let Some(map) = body.as_object_mut() else {
        return Err(ApiError::bad_request("the request body must be a JSON object"));
    };
    let gv = t.gv();
    match map.get("apiVersion").and_then(Value::as_str) {
        None | Some("") => {
            map.insert("apiVersion".into(), json!(gv));
        }
        Some(v) if v != gv => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({v}) does not match the expected API version ({gv})"
            )));
        }
        Some(_) => {}
    }
    match map.get("kind").and_then(Value::as_str) {
        None | Some("") => {
            map.insert("kind".into(), json!(t.def.kind));
        }
        Some(k) if k != t.def.kind => {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({k}) does not match the expected kind ({})",
                t.def.kind
            )));
        }
        Some(_) => {}
    }
    Ok(body)
}

/// Reads one object.
pub fn get(cluster: &Cluster, t: &Target) -> Result<Value, ApiError> {
    cluster.store.get(&t.key()).map(|o| present(&o, &t.def, &t.version)).ok_or_else(|| t.not_found())
}

/// List options.
#[derive(Debug, Clone, Default)]
pub struct ListOptions {
    /// `labelSelector`.
    pub labels: Selector,
    /// `fieldSelector`.
    pub fields: FieldSelector,
    /// `limit` (0 = all).
    pub limit: usize,
    /// `continue`.
    pub continue_token: String,
}

/// Whether an object passes the selectors.
pub fn selected(obj: &Value, labels: &Selector, fields: &FieldSelector) -> bool {
    labels.matches(&meta::labels(obj)) && fields.matches(obj)
}

/// Lists a resource as a `<Kind>List`, optionally paginated with `limit`/`continue`.
pub fn list(cluster: &Cluster, t: &Target, opts: &ListOptions) -> Result<Value, ApiError> {
    let ns = (t.def.namespaced && !t.namespace.is_empty()).then_some(t.namespace.as_str());
    let (items, rv) = cluster.store.list(&t.def.group, &t.def.resource, ns);
    let after: Option<(String, String)> = if opts.continue_token.is_empty() {
        None
    } else {
        let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(&opts.continue_token)
            .map_err(|_| ApiError::bad_request("invalid continue token"))?;
        Some(serde_json::from_slice(&raw).map_err(|_| ApiError::bad_request("invalid continue token"))?)
    };
    let mut selected_items: Vec<Value> = Vec::new();
    let mut more = false;
    for obj in items.iter() {
        let pos = (meta::namespace(obj).to_string(), meta::name(obj).to_string());
        if after.as_ref().is_some_and(|a| pos <= *a) || !selected(obj, &opts.labels, &opts.fields) {
            continue;
        }
        if opts.limit > 0 && selected_items.len() == opts.limit {
            more = true;
            break;
        }
        selected_items.push(present(obj, &t.def, &t.version));
    }
    let mut metadata = json!({"resourceVersion": rv.to_string()});
    if more && let Some(last) = selected_items.last() {
        let token = serde_json::to_vec(&(meta::namespace(last), meta::name(last))).unwrap_or_default();
        metadata["continue"] = json!(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(token));
    }
    Ok(json!({
        "apiVersion": t.gv(),
        "kind": format!("{}List", t.def.kind),
        "metadata": metadata,
        "items": selected_items,
    }))
}

/// Runs after a successful write of `def`: CRD writes change what is served.
fn after_write(cluster: &Cluster, def: &ResourceDef) {
    if def.group == "apiextensions.k8s.io" && def.resource == "customresourcedefinitions" {
        cluster.refresh_crds();
    }
}

/// Checks that a namespaced request's namespace exists and accepts new objects.
fn check_namespace(cluster: &Cluster, ns: &str) -> Result<(), ApiError> {
    let Some(obj) = cluster.namespace(ns) else {
        return Err(ApiError::not_found("", "namespaces", ns));
    };
    if meta::is_deleting(&obj) {
        return Err(ApiError::forbidden(format!(
            "unable to create new content in namespace {ns} because it is being terminated"
        )));
    }
    Ok(())
}

/// Create/Update/Delete options as sent to webhooks.
fn options(kind: &str, dry_run: bool, extra: Value) -> Value {
    let mut o = json!({"apiVersion": "meta.k8s.io/v1", "kind": kind});
    if dry_run {
        o["dryRun"] = json!(["All"]);
    }
    if let (Some(map), Value::Object(extra)) = (o.as_object_mut(), extra) {
        map.extend(extra);
    }
    o
}

/// Admission attributes for a request on `t`.
fn attributes(
    t: &Target,
    operation: &'static str,
    name: &str,
    object: Option<Value>,
    old_object: Option<Value>,
    options: Value,
) -> crate::admission::Attributes {
    let def = &t.def;
    let kind = match t.subresource.as_str() {
        "scale" => ("autoscaling".into(), "v1".into(), "Scale".into()),
        "eviction" => ("policy".into(), "v1".into(), "Eviction".into()),
        "binding" => (String::new(), "v1".into(), "Binding".into()),
        _ => (def.group.clone(), t.version.clone(), def.kind.clone()),
    };
    let is_namespace = def.group.is_empty() && def.resource == "namespaces";
    crate::admission::Attributes {
        operation,
        group: def.group.clone(),
        version: t.version.clone(),
        resource: def.resource.clone(),
        subresource: t.subresource.clone(),
        served_versions: def.versions.clone(),
        kind,
        namespace: if is_namespace { name.to_string() } else { t.namespace.clone() },
        name: name.to_string(),
        object,
        old_object,
        options,
    }
}
