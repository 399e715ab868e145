//! The catalogue of served resources: the built-in kinds the harness knows and the custom resources
//! that applied CustomResourceDefinitions make served (their served versions, scope, names and
//! status/scale subresources). Discovery, routing, admission matching and garbage collection all
//! look resources up here.

use crate::meta;
use serde_json::Value;
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Where a resource with a scale subresource keeps its replica counts and selector.
#[derive(Debug, Clone, PartialEq)]
pub struct ScalePaths {
    /// `.spec.replicas`.
    pub spec_replicas: String,
    /// `.status.replicas`.
    pub status_replicas: String,
    /// A path to a serialized label selector string (CRDs) or to a structured selector
    /// (built-ins, `.spec.selector`).
    pub label_selector: Option<String>,
}

/// An additional printer column of a CRD (`kubectl get` shows it).
#[derive(Debug, Clone, PartialEq)]
pub struct PrinterColumn {
    /// Column header.
    pub name: String,
    /// OpenAPI type (`string`, `integer`, `date`).
    pub type_: String,
    /// Dotted JSON path into the object.
    pub json_path: String,
}

/// One served resource (all its versions).
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceDef {
    /// API group, "" for core.
    pub group: String,
    /// Served versions; the first is the storage version.
    pub versions: Vec<String>,
    /// Plural resource name (`pods`).
    pub resource: String,
    /// Singular name (`pod`).
    pub singular: String,
    /// Kind (`Pod`).
    pub kind: String,
    /// Short names (`po`).
    pub short_names: Vec<String>,
    /// Categories (`all`).
    pub categories: Vec<String>,
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
    /// Has a status subresource.
    pub status: bool,
    /// Has a scale subresource.
    pub scale: Option<ScalePaths>,
    /// Defined by a CustomResourceDefinition.
    pub custom: bool,
    /// Extra `kubectl get` columns.
    pub printer_columns: Vec<PrinterColumn>,
}

impl ResourceDef {
    /// `apps/v1` or `v1`.
    pub fn group_version(&self, version: &str) -> String {
        if self.group.is_empty() { version.to_string() } else { format!("{}/{version}", self.group) }
    }

    /// The storage version.
    pub fn storage_version(&self) -> &str {
        self.versions.first().map(String::as_str).unwrap_or("v1")
    }

    /// Serves `version`.
    pub fn serves(&self, version: &str) -> bool {
        self.versions.iter().any(|v| v == version)
    }

    /// Extra subresources beyond status and scale.
    pub fn extra_subresources(&self) -> &'static [&'static str] {
        if self.group.is_empty() && self.resource == "pods" { &["eviction", "binding"] } else { &[] }
    }
}

/// A static description of a built-in resource.
struct Builtin {
    group: &'static str,
    version: &'static str,
    resource: &'static str,
    kind: &'static str,
    short: &'static [&'static str],
    namespaced: bool,
    status: bool,
    scale: bool,
}

#[allow(clippy::too_many_arguments)]
const fn b(
    group: &'static str,
    version: &'static str,
    resource: &'static str,
    kind: &'static str,
    short: &'static [&'static str],
    namespaced: bool,
    status: bool,
    scale: bool,
) -> Builtin {
    Builtin { group, version, resource, kind, short, namespaced, status, scale }
}

#[rustfmt::skip]
const BUILTINS: &[Builtin] = &[
    b("", "v1", "namespaces", "Namespace", &["ns"], false, true, false),
    b("", "v1", "nodes", "Node", &["no"], false, true, false),
    b("", "v1", "pods", "Pod", &["po"], true, true, false),
    b("", "v1", "services", "Service", &["svc"], true, true, false),
    b("", "v1", "endpoints", "Endpoints", &["ep"], true, false, false),
    b("", "v1", "secrets", "Secret", &[], true, false, false),
    b("", "v1", "configmaps", "ConfigMap", &["cm"], true, false, false),
    b("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", &["pvc"], true, true, false),
    b("", "v1", "events", "Event", &["ev"], true, false, false),
    b("", "v1", "serviceaccounts", "ServiceAccount", &["sa"], true, false, false),
    b("apps", "v1", "controllerrevisions", "ControllerRevision", &[], true, false, false),
    b("apps", "v1", "deployments", "Deployment", &["deploy"], true, true, true),
    b("apps", "v1", "statefulsets", "StatefulSet", &["sts"], true, true, true),
    b("apps", "v1", "replicasets", "ReplicaSet", &["rs"], true, true, true),
    b("apps", "v1", "daemonsets", "DaemonSet", &["ds"], true, true, false),
    b("coordination.k8s.io", "v1", "leases", "Lease", &[], true, false, false),
    b("events.k8s.io", "v1", "events", "Event", &["ev"], true, false, false),
    b("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", &["pdb"], true, true, false),
    b("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", "MutatingWebhookConfiguration", &[], false, false, false),
    b("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", "ValidatingWebhookConfiguration", &[], false, false, false),
    b("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", &["crd", "crds"], false, true, false),
];

