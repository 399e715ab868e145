//! Which SidecarSets apply to a new pod, and which version of each is injected (spec §4.2).
//!
//! A set applies when injection is not paused, its namespace scope admits the pod's namespace
//! (`spec.namespace`, which wins over `namespaceSelector` as in kruise's v1alpha1→v1beta1
//! conversion, or `namespaceSelector` over the Namespace's labels) and its non-empty selector
//! matches the pod's labels. A set pinning `injectionStrategy.revision` is injected at that
//! historical version (read back from its ControllerRevision) when its update is paused, under
//! policy `Always`, or under policy `Partial` for pods outside `updateStrategy.selector` and for
//! a share `p%` of the others (`partition: p%`). A canary set drops its base set from the pod.
//!
//! Two choices differ from kruise on purpose: a pinned revision that cannot be found falls back
//! to the live set (spec §4.2; kruise fails the pod creation), and under `Partial` a pod that
//! already records one of the two versions in its hash annotation keeps it, so a re-invocation
//! of the webhook does not draw again.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::Value;

use super::{CUSTOM_VERSION_LABEL, SIDECARSET_NAME_LABEL, annotations, canary_base, hash};
use crate::apis::SidecarSet;
use crate::apis::keys::{SIDECARSET_HASH, SIDECARSET_HASH_WITHOUT_IMAGE};
use crate::apis::sidecarset::{SidecarSetInjectRevision, SidecarSetSpec};
use crate::compat::selector::Selector;

/// What matching reads besides the pod and the sets.
pub struct MatchInput<'a> {
    /// Labels of the pod's Namespace (with `kubernetes.io/metadata.name`).
    pub namespace_labels: &'a BTreeMap<String, String>,
    /// The ControllerRevisions of kruise's namespace; only called for sets pinning a revision.
    pub revisions: &'a dyn Fn() -> Vec<Arc<ControllerRevision>>,
    /// A number in [0, 1) drawn for the `Partial` policy.
    pub draw: f64,
}

/// Why matching failed (the pod webhook answers 500, as kruise).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MatchError {
    /// A selector with an unknown operator.
    #[error("sidecarSet {set}: {message}")]
    Selector {
        /// The SidecarSet.
        set: String,
        /// What is wrong.
        message: String,
    },
    /// A ControllerRevision whose data is not a SidecarSet revision.
    #[error("sidecarSet {set}: cannot restore ControllerRevision {revision}: {message}")]
    Revision {
        /// The SidecarSet.
        set: String,
        /// The ControllerRevision.
        revision: String,
        /// What is wrong.
        message: String,
    },
    /// `updateStrategy.partition` is not a percentage under policy `Partial`.
    #[error("sidecarSet {set}: {message}")]
    Partition {
        /// The SidecarSet.
        set: String,
        /// What is wrong.
        message: String,
    },
}

/// kruise's `ValidatedLabelSelectorAsSelector`, with kruise's error text.
fn selector(
    set: &SidecarSet,
    sel: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>,
) -> Result<Selector, MatchError> {
    Selector::from_validated(sel).map_err(|e| MatchError::Selector {
        set: set.metadata.name.clone().unwrap_or_default(),
        message: match e {
            crate::compat::selector::SelectorError::InvalidOperator(op) => {
                format!("{} is not a valid pod selector operator", crate::compat::field::go_quote(&op))
            }
            other => other.to_string(),
        },
    })
}

/// `PodMatchedSidecarSet`: namespace scope and selector.
pub fn pod_matches(
    pod: &Pod,
    namespace: &str,
    namespace_labels: &BTreeMap<String, String>,
    set: &SidecarSet,
) -> Result<bool, MatchError> {
    if !set.spec.namespace.is_empty() {
        if set.spec.namespace != namespace {
            return Ok(false);
        }
    } else if let Some(ns_sel) = &set.spec.namespace_selector {
        // kruise: an unusable namespace selector (or a missing Namespace) means "not matched".
        match Selector::from_validated(Some(ns_sel)) {
            Ok(s) if s.matches(namespace_labels) => {}
            _ => return Ok(false),
        }
    }
    let sel = selector(set, set.spec.selector.as_ref())?;
    let empty = BTreeMap::new();
    let labels = pod.metadata.labels.as_ref().unwrap_or(&empty);
    Ok(!sel.is_empty() && sel.matches(labels))
}

/// The sets to inject into `pod`, in candidate order, each at the version to inject.
pub fn matched_sets(
    pod: &Pod,
    namespace: &str,
    candidates: &[Arc<SidecarSet>],
    input: &MatchInput<'_>,
) -> Result<Vec<Arc<SidecarSet>>, MatchError> {
    let mut matched = Vec::new();
    let mut bases = BTreeSet::new();
    for set in candidates {
        if set.spec.injection_strategy.paused {
            continue;
        }
        if !pod_matches(pod, namespace, input.namespace_labels, set)? {
            continue;
        }
        let version = version_to_inject(set, pod, input)?;
        if let Some(base) = canary_base(&version) {
            bases.insert(base.to_string());
        }
        matched.push(version);
    }
    matched.retain(|s| !bases.contains(s.metadata.name.as_deref().unwrap_or("")));
    Ok(matched)
}

