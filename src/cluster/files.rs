//! The file-backed cluster view of `--standalone --objects-dir DIR`: every YAML/JSON manifest
//! under DIR (recursively, multi-document YAML, lists; read by [`crate::source`] as kubectl reads
//! files) is loaded; the directory is polled
//! and reloaded when a file changes. Objects of kinds the view does not hold are skipped; a file
//! that does not parse is reported and skipped, so one bad file cannot take the server down.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};

use super::ClusterView;
pub use super::snapshot::Snapshot;
use crate::apis::SidecarSet;
use crate::source::{self, FileEntry, Problem};

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

/// Loads every manifest under `dir` (read by [`crate::source`] as kubectl reads files): objects of
/// kinds the view holds are indexed; problems with single files or documents are returned.
pub fn load_dir(dir: &Path) -> Result<(Snapshot, Vec<Problem>), LoadError> {
    let (files, mut problems) = manifest_files(dir)?;
    let (snapshot, more) = load_files(&files);
    problems.extend(more);
    Ok((snapshot, problems))
}

fn load_files(files: &[FileEntry]) -> (Snapshot, Vec<Problem>) {
    let mut snapshot = Snapshot::default();
    let mut problems = Vec::new();
    for f in files {
        let read = source::read_file(&f.path);
        problems.extend(read.problems);
        for m in read.objects {
            if let Err(e) = snapshot.insert(m.object) {
                problems.push(Problem { file: m.file, line: Some(m.line), message: e.to_string() });
            }
        }
    }
    (snapshot, problems)
}

/// The manifest files under `dir`, and the subdirectories that could not be read; `dir` itself
/// must be readable.
fn manifest_files(dir: &Path) -> Result<(Vec<FileEntry>, Vec<Problem>), LoadError> {
    if let Err(source) = std::fs::read_dir(dir) {
        return Err(LoadError::Walk { path: dir.to_path_buf(), source });
    }
    let walked = source::walk(dir);
    Ok((walked.files, walked.problems))
}

/// The file-backed view: a snapshot swapped whole on reload.
pub struct FileView {
    dir: PathBuf,
    current: RwLock<Arc<Snapshot>>,
    fingerprint: RwLock<Vec<FileEntry>>,
}

impl FileView {
    /// Loads `dir`; problems with single files are returned, not fatal.
    pub fn load(dir: &Path) -> Result<(Self, Vec<Problem>), LoadError> {
        let (fingerprint, mut problems) = manifest_files(dir)?;
        let (snapshot, more) = load_files(&fingerprint);
        problems.extend(more);
        let view = FileView {
            dir: dir.to_path_buf(),
            current: RwLock::new(Arc::new(snapshot)),
            fingerprint: RwLock::new(fingerprint),
        };
        Ok((view, problems))
    }

    /// Reloads when a file was added, removed or changed; returns whether it reloaded.
    pub fn reload_if_changed(&self) -> Result<Option<Vec<Problem>>, LoadError> {
        let (now, mut problems) = manifest_files(&self.dir)?;
        let unchanged = self.fingerprint.read().map(|f| *f == now).unwrap_or(false);
        if unchanged {
            return Ok(None);
        }
        let (snapshot, more) = load_files(&now);
        problems.extend(more);
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
    fn pods_in_namespace(&self, namespace: &str) -> Vec<Arc<Pod>> {
        self.snapshot().pods_in_namespace(namespace)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::namespace_labels;
    use serde_json::Value;

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
        assert!(problems[0].file.ends_with("bad.yaml"));
        assert_eq!(problems[0].line, Some(3), "{}", problems[0]);
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
