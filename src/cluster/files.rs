//! The file-backed cluster view of `--standalone --objects-dir DIR`: every YAML/JSON manifest
//! under DIR (recursively, multi-document YAML, `kind: List`) is loaded; the directory is polled
//! and reloaded when a file changes. Objects of kinds the view does not hold are skipped; a file
//! that does not parse is reported and skipped, so one bad file cannot take the server down.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::SystemTime;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use serde::Deserialize;
use serde_json::Value;

use super::ClusterView;
pub use super::snapshot::Snapshot;
use crate::apis::SidecarSet;

/// Why a directory could not be loaded at all.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The directory cannot be walked.
    #[error("cannot read objects directory {path}: {source}")]
    Walk {
        /// The directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

/// A problem with one file or document; the rest still loads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileProblem {
    /// The file.
    pub path: PathBuf,
    /// What is wrong, with the line where known.
    pub message: String,
}

/// Splits a manifest file into objects: multi-document YAML (JSON is YAML) and `kind: List`
/// items. Errors name the line.
pub fn parse_manifests(text: &str) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    for document in serde_yaml_ng::Deserializer::from_str(text) {
        let value = Value::deserialize(document).map_err(|e| match e.location() {
            Some(loc) => format!("line {}: {e}", loc.line()),
            None => e.to_string(),
        })?;
        match value {
            Value::Null => {}
            Value::Object(ref map) if map.get("kind").and_then(Value::as_str) == Some("List") => {
                if let Some(Value::Array(items)) = map.get("items") {
                    out.extend(items.iter().cloned());
                }
            }
            Value::Object(_) => out.push(value),
            other => return Err(format!("a manifest must be an object, found {}", type_name(&other))),
        }
    }
    Ok(out)
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Every manifest file under `dir`, sorted, with its modification time and size.
fn manifest_files(dir: &Path) -> Result<Vec<(PathBuf, Option<SystemTime>, u64)>, LoadError> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d).map_err(|source| LoadError::Walk { path: d.clone(), source })?;
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(meta) = std::fs::metadata(&path) else { continue };
            if meta.is_dir() {
                stack.push(path);
            } else if is_manifest(&path) {
                files.push((path, meta.modified().ok(), meta.len()));
            }
        }
    }
    files.sort();
    Ok(files)
}

/// `.yaml`, `.yml` or `.json`.
pub fn is_manifest(path: &Path) -> bool {
    matches!(path.extension().and_then(|e| e.to_str()), Some("yaml" | "yml" | "json"))
}

/// Loads every manifest under `dir`.
pub fn load_dir(dir: &Path) -> Result<(Snapshot, Vec<FileProblem>), LoadError> {
    let mut snapshot = Snapshot::default();
    let mut problems = Vec::new();
    for (path, _, _) in manifest_files(dir)? {
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) => {
                problems.push(FileProblem { path, message: e.to_string() });
                continue;
            }
        };
        match parse_manifests(&text) {
            Ok(objects) => {
                for object in objects {
                    if let Err(e) = snapshot.insert(object) {
                        problems.push(FileProblem { path: path.clone(), message: e.to_string() });
                    }
                }
            }
            Err(message) => problems.push(FileProblem { path, message }),
        }
    }
    Ok((snapshot, problems))
}

/// The file-backed view: a snapshot swapped whole on reload.
pub struct FileView {
    dir: PathBuf,
    current: RwLock<Arc<Snapshot>>,
    fingerprint: RwLock<Vec<(PathBuf, Option<SystemTime>, u64)>>,
}

impl FileView {
    /// Loads `dir`; problems with single files are returned, not fatal.
    pub fn load(dir: &Path) -> Result<(Self, Vec<FileProblem>), LoadError> {
        let fingerprint = manifest_files(dir)?;
        let (snapshot, problems) = load_dir(dir)?;
        let view = FileView {
            dir: dir.to_path_buf(),
            current: RwLock::new(Arc::new(snapshot)),
            fingerprint: RwLock::new(fingerprint),
        };
        Ok((view, problems))
    }

    /// Reloads when a file was added, removed or changed; returns whether it reloaded.
    pub fn reload_if_changed(&self) -> Result<Option<Vec<FileProblem>>, LoadError> {
        let now = manifest_files(&self.dir)?;
        let unchanged = self.fingerprint.read().map(|f| *f == now).unwrap_or(false);
        if unchanged {
            return Ok(None);
        }
        let (snapshot, problems) = load_dir(&self.dir)?;
        if let Ok(mut cur) = self.current.write() {
            *cur = Arc::new(snapshot);
        }
        if let Ok(mut f) = self.fingerprint.write() {
            *f = now;
        }
        Ok(Some(problems))
    }