fn builtin_def(bi: &Builtin) -> ResourceDef {
    let in_all =
        matches!(bi.resource, "pods" | "services" | "deployments" | "statefulsets" | "replicasets" | "daemonsets");
    ResourceDef {
        group: bi.group.into(),
        versions: vec![bi.version.into()],
        resource: bi.resource.into(),
        singular: bi.kind.to_lowercase(),
        kind: bi.kind.into(),
        short_names: bi.short.iter().map(|s| s.to_string()).collect(),
        categories: if in_all { vec!["all".into()] } else { vec![] },
        namespaced: bi.namespaced,
        status: bi.status,
        scale: bi.scale.then(|| ScalePaths {
            spec_replicas: ".spec.replicas".into(),
            status_replicas: ".status.replicas".into(),
            label_selector: Some(".spec.selector".into()),
        }),
        custom: false,
        printer_columns: vec![],
    }
}

/// Orders versions as Kubernetes does: GA before beta before alpha, higher numbers first, then
/// non-conforming names alphabetically.
pub fn version_priority(a: &str, b: &str) -> Ordering {
    fn parse(v: &str) -> Option<(u32, u8, u32)> {
        let rest = v.strip_prefix('v')?;
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let major: u32 = digits.parse().ok()?;
        let tail = &rest[digits.len()..];
        if tail.is_empty() {
            return Some((major, 2, 0));
        }
        let (level, num) = if let Some(n) = tail.strip_prefix("beta") {
            (1, n)
        } else if let Some(n) = tail.strip_prefix("alpha") {
            (0, n)
        } else {
            return None;
        };
        Some((major, level, num.parse().ok()?))
    }
    match (parse(a), parse(b)) {
        (Some((ma, la, na)), Some((mb, lb, nb))) => lb.cmp(&la).then(mb.cmp(&ma)).then(nb.cmp(&na)),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

/// Builds the resource a CustomResourceDefinition serves, or `None` when it serves no version.
pub fn crd_def(crd: &Value) -> Option<ResourceDef> {
    let spec = crd.get("spec")?;
    let group = spec.get("group")?.as_str()?.to_string();
    let names = spec.get("names")?;
    let plural = names.get("plural")?.as_str()?.to_string();
    let kind = names.get("kind")?.as_str()?.to_string();
    let versions = spec.get("versions")?.as_array()?;
    let served: Vec<&Value> =
        versions.iter().filter(|v| v.get("served").and_then(Value::as_bool).unwrap_or(false)).collect();
    let storage = versions
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool).unwrap_or(false))
        .or_else(|| served.first().copied())?;
    let storage_name = storage.get("name")?.as_str()?.to_string();
    let mut names_list: Vec<String> = served
        .iter()
        .filter_map(|v| v.get("name").and_then(Value::as_str))
        .filter(|n| *n != storage_name)
        .map(str::to_string)
        .collect();
    names_list.sort_by(|a, b| version_priority(a, b));
    if served.is_empty() {
        return None;
    }
    names_list.insert(0, storage_name);
    let sub = storage.get("subresources");
    let status = sub.and_then(|s| s.get("status")).is_some();
    let scale = sub.and_then(|s| s.get("scale")).map(|s| ScalePaths {
        spec_replicas: s.get("specReplicasPath").and_then(Value::as_str).unwrap_or(".spec.replicas").to_string(),
        status_replicas: s.get("statusReplicasPath").and_then(Value::as_str).unwrap_or(".status.replicas").to_string(),
        label_selector: s.get("labelSelectorPath").and_then(Value::as_str).map(str::to_string),
    });
    let printer_columns = storage
        .get("additionalPrinterColumns")
        .and_then(Value::as_array)
        .map(|cols| {
            cols.iter()
                .filter_map(|c| {
                    Some(PrinterColumn {
                        name: c.get("name")?.as_str()?.to_string(),
                        type_: c.get("type").and_then(Value::as_str).unwrap_or("string").into(),
                        json_path: c.get("jsonPath")?.as_str()?.to_string(),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    let strings = |key: &str| -> Vec<String> {
        names
            .get(key)
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
            .unwrap_or_default()
    };
    Some(ResourceDef {
        singular: names
            .get("singular")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| kind.to_lowercase()),
        group,
        versions: names_list,
        resource: plural,
        kind,
        short_names: strings("shortNames"),
        categories: strings("categories"),
        namespaced: spec.get("scope").and_then(Value::as_str) != Some("Cluster"),
        status,
        scale,
        custom: true,
        printer_columns,
    })
}

/// All served resources: the built-ins plus the ones from stored CRDs.
#[derive(Debug, Clone)]
pub struct Registry {
    builtins: Vec<Arc<ResourceDef>>,
    crds: BTreeMap<String, Arc<ResourceDef>>,
}

impl Default for Registry {
    fn default() -> Self {
        Self { builtins: BUILTINS.iter().map(|bi| Arc::new(builtin_def(bi))).collect(), crds: BTreeMap::new() }
    }
}

impl Registry {
    /// Every served resource, built-ins first.
    pub fn all(&self) -> impl Iterator<Item = &Arc<ResourceDef>> {
        self.builtins.iter().chain(self.crds.values())
    }

    /// The resource served at `group/version/resource`.
    pub fn lookup(&self, group: &str, version: &str, resource: &str) -> Option<Arc<ResourceDef>> {
        self.all().find(|d| d.group == group && d.resource == resource && d.serves(version)).cloned()
    }

    /// The resource `group/resource` in any version.
    pub fn by_group_resource(&self, group: &str, resource: &str) -> Option<Arc<ResourceDef>> {
        self.all().find(|d| d.group == group && d.resource == resource).cloned()
    }

    /// Replaces the CRD-defined resources with the ones the given CRDs define.
    pub fn set_crds<'a>(&mut self, crds: impl Iterator<Item = &'a Value>) {
        self.crds = crds
            .filter(|crd| !meta::is_deleting(crd))
            .filter_map(|crd| Some((meta::name(crd).to_string(), Arc::new(crd_def(crd)?))))
            .collect();
    }

    /// Served API groups in discovery order: each with its versions, preferred first.
    pub fn groups(&self) -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        for def in self.all() {
            if def.group.is_empty() {
                continue;
            }
            let idx = match out.iter().position(|(g, _)| *g == def.group) {
                Some(i) => i,
                None => {
                    out.push((def.group.clone(), vec![]));
                    out.len() - 1
                }
            };
            if let Some((_, versions)) = out.get_mut(idx) {
                for v in &def.versions {
                    if !versions.contains(v) {
                        versions.push(v.clone());
                    }
                }
            }
        }
        for (_, versions) in &mut out {
            versions.sort_by(|a, b| version_priority(a, b));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn version_order() {
        let mut v = vec!["v1alpha1", "v2", "v1beta1", "v1", "foo", "v1beta2"];
        v.sort_by(|a, b| version_priority(a, b));
        assert_eq!(v, ["v2", "v1", "v1beta2", "v1beta1", "v1alpha1", "foo"]);
    }

    #[test]
    fn crd_becomes_resource() {
        let crd = json!({
            "metadata": {"name": "clonesets.apps.kruise.io"},
            "spec": {
                "group": "apps.kruise.io",
                "names": {"plural": "clonesets", "kind": "CloneSet", "shortNames": ["clone"]},
                "scope": "Namespaced",
                "versions": [
                    {"name": "v1beta1", "served": true, "storage": false},
                    {"name": "v1alpha1", "served": true, "storage": true,
                     "subresources": {"status": {}, "scale": {
                        "specReplicasPath": ".spec.replicas",
                        "statusReplicasPath": ".status.replicas",
                        "labelSelectorPath": ".status.labelSelector"}}},
                    {"name": "v1alpha0", "served": false, "storage": false},
                ]
            }
        });
        let def = crd_def(&crd).unwrap();
        assert_eq!(def.versions, ["v1alpha1", "v1beta1"]);
        assert!(def.status && def.namespaced && def.custom);
        assert_eq!(def.singular, "cloneset");
        let mut reg = Registry::default();
        reg.set_crds(std::iter::once(&crd));
        assert!(reg.lookup("apps.kruise.io", "v1beta1", "clonesets").is_some());
        assert!(reg.lookup("apps.kruise.io", "v1alpha0", "clonesets").is_none());
        let groups = reg.groups();
        let kruise = groups.iter().find(|(g, _)| g == "apps.kruise.io").unwrap();
        assert_eq!(kruise.1, ["v1beta1", "v1alpha1"]);
    }
}