/// `getSuitableRevisionSidecarSet` for a CREATE.
fn version_to_inject(set: &Arc<SidecarSet>, pod: &Pod, input: &MatchInput<'_>) -> Result<Arc<SidecarSet>, MatchError> {
    let Some(revision) = set.spec.injection_strategy.revision.as_ref() else { return Ok(Arc::clone(set)) };
    if revision.revision_name.is_none() && revision.custom_version.is_none() {
        return Ok(Arc::clone(set));
    }
    let Some(history) = history_version(set, revision, &(input.revisions)())? else {
        return Ok(Arc::clone(set));
    };
    let history = Arc::new(history);
    if set.spec.update_strategy.paused {
        return Ok(history);
    }
    if revision.policy != "Partial" {
        return Ok(history);
    }
    let strategy = &set.spec.update_strategy;
    if strategy.selector.is_some() {
        let sel = selector(set, strategy.selector.as_ref())?;
        let empty = BTreeMap::new();
        if !sel.matches(pod.metadata.labels.as_ref().unwrap_or(&empty)) {
            return Ok(history);
        }
    }
    let probability = match &strategy.partition {
        None | Some(IntOrString::Int(_)) => return Ok(Arc::clone(set)),
        Some(IntOrString::String(s)) => parse_percentage(s)
            .map_err(|message| MatchError::Partition { set: set.metadata.name.clone().unwrap_or_default(), message })?,
    };
    // A pod that already carries one of the two versions keeps it (idempotent re-invocation).
    let name = set.metadata.name.as_deref().unwrap_or("");
    let recorded = pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(SIDECARSET_HASH))
        .and_then(|v| annotations::parse_hashes(v).ok())
        .and_then(|m| m.get(name).map(|e| e.hash.clone()));
    if let Some(recorded) = recorded {
        if recorded == set_hash(&history) {
            return Ok(history);
        }
        if recorded == set_hash(set) {
            return Ok(Arc::clone(set));
        }
    }
    Ok(if input.draw <= probability { history } else { Arc::clone(set) })
}

fn set_hash(set: &SidecarSet) -> String {
    set.metadata.annotations.as_ref().and_then(|a| a.get(SIDECARSET_HASH)).cloned().unwrap_or_default()
}

/// kruise's `ParsePercentageAsFloat64`: `"p%"` → p/100.
fn parse_percentage(s: &str) -> Result<f64, String> {
    let Some(number) = s.strip_suffix('%') else {
        return Err("invalid type: string is not a percentage".into());
    };
    number
        .parse::<f64>()
        .map(|v| v / 100.0)
        .map_err(|_| format!("strconv.ParseFloat: parsing {}: invalid syntax", crate::compat::field::go_quote(number)))
}

/// The ControllerRevision a pinned revision names: by `revisionName`, or the newest revision of
/// the set labelled with `customVersion`.
pub fn find_revision(
    set: &SidecarSet,
    revision: &SidecarSetInjectRevision,
    revisions: &[Arc<ControllerRevision>],
) -> Option<Arc<ControllerRevision>> {
    if let Some(name) = &revision.revision_name {
        return revisions.iter().find(|r| r.metadata.name.as_deref() == Some(name)).cloned();
    }
    let version = revision.custom_version.as_ref()?;
    let set_name = set.metadata.name.as_deref().unwrap_or("");
    revisions
        .iter()
        .filter(|r| {
            let labels = r.metadata.labels.as_ref();
            labels.and_then(|l| l.get(SIDECARSET_NAME_LABEL)).map(String::as_str) == Some(set_name)
                && labels.and_then(|l| l.get(CUSTOM_VERSION_LABEL)) == Some(version)
        })
        .max_by_key(|r| {
            let created = r.metadata.creation_timestamp.as_ref().and_then(|t| serde_json::to_string(t).ok());
            (r.revision, created, r.metadata.name.clone())
        })
        .cloned()
}

/// `GetHistorySidecarSet`: the live set with its spec replaced by the revision's recorded
/// fields, the revision's hash annotations (computed when absent) and `status.latestRevision`
/// set to the revision name. `None` when the revision does not exist.
pub fn history_version(
    set: &SidecarSet,
    revision: &SidecarSetInjectRevision,
    revisions: &[Arc<ControllerRevision>],
) -> Result<Option<SidecarSet>, MatchError> {
    let Some(cr) = find_revision(set, revision, revisions) else { return Ok(None) };
    let cr_name = cr.metadata.name.clone().unwrap_or_default();
    let err = |message: String| MatchError::Revision {
        set: set.metadata.name.clone().unwrap_or_default(),
        revision: cr_name.clone(),
        message,
    };
    let data = cr.data.as_ref().map(|d| d.0.clone()).unwrap_or(Value::Null);
    let mut spec = data.get("spec").cloned().unwrap_or(Value::Object(Default::default()));
    strip_nulls(&mut spec);
    if let Value::Object(m) = &mut spec {
        m.retain(|k, _| {
            matches!(k.as_str(), "volumes" | "containers" | "initContainers" | "imagePullSecrets" | "patchPodMetadata")
        });
    }
    let spec: SidecarSetSpec = serde_json::from_value(spec).map_err(|e| err(e.to_string()))?;
    let mut restored = set.clone();
    restored.spec = spec;
    let (with_image, without_image) = hash::hashes(&restored.spec);
    let cr_annotations = cr.metadata.annotations.clone().unwrap_or_default();
    let pick =
        |key: &str, computed: String| cr_annotations.get(key).filter(|v| !v.is_empty()).cloned().unwrap_or(computed);
    let annotations = restored.metadata.annotations.get_or_insert_with(Default::default);
    annotations.insert(SIDECARSET_HASH.into(), pick(SIDECARSET_HASH, with_image));
    annotations.insert(SIDECARSET_HASH_WITHOUT_IMAGE.into(), pick(SIDECARSET_HASH_WITHOUT_IMAGE, without_image));
    restored.status.get_or_insert_with(Default::default).latest_revision = cr_name;
    Ok(Some(restored))
}

/// Go decodes `null` as the zero value; serde's `default` only covers absent fields.
fn strip_nulls(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|_, v| !v.is_null());
            m.values_mut().for_each(strip_nulls);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_nulls),
        _ => {}
    }
}