    /// The current snapshot.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.current.read().map(|s| Arc::clone(&s)).unwrap_or_default()
    }

    /// Number of objects held.
    pub fn len(&self) -> usize {
        self.snapshot().len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl ClusterView for FileView {
    fn namespace(&self, name: &str) -> Option<Arc<Namespace>> {
        self.snapshot().namespace(name)
    }
    fn pod(&self, namespace: &str, name: &str) -> Option<Arc<Pod>> {
        self.snapshot().pod(namespace, name)
    }
    fn sidecarsets(&self) -> Vec<Arc<SidecarSet>> {
        self.snapshot().sidecarsets()
    }
    fn controller_revisions(&self, namespace: &str) -> Vec<Arc<ControllerRevision>> {
        self.snapshot().controller_revisions(namespace)
    }
    fn sidecarsets_for_namespace(&self, namespace: &str) -> Vec<Arc<SidecarSet>> {
        self.snapshot().sidecarsets_for_namespace(namespace)
    }
    fn sidecarsets_for_pod(&self, namespace: &str, labels: &BTreeMap<String, String>) -> Vec<Arc<SidecarSet>> {
        self.snapshot().sidecarsets_for_pod(namespace, labels)
    }
    fn config_map(&self, namespace: &str, name: &str) -> Option<Arc<ConfigMap>> {
        self.snapshot().config_map(namespace, name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::namespace_labels;

    const MANIFESTS: &str = r#"
apiVersion: v1
kind: Namespace
metadata:
  name: team-a
  labels: {env: prod}
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Pod
  metadata: {name: p1, namespace: team-a}
  spec: {containers: [{name: c, image: nginx}]}
- apiVersion: apps/v1
  kind: ControllerRevision
  metadata: {name: r1, namespace: kruise-system}
  revision: 1
---
apiVersion: apps.kruise.io/v1alpha1
kind: SidecarSet
metadata: {name: s1}
spec: {selector: {matchLabels: {app: x}}, containers: [{name: side, image: busybox}]}
---
apiVersion: apps.kruise.io/v1alpha1
kind: CloneSet
metadata: {name: ignored}
"#;

    #[test]
    fn loads_documents_and_lists() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.yaml"), MANIFESTS).unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(
            dir.path().join("sub/ns.json"),
            r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"b"}}"#,
        )
        .unwrap();
        std::fs::write(dir.path().join("notes.txt"), "not a manifest").unwrap();
        let (view, problems) = FileView::load(dir.path()).unwrap();
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(view.len(), 5);
        assert!(view.pod("team-a", "p1").is_some());
        assert_eq!(view.sidecarsets().len(), 1);
        assert_eq!(view.controller_revisions("kruise-system").len(), 1);
        let labels = namespace_labels(&view, "team-a");
        assert_eq!(labels.get("env").map(String::as_str), Some("prod"));
        assert_eq!(labels.get("kubernetes.io/metadata.name").map(String::as_str), Some("team-a"));
        assert_eq!(namespace_labels(&view, "unknown").len(), 1);
    }

    #[test]
    fn sidecarsets_are_defaulted_and_indexed_by_scope() {
        let mut snap = Snapshot::default();
        let set = |name: &str, spec: Value| {
            serde_json::json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "SidecarSet",
                "metadata": {"name": name}, "spec": spec})
        };
        let c = serde_json::json!([{"name": "c", "image": "busybox"}]);
        snap.insert(set("global", serde_json::json!({"containers": c}))).unwrap();
        snap.insert(set("in-a", serde_json::json!({"namespace": "a", "containers": c}))).unwrap();
        snap.insert(set(
            "in-b",
            serde_json::json!({"namespaceSelector": {"matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["b", "c"]}]}, "containers": c}),
        ))
        .unwrap();
        snap.insert(set("in-a", serde_json::json!({"namespace": "c", "containers": c}))).unwrap();
        let names = |ns: &str| -> Vec<String> {
            snap.sidecarsets_for_namespace(ns).iter().map(|s| s.metadata.name.clone().unwrap()).collect()
        };
        assert_eq!(names("a"), vec!["global"], "the replaced in-a left namespace a");
        assert_eq!(names("b"), vec!["in-b", "global"]);
        assert_eq!(names("c"), vec!["in-b", "in-a", "global"]);
        let stored = snap.sidecarsets().into_iter().find(|s| s.metadata.name.as_deref() == Some("global")).unwrap();
        assert_eq!(stored.spec.containers[0].container.image_pull_policy.as_deref(), Some("Always"));
        assert!(stored.metadata.annotations.as_ref().unwrap().contains_key(crate::apis::keys::SIDECARSET_HASH));
        // The default implementation of the trait gives the same answer.
        struct Plain(Snapshot);
        impl ClusterView for Plain {
            fn namespace(&self, n: &str) -> Option<Arc<Namespace>> {
                self.0.namespace(n)
            }
            fn pod(&self, ns: &str, n: &str) -> Option<Arc<Pod>> {
                self.0.pod(ns, n)
            }
            fn sidecarsets(&self) -> Vec<Arc<SidecarSet>> {
                self.0.sidecarsets()
            }
            fn controller_revisions(&self, ns: &str) -> Vec<Arc<ControllerRevision>> {
                self.0.controller_revisions(ns)
            }
        }
        let plain = Plain(snap.clone());
        for ns in ["a", "b", "c", "d"] {
            let got: Vec<String> =
                plain.sidecarsets_for_namespace(ns).iter().map(|s| s.metadata.name.clone().unwrap()).collect();
            let mut want = names(ns);
            let mut got_sorted = got.clone();
            got_sorted.sort();
            want.sort();
            assert_eq!(got_sorted, want, "{ns}");
        }
        snap.insert(serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "kruise-configuration", "namespace": "kruise-system"}, "data": {"k": "v"}}))
            .unwrap();
        assert!(snap.config_map("kruise-system", "kruise-configuration").is_some());
    }

    #[test]
    fn pod_candidates_leave_out_only_sets_whose_labels_the_pod_lacks() {
        let mut snap = Snapshot::default();
        let set = |name: &str, spec: Value| {
            serde_json::json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "SidecarSet",
                "metadata": {"name": name}, "spec": spec})
        };
        let c = serde_json::json!([{"name": "c", "image": "busybox"}]);
        let sets = [
            ("web", serde_json::json!({"selector": {"matchLabels": {"app": "web"}}, "containers": c})),
            (
                "scoped",
                serde_json::json!({"namespace": "a", "selector": {"matchLabels": {"app": "db"}}, "containers": c}),
            ),
            ("tier", serde_json::json!({"selector": {"matchLabels": {"tier": "x", "app": "web"}}, "containers": c})),
            (
                "exists",
                serde_json::json!({"selector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]}, "containers": c}),
            ),
            (
                "invalid",
                serde_json::json!({"selector": {"matchLabels": {"app": "none"},
                "matchExpressions": [{"key": "app", "operator": "Bogus"}]}, "containers": c}),
            ),
            ("db", serde_json::json!({"selector": {"matchLabels": {"app": "db"}}, "containers": c})),
        ];
        for (name, spec) in sets {
            snap.insert(set(name, spec)).unwrap();
        }
        let names = |labels: &[(&str, &str)]| -> Vec<String> {
            let labels: BTreeMap<String, String> = labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            snap.sidecarsets_for_pod("a", &labels).iter().map(|s| s.metadata.name.clone().unwrap()).collect()
        };
        // Namespace-scoped sets first, then the cluster-wide ones in their own order; a set with an
        // invalid selector is always a candidate (matching it fails the pod, as in kruise).
        // "tier" requires app=web and tier=x: it is indexed under one of them (app=web) and stays a
        // candidate of app=web pods, while pods without app=web never see it.
        assert_eq!(names(&[("app", "web")]), ["scoped", "web", "tier", "exists", "invalid"]);
        assert_eq!(names(&[("app", "db"), ("tier", "x")]), ["scoped", "exists", "invalid", "db"]);
        assert_eq!(names(&[]), ["scoped", "exists", "invalid"]);
        let all: Vec<String> =
            snap.sidecarsets_for_namespace("a").iter().map(|s| s.metadata.name.clone().unwrap()).collect();
        assert_eq!(all, ["scoped", "web", "tier", "exists", "invalid", "db"]);
    }

    #[test]
    fn bad_files_are_reported_with_lines_and_skipped() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("good.yaml"), "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n").unwrap();
        std::fs::write(dir.path().join("bad.yaml"), "apiVersion: v1\nkind: Namespace\nmetadata: [unclosed\n").unwrap();
        let (view, problems) = FileView::load(dir.path()).unwrap();
        assert_eq!(view.len(), 1);
        assert_eq!(problems.len(), 1);
        assert!(problems[0].path.ends_with("bad.yaml"));
        assert!(problems[0].message.contains("line"), "{}", problems[0].message);
    }

    #[test]
    fn reloads_on_change() {
        let dir = tempfile::tempdir().unwrap();
        let (view, _) = FileView::load(dir.path()).unwrap();
        assert!(view.is_empty());
        assert!(view.reload_if_changed().unwrap().is_none());
        std::fs::write(dir.path().join("ns.yaml"), "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n").unwrap();
        assert!(view.reload_if_changed().unwrap().is_some());
        assert!(view.namespace("a").is_some());
        assert!(FileView::load(&dir.path().join("missing")).is_err());
    }
}
