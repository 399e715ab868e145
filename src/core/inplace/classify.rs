//! Can pods move from one template revision to the next IN PLACE, and if so what has to change on
//! each pod? This is kruise's `CalculateSpec` (spec §3.2, revision data as described in §3.1): the
//! two templates are diffed with kruise's JSON diff ([`crate::compat::jsondiff`]), then every op is judged:
//! - `/metadata/…` ops (labels, annotations, finalizers…) are fine and become a pod-metadata patch;
//! - `/spec/…` ops must be `replace`s of `containers[N].image` (recorded as container → new image)
//!   or, with gate InPlaceWorkloadVerticalScaling, of
//!   `containers[N].resources.{limits|requests}.{cpu|memory}` (recorded, and then the pod QoS class
//!   must not change, step 4);
//! - anything else — an added/removed field, another spec field, the bare `/metadata` path — means
//!   the pod has to be recreated, and [`NotInPlace`] names the first such op.
//!
//! With gate InPlaceUpdateEnvFromMetadata (default on), an added/changed label or annotation that a
//! container of the NEW template reads through an env `fieldRef` (`metadata.labels['k']`,
//! single-quoted subscript only; `SIDECARSET_VERSION`/`SIDECARSET_VERSION_ALT` and literal-valued
//! envs ignored) is recorded per container (that container will be restarted by kruise-daemon) and
//! taken out of the metadata patch (step 5). Adding the FIRST label (`add /metadata/labels` with an
//! object value) is a plain metadata op, as in kruise. With gate
//! RecreatePodWhenChangeVCTInCloneSetGate, differing volume-claim-template hashes on the two
//! revisions force a recreate (step 2).
//!
//! Typed templates are compared in the shape Go's encoder gives them ([`crate::compat::goshape`]); the env
//! reference rules live in [`super::envref`], the resize rules in [`super::vertical`] (QoS in
//! [`super::qos`]) and the metadata patch in [`crate::compat::metapatch`].

use super::envref::extract_env_references;
use super::qos::QosClass;
use super::vertical::{ResizePlan, is_resources_path, qos_change};
use crate::compat::goshape::go_shape_template;
use crate::compat::jsondiff::{OpKind, PatchOp, create_patch};
use crate::compat::metapatch::metadata_patch;
use crate::core::features::{FeatureGates, Gate};
use k8s_openapi::api::core::v1::{Container, PodTemplateSpec, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;

/// Revision annotation holding the hash of a CloneSet's volumeClaimTemplates (spec §3.1).
pub const VCT_HASH_ANNOTATION: &str = "kruise.io/cloneset-volumeclaimtemplate-hash";

/// The feature gates that change the decision, with kruise's defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gates {
    /// `InPlaceUpdateEnvFromMetadata` (default on; the caller forces it off when KruiseDaemon is
    /// off).
    pub in_place_update_env_from_metadata: bool,
    /// `InPlaceWorkloadVerticalScaling` (default off).
    pub in_place_workload_vertical_scaling: bool,
    /// `RecreatePodWhenChangeVCTInCloneSetGate` (default off).
    pub recreate_pod_when_change_vct_in_cloneset: bool,
}

impl Default for Gates {
    fn default() -> Self {
        Gates {
            in_place_update_env_from_metadata: true,
            in_place_workload_vertical_scaling: false,
            recreate_pod_when_change_vct_in_cloneset: false,
        }
    }
}

impl Gates {
    /// The classifier's gates from the feature gates (InPlaceUpdateEnvFromMetadata is already off
    /// when KruiseDaemon is).
    pub fn from_features(gates: &FeatureGates) -> Self {
        Gates {
            in_place_update_env_from_metadata: gates.enabled(Gate::InPlaceUpdateEnvFromMetadata),
            in_place_workload_vertical_scaling: gates.enabled(Gate::InPlaceWorkloadVerticalScaling),
            recreate_pod_when_change_vct_in_cloneset: gates.enabled(Gate::RecreatePodWhenChangeVCTInCloneSetGate),
        }
    }
}

/// Everything besides the two templates that the decision reads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClassifyOptions {
    pub gates: Gates,
    /// [`VCT_HASH_ANNOTATION`] on the old and new revisions (`None` = annotation absent).
    pub old_vct_hash: Option<String>,
    pub new_vct_hash: Option<String>,
    /// Set by CloneSet InPlaceOnly: VCT hash differences never force a recreate.
    pub ignore_vct_hash_diff: bool,
}

/// What an in-place update has to do to a pod (kruise's `UpdateSpec` minus `revision` and
/// `graceSeconds`, which the caller knows). Maps are keyed by container name.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UpdateSpec {
    pub container_images: BTreeMap<String, String>,
    /// New cpu/memory limits/requests (only with InPlaceWorkloadVerticalScaling); quantities
    /// canonical.
    pub container_resources: BTreeMap<String, ResourceRequirements>,
    /// Labels/annotations a container reads through env `fieldRef`, with their new values.
    pub container_ref_metadata: BTreeMap<String, ObjectMeta>,
    /// Strategic-merge patch for the pod's metadata, e.g.
    /// `{"metadata":{"labels":{"k1":"v1","k2":null}}}`; `Some({})` when only env-referenced
    /// metadata changed; `None` when no metadata changed at all.
    pub meta_data_patch: Option<Value>,
    pub update_env_from_metadata: bool,
}

impl UpdateSpec {
    /// Kruise's `VerticalUpdateOnly`: only resources change.
    pub fn vertical_update_only(&self) -> bool {
        !self.container_resources.is_empty() && self.container_images.is_empty() && !self.update_env_from_metadata
    }
}

/// Why the pods must be recreated instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NotInPlaceReason {
    /// A template or revision `data` that does not decode as a pod template.
    InvalidTemplate(String),
    /// Both revisions carry a VCT hash and they differ (gate
    /// RecreatePodWhenChangeVCTInCloneSetGate).
    VolumeClaimTemplatesChanged { old: String, new: String },
    /// The op is neither under `/spec/` nor under `/metadata/` (e.g. the whole `/metadata` object).
    OutsideSpecAndMetadata,
    /// `add` or `remove` under `/spec/`.
    NotAReplace,
    /// `containers[N].image` where N is beyond the OLD template's containers.
    ContainerIndexOutOfRange,
    /// `containers[N].image` replaced by something that is not a string.
    ImageNotAString,
    /// A resources op that cannot be applied by resizing (wrong shape, resource, or value).
    ResourceNotResizable(String),
    /// Resources changed and the pod QoS class would change with them.
    QosClassChanged { old: QosClass, new: QosClass },
    /// Any other spec field.
    FieldNotUpdatable,
    /// The pod metadata patch could not be built.
    MetadataPatch(String),
}

impl fmt::Display for NotInPlaceReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidTemplate(d) => write!(f, "not a valid pod template: {d}"),
            Self::VolumeClaimTemplatesChanged { old, new } => {
                write!(f, "volumeClaimTemplates changed (hash {old} -> {new})")
            }
            Self::OutsideSpecAndMetadata => f.write_str("the template changed outside spec/metadata"),
            Self::NotAReplace => f.write_str("a pod spec field was added or removed"),
            Self::ContainerIndexOutOfRange => f.write_str("image of a container the old template lacks"),
            Self::ImageNotAString => f.write_str("the new image is not a string"),
            Self::ResourceNotResizable(d) => write!(f, "resources cannot be resized in place: {d}"),
            Self::QosClassChanged { old, new } => {
                write!(f, "pod QoS class would change: {old} -> {new}")
            }
            Self::FieldNotUpdatable => f.write_str(
                "only container images (and, with InPlaceWorkloadVerticalScaling, cpu/memory) \
                 can change in place",
            ),
            Self::MetadataPatch(d) => write!(f, "cannot build the pod metadata patch: {d}"),
        }
    }
}

/// The update cannot be done in place: the first offending op (paths relative to the template, as
/// kruise reports them, e.g. `replace /spec/containers/0/env/0/value`) and why.
#[derive(Clone, Debug, PartialEq)]
pub struct NotInPlace {
    pub op: Option<PatchOp>,
    pub reason: NotInPlaceReason,
}

impl fmt::Display for NotInPlace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.op {
            Some(op) => write!(f, "cannot update in place: {} (found {op})", self.reason),
            None => write!(f, "cannot update in place: {}", self.reason),
        }
    }
}

impl std::error::Error for NotInPlace {}

fn refuse(op: Option<PatchOp>, reason: NotInPlaceReason) -> NotInPlace {
    NotInPlace { op, reason }
}

/// Decide from two (defaulted) pod templates.
pub fn classify_template_update(
    old: &PodTemplateSpec,
    new: &PodTemplateSpec,
    opts: &ClassifyOptions,
) -> Result<UpdateSpec, NotInPlace> {
    let to_json = |t: &PodTemplateSpec| {
        serde_json::to_value(t).map_err(|e| refuse(None, NotInPlaceReason::InvalidTemplate(e.to_string())))
    };
    let (mut old_json, mut new_json) = (to_json(old)?, to_json(new)?);
    go_shape_template(&mut old_json);
    go_shape_template(&mut new_json);
    let ops = create_patch(&old_json, &new_json);
    check_vct(opts)?;
    decide(ops, old, new, opts)
}

/// Decide from two ControllerRevision `data` values
/// (`{"spec":{"template":{…,"$patch":"replace"}}}`), exactly as kruise does: diff the data, strip
/// the first `/spec/template` from each path, and read the templates out of the data for container
/// names, env references and QoS.
pub fn classify_revision_update(
    old_data: &Value,
    new_data: &Value,
    opts: &ClassifyOptions,
) -> Result<UpdateSpec, NotInPlace> {
    if !old_data.is_object() || !new_data.is_object() {
        return Err(refuse(None, NotInPlaceReason::InvalidTemplate("revision data is not a JSON object".into())));
    }
    let ops = create_patch(old_data, new_data)
        .into_iter()
        .map(|op| PatchOp { path: op.path.replacen("/spec/template", "", 1), ..op })
        .collect();
    check_vct(opts)?;
    let (old, new) = (template_from_data(old_data)?, template_from_data(new_data)?);
    decide(ops, &old, &new, opts)
}

/// Kruise's `GetTemplateFromRevision`: a missing `spec.template` decodes as an empty template.
fn template_from_data(data: &Value) -> Result<PodTemplateSpec, NotInPlace> {
    match data.get("spec").and_then(|s| s.get("template")) {
        None | Some(Value::Null) => Ok(PodTemplateSpec::default()),
        Some(t) => serde_json::from_value(t.clone())
            .map_err(|e| refuse(None, NotInPlaceReason::InvalidTemplate(e.to_string()))),
    }
}

/// Step 2: with the gate on and not ignored, two present and different hashes force a recreate.
fn check_vct(opts: &ClassifyOptions) -> Result<(), NotInPlace> {
    if !opts.gates.recreate_pod_when_change_vct_in_cloneset || opts.ignore_vct_hash_diff {
        return Ok(());
    }
    match (&opts.old_vct_hash, &opts.new_vct_hash) {
        (Some(old), Some(new)) if old != new => {
            Err(refuse(None, NotInPlaceReason::VolumeClaimTemplatesChanged { old: old.clone(), new: new.clone() }))
        }
        _ => Ok(()),
    }
}

/// `^/spec/containers/([0-9]+)/<field>$` → the index text.
fn container_field_index<'a>(path: &'a str, field: &str) -> Option<&'a str> {
    let rest = path.strip_prefix("/spec/containers/")?;
    let (index, tail) = rest.split_once('/')?;
    (tail == field && !index.is_empty() && index.bytes().all(|b| b.is_ascii_digit())).then_some(index)
}

fn containers(t: &PodTemplateSpec) -> &[Container] {
    t.spec.as_ref().map(|s| s.containers.as_slice()).unwrap_or(&[])
}

fn decide(
    ops: Vec<PatchOp>,
    old: &PodTemplateSpec,
    new: &PodTemplateSpec,
    opts: &ClassifyOptions,
) -> Result<UpdateSpec, NotInPlace> {
    let mut spec = UpdateSpec::default();
    let mut resize = ResizePlan::default();
    let mut metadata_ops = Vec::new();
    for op in ops {
        if !op.path.starts_with("/spec/") {
            if op.path.starts_with("/metadata/") {
                metadata_ops.push(op);
                continue;
            }
            return Err(refuse(Some(op), NotInPlaceReason::OutsideSpecAndMetadata));
        }
        if op.op != OpKind::Replace {
            return Err(refuse(Some(op), NotInPlaceReason::NotAReplace));
        }
        if let Some(index) = container_field_index(&op.path, "image") {
            let Some(container) = index.parse::<usize>().ok().and_then(|i| containers(old).get(i)) else {
                return Err(refuse(Some(op), NotInPlaceReason::ContainerIndexOutOfRange));
            };
            let Some(Value::String(image)) = &op.value else {
                return Err(refuse(Some(op), NotInPlaceReason::ImageNotAString));
            };
            spec.container_images.insert(container.name.clone(), image.clone());
            continue;
        }
        if opts.gates.in_place_workload_vertical_scaling && is_resources_path(&op.path) {
            if let Err(detail) = resize.record(&op, containers(old)) {
                return Err(refuse(Some(op), NotInPlaceReason::ResourceNotResizable(detail)));
            }
            continue;
        }
        return Err(refuse(Some(op), NotInPlaceReason::FieldNotUpdatable));
    }

    if opts.gates.in_place_workload_vertical_scaling && !resize.is_empty() {
        let change =
            qos_change(old, new).map_err(|e| refuse(None, NotInPlaceReason::InvalidTemplate(e.to_string())))?;
        if let Some((old, new)) = change {
            return Err(refuse(None, NotInPlaceReason::QosClassChanged { old, new }));
        }
    }
    spec.container_resources = resize.into_requirements();

    if !metadata_ops.is_empty() {
        let mut old_meta = old.metadata.clone().unwrap_or_default();
        let mut new_meta = new.metadata.clone().unwrap_or_default();
        if opts.gates.in_place_update_env_from_metadata {
            spec.container_ref_metadata =
                extract_env_references(&metadata_ops, containers(new), &mut old_meta, &mut new_meta);
            spec.update_env_from_metadata = !spec.container_ref_metadata.is_empty();
        }
        let patch =
            metadata_patch(&old_meta, &new_meta).map_err(|e| refuse(None, NotInPlaceReason::MetadataPatch(e.0)))?;
        spec.meta_data_patch = Some(patch);
    }
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Map;
    use serde_json::json;

    fn tpl(v: Value) -> PodTemplateSpec {
        serde_json::from_value(v).unwrap()
    }

    /// ControllerRevision data for a template, as kruise stores it (Go's encoder shape).
    fn data(mut template: Value) -> Value {
        go_shape_template(&mut template);
        template["$patch"] = json!("replace");
        json!({"spec": {"template": template}})
    }

    /// A defaulted-looking template: `main` reads label `k` and annotation `a/b` through env
    /// fieldRefs.
    #[rustfmt::skip]
    fn base() -> Value {
        let field_ref = |name: &str, path: &str| json!({"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}});
        let mut literal = field_ref("LIT", "metadata.labels['lit']");
        literal["value"] = json!("x");
        json!({
            "metadata": {"labels": {"app": "web", "k": "v"}, "annotations": {"note": "1"}},
            "spec": {
                "containers": [
                    {"name": "main", "image": "nginx:1", "imagePullPolicy": "Always",
                     "env": [field_ref("FROM_LABEL", "metadata.labels['k']"),
                             field_ref("FROM_ANNO", "metadata.annotations['a/b']"),
                             {"name": "MODE", "value": "prod"}],
                     "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m", "memory": "1Gi"}}},
                    {"name": "side", "image": "busybox:1",
                     "env": [field_ref("SIDECARSET_VERSION", "metadata.labels['sv']"), literal,
                             field_ref("DQ", "metadata.labels[\"dq\"]"), field_ref("WHOLE", "metadata.labels")]}
                ],
                "initContainers": [{"name": "init", "image": "alpine:3"}],
                "volumes": [{"name": "data", "emptyDir": {}}]
            }
        })
    }

    fn with(edit: impl FnOnce(&mut Value)) -> Value {
        let mut v = base();
        edit(&mut v);
        v
    }

    /// The UpdateSpec in kruise's JSON spelling, empty parts omitted.
    fn summary(s: &UpdateSpec) -> Value {
        let mut m = Map::new();
        let mut put = |k: &str, v: Value, empty: bool| {
            if !empty {
                m.insert(k.into(), v);
            }
        };
        put("containerImages", json!(s.container_images), s.container_images.is_empty());
        put("containerResources", json!(s.container_resources), s.container_resources.is_empty());
        put("containerRefMetadata", json!(s.container_ref_metadata), s.container_ref_metadata.is_empty());
        put("metaDataPatch", json!(s.meta_data_patch), s.meta_data_patch.is_none());
        put("updateEnvFromMetadata", json!(true), !s.update_env_from_metadata);
        Value::Object(m)
    }

    fn reason_name(r: &NotInPlaceReason) -> &'static str {
        use NotInPlaceReason as R;
        match r {
            R::InvalidTemplate(_) => "InvalidTemplate",
            R::VolumeClaimTemplatesChanged { .. } => "VolumeClaimTemplatesChanged",
            R::OutsideSpecAndMetadata => "OutsideSpecAndMetadata",
            R::NotAReplace => "NotAReplace",
            R::ContainerIndexOutOfRange => "ContainerIndexOutOfRange",
            R::ImageNotAString => "ImageNotAString",
            R::ResourceNotResizable(_) => "ResourceNotResizable",
            R::QosClassChanged { .. } => "QosClassChanged",
            R::FieldNotUpdatable => "FieldNotUpdatable",
            R::MetadataPatch(_) => "MetadataPatch",
        }
    }

    /// `Ok(summary)` or `Err((first offending "<op> <path>", reason))`.
    type Want = Result<Value, (Option<&'static str>, &'static str)>;
    type Got = Result<Value, (Option<String>, &'static str)>;

    fn outcome(r: Result<UpdateSpec, NotInPlace>) -> Got {
        r.map(|s| summary(&s)).map_err(|e| (e.op.map(|o| o.to_string()), reason_name(&e.reason)))
    }

    fn expect(want: &Want) -> Got {
        want.clone().map_err(|(op, reason)| (op.map(str::to_owned), reason))
    }

    fn gates(env: bool, vertical: bool, vct: bool) -> ClassifyOptions {
        let gates = Gates {
            in_place_update_env_from_metadata: env,
            in_place_workload_vertical_scaling: vertical,
            recreate_pod_when_change_vct_in_cloneset: vct,
        };
        ClassifyOptions { gates, ..Default::default() }
    }

    #[test]
    fn summary_table_rows() {
        let (dflt, vert, env_off) = (gates(true, false, false), gates(true, true, false), gates(false, false, false));
        let c0 = |f: &str, v: Value| with(|t| t["spec"]["containers"][0][f] = v);
        let res = |kind: &str, r: &str, q: &str| with(|t| t["spec"]["containers"][0]["resources"][kind][r] = json!(q));
        let label = |k: &str, v: &str| with(|t| t["metadata"]["labels"][k] = json!(v));
        let push = |list: &str, front: bool, item: Value| {
            with(|t| {
                let items = t["spec"][list].as_array_mut().unwrap();
                if front { items.insert(0, item) } else { items.push(item) }
            })
        };
        #[rustfmt::skip]
        let cases: Vec<(&str, Value, &ClassifyOptions, Want)> = vec![
            ("no change", base(), &dflt, Ok(json!({}))),
            ("one image", c0("image", json!("nginx:2")), &dflt, Ok(json!({"containerImages": {"main": "nginx:2"}}))),
            ("both images", with(|t| {
                t["spec"]["containers"][0]["image"] = json!("nginx:2");
                t["spec"]["containers"][1]["image"] = json!("busybox:2");
            }), &dflt, Ok(json!({"containerImages": {"main": "nginx:2", "side": "busybox:2"}}))),
            ("label added", label("new", "1"), &dflt, Ok(json!({"metaDataPatch": {"metadata": {"labels": {"new": "1"}}}}))),
            ("label removed", with(|t| t["metadata"]["labels"] = json!({"k": "v"})), &dflt,
             Ok(json!({"metaDataPatch": {"metadata": {"labels": {"app": null}}}}))),
            ("annotation changed (rollout restart)", with(|t| t["metadata"]["annotations"]["note"] = json!("2")), &dflt,
             Ok(json!({"metaDataPatch": {"metadata": {"annotations": {"note": "2"}}}}))),
            ("referenced label changed", label("k", "v2"), &dflt, Ok(json!({
                "containerRefMetadata": {"main": {"labels": {"k": "v2"}}}, "metaDataPatch": {},
                "updateEnvFromMetadata": true}))),
            ("referenced label + other label + image", with(|t| {
                t["metadata"]["labels"]["k"] = json!("v2");
                t["metadata"]["labels"]["other"] = json!("o");
                t["spec"]["containers"][0]["image"] = json!("nginx:2");
            }), &dflt, Ok(json!({
                "containerImages": {"main": "nginx:2"}, "containerRefMetadata": {"main": {"labels": {"k": "v2"}}},
                "metaDataPatch": {"metadata": {"labels": {"other": "o"}}}, "updateEnvFromMetadata": true}))),
            ("referenced annotation key with '/' (~1)", with(|t| t["metadata"]["annotations"]["a/b"] = json!("z")), &dflt,
             Ok(json!({"containerRefMetadata": {"main": {"annotations": {"a/b": "z"}}}, "metaDataPatch": {},
                       "updateEnvFromMetadata": true}))),
            ("referenced label removed: plain patch", with(|t| t["metadata"]["labels"] = json!({"app": "web"})), &dflt,
             Ok(json!({"metaDataPatch": {"metadata": {"labels": {"k": null}}}}))),
            ("SIDECARSET_VERSION ref ignored", label("sv", "3"), &dflt,
             Ok(json!({"metaDataPatch": {"metadata": {"labels": {"sv": "3"}}}}))),
            ("env with literal value ignored", label("lit", "1"), &dflt,
             Ok(json!({"metaDataPatch": {"metadata": {"labels": {"lit": "1"}}}}))),
            ("double-quoted subscript ignored", label("dq", "1"), &dflt,
             Ok(json!({"metaDataPatch": {"metadata": {"labels": {"dq": "1"}}}}))),
            ("gate off: referenced label is plain", label("k", "v2"), &env_off,
             Ok(json!({"metaDataPatch": {"metadata": {"labels": {"k": "v2"}}}}))),
            ("env literal", with(|t| t["spec"]["containers"][0]["env"][2]["value"] = json!("dev")), &dflt,
             Err((Some("replace /spec/containers/0/env/2/value"), "FieldNotUpdatable"))),
            ("env added", with(|t| t["spec"]["initContainers"][0]["env"] = json!([{"name": "A", "value": "1"}])), &dflt,
             Err((Some("add /spec/initContainers/0/env"), "NotAReplace"))),
            ("command added", with(|t| t["spec"]["containers"][1]["command"] = json!(["sh"])), &dflt,
             Err((Some("add /spec/containers/1/command"), "NotAReplace"))),
            ("imagePullPolicy", c0("imagePullPolicy", json!("IfNotPresent")), &dflt,
             Err((Some("replace /spec/containers/0/imagePullPolicy"), "FieldNotUpdatable"))),
            ("init container image", with(|t| t["spec"]["initContainers"][0]["image"] = json!("alpine:4")), &dflt,
             Err((Some("replace /spec/initContainers/0/image"), "FieldNotUpdatable"))),
            ("container appended", push("containers", false, json!({"name": "x", "image": "x"})), &dflt,
             Err((Some("add /spec/containers/2"), "NotAReplace"))),
            ("container inserted in front", push("containers", true, json!({"name": "x", "image": "x"})), &dflt,
             Err((Some("add /spec/containers/2"), "NotAReplace"))),
            ("volume added", push("volumes", false, json!({"name": "more", "emptyDir": {}})), &dflt,
             Err((Some("add /spec/volumes/1"), "NotAReplace"))),
            ("pod-level field", with(|t| t["spec"]["dnsPolicy"] = json!("Default")), &dflt,
             Err((Some("add /spec/dnsPolicy"), "NotAReplace"))),
            ("cpu limit, vertical scaling off", res("limits", "cpu", "2"), &dflt,
             Err((Some("replace /spec/containers/0/resources/limits/cpu"), "FieldNotUpdatable"))),
            ("cpu limit, vertical scaling on", res("limits", "cpu", "2"), &vert,
             Ok(json!({"containerResources": {"main": {"limits": {"cpu": "2"}}}}))),
            ("cpu request up to limit; `side` keeps it Burstable", res("requests", "cpu", "1"), &vert,
             Ok(json!({"containerResources": {"main": {"requests": {"cpu": "1"}}}}))),
            ("image + memory", with(|t| {
                t["spec"]["containers"][0]["image"] = json!("nginx:2");
                t["spec"]["containers"][0]["resources"]["limits"]["memory"] = json!("2Gi");
                t["spec"]["containers"][0]["resources"]["requests"]["memory"] = json!("2Gi");
            }), &vert, Ok(json!({"containerImages": {"main": "nginx:2"},
                "containerResources": {"main": {"limits": {"memory": "2Gi"}, "requests": {"memory": "2Gi"}}}}))),
            ("resource key added", res("limits", "ephemeral-storage", "1Gi"), &vert,
             Err((Some("add /spec/containers/0/resources/limits/ephemeral-storage"), "NotAReplace"))),
            ("resource key removed", with(|t| {
                t["spec"]["containers"][0]["resources"]["requests"].as_object_mut().unwrap().remove("cpu");
            }), &vert, Err((Some("remove /spec/containers/0/resources/requests/cpu"), "NotAReplace"))),
            ("first resources of a container", with(|t| t["spec"]["containers"][1]["resources"] = json!({"limits": {"cpu": "1"}})),
             &vert, Err((Some("add /spec/containers/1/resources/limits"), "NotAReplace"))),
        ];
        let old = tpl(base());
        for (name, new, opts, want) in cases {
            let got = outcome(classify_template_update(&old, &tpl(new.clone()), opts));
            assert_eq!(got, expect(&want), "template mode: {name}");
            // Revision mode must agree (same ops once `/spec/template` is stripped).
            let got = outcome(classify_revision_update(&data(base()), &data(new), opts));
            assert_eq!(got, expect(&want), "revision mode: {name}");
        }
    }

    #[test]
    fn qos_change_refuses_vertical_scaling() {
        let t = |req_cpu: &str| {
            let r = json!({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": req_cpu, "memory": "1Gi"}});
            tpl(json!({"spec": {"containers": [{"name": "g", "image": "i", "resources": r}]}}))
        };
        let got = classify_template_update(&t("500m"), &t("1"), &gates(true, true, false));
        let want = NotInPlaceReason::QosClassChanged { old: QosClass::Burstable, new: QosClass::Guaranteed };
        assert_eq!(got, Err(NotInPlace { op: None, reason: want }));
        let got = classify_template_update(&t("500m"), &t("700m"), &gates(true, true, false));
        assert_eq!(outcome(got), Ok(json!({"containerResources": {"g": {"requests": {"cpu": "700m"}}}})));
    }

    /// kruise's `TestCalculateInPlaceUpdateSpec` fixtures
    /// (pkg/util/inplaceupdate/inplace_update_test.go).
    #[test]
    fn kruise_fixtures() {
        let c1 = |image: &str, env: &str| format!(r#"{{"containers":[{{"name":"c1","image":"{image}"{env}}}]}}"#);
        let env = r#","env":[{"name":"TEST_ENV","valueFrom":{"fieldRef":{"apiVersion":"v1","fieldPath":"metadata.labels['k']"}}}]"#;
        let rev = |outer: &str, meta: &str, spec: &str| -> Value {
            serde_json::from_str(&format!(
                r#"{{{outer}"spec":{{"template":{{"$patch":"replace",{meta}"spec":{spec}}}}}}}"#
            ))
            .unwrap()
        };
        let top = r#""metadata":{"labels":{"k":"v"}},"#;
        #[rustfmt::skip]
        let cases: Vec<(Value, Value, Want)> = vec![
            (rev("", "", &c1("foo1", "")), rev("", "", &c1("foo2", "")), Ok(json!({"containerImages": {"c1": "foo2"}}))),
            (rev(top, "", &c1("foo1", "")), rev(top, "", &c1("foo2", "")), Ok(json!({"containerImages": {"c1": "foo2"}}))),
            (rev("", r#""metadata":{"labels":{"k":"v"}},"#, &c1("foo1", "")),
             rev("", r#""metadata":{"labels":{"k":"v","k1":"v1"}},"#, &c1("foo2", "")),
             Ok(json!({"containerImages": {"c1": "foo2"}, "metaDataPatch": {"metadata": {"labels": {"k1": "v1"}}}}))),
            (rev("", r#""metadata":{"labels":{"k":"v"}},"#, &c1("foo1", env)),
             rev("", r#""metadata":{"labels":{"k":"v2","k1":"v1"}},"#, &c1("foo2", env)),
             Ok(json!({"containerImages": {"c1": "foo2"}, "containerRefMetadata": {"c1": {"labels": {"k": "v2"}}},
                       "metaDataPatch": {"metadata": {"labels": {"k1": "v1"}}}, "updateEnvFromMetadata": true}))),
            (rev("", r#""metadata":{"labels":{"k":"v","k2":"v2"},"finalizers":["fz1","fz2"]},"#, &c1("foo1", "")),
             rev("", r#""metadata":{"labels":{"k":"v","k1":"v1"},"finalizers":["fz2"]},"#, &c1("foo2", "")),
             Ok(json!({"containerImages": {"c1": "foo2"}, "metaDataPatch": {"metadata": {
                 "$deleteFromPrimitiveList/finalizers": ["fz1"], "$setElementOrder/finalizers": ["fz2"],
                 "labels": {"k1": "v1", "k2": null}}}}))),
            // kruise's last fixture is invalid JSON (so CreatePatch fails); its valid reading is refused too.
            (rev("", "", r#"{"name":"c1","containers":[{"image":"foo1"}]}"#),
             rev("", "", r#"{"containers":[{"name":"c1","image":"foo2","env":[{"name":"k","value":"v"}]}]}"#),
             Err((Some("add /spec/containers/0/env"), "NotAReplace"))),
        ];
        for (i, (old, new, want)) in cases.into_iter().enumerate() {
            let got = outcome(classify_revision_update(&old, &new, &ClassifyOptions::default()));
            assert_eq!(got, expect(&want), "fixture {i}");
        }
    }

    #[test]
    fn metadata_edge_cases() {
        let env_c = |key: &str| {
            json!([{"name": "c", "image": "i", "env": [
            {"name": "E", "valueFrom": {"fieldRef": {"fieldPath": format!("metadata.labels['{key}']")}}}]}])
        };
        #[rustfmt::skip]
        let cases: Vec<(&str, Value, Value, Want)> = vec![
            ("bare /metadata", json!({"spec": {"template": {"metadata": {"labels": {"a": "1"}}, "spec": {}}}}),
             json!({"spec": {"template": {"spec": {}}}}), Err((Some("remove /metadata"), "OutsideSpecAndMetadata"))),
            ("bare /spec/template", json!({"spec": {"template": {"spec": {}}}}), json!({"spec": {}}),
             Err((Some("remove "), "OutsideSpecAndMetadata"))),
            ("whole pod spec added", json!({"spec": {"template": {"spec": null}}}), json!({"spec": {"template": {"spec": {}}}}),
             Err((Some("add /spec"), "OutsideSpecAndMetadata"))),
            ("pod spec of the wrong type", json!({"spec": {"template": {"spec": {}}}}), json!({"spec": {"template": {"spec": 1}}}),
             Err((None, "InvalidTemplate"))),
            ("not an object", json!([1]), json!([2]), Err((None, "InvalidTemplate"))),
            // the first label arrives as `add /metadata/labels {…}`: plain metadata, env ref NOT extracted
            ("first label as an object", data(json!({"spec": {"containers": env_c("k")}})),
             data(json!({"metadata": {"labels": {"k": "v"}}, "spec": {"containers": env_c("k")}})),
             Ok(json!({"metaDataPatch": {"metadata": {"labels": {"k": "v"}}}}))),
            ("label key with ~ and /", data(json!({"metadata": {"labels": {"x": "1"}}, "spec": {"containers": env_c("a~b/c")}})),
             data(json!({"metadata": {"labels": {"x": "1", "a~b/c": "v"}}, "spec": {"containers": env_c("a~b/c")}})),
             Ok(json!({"containerRefMetadata": {"c": {"labels": {"a~b/c": "v"}}}, "metaDataPatch": {},
                       "updateEnvFromMetadata": true}))),
        ];
        for (name, old, new, want) in cases {
            let got = outcome(classify_revision_update(&old, &new, &ClassifyOptions::default()));
            assert_eq!(got, expect(&want), "{name}");
        }
        // Typed templates: no metadata at all -> labels is `add /metadata/labels`, not `add /metadata`.
        let old = tpl(json!({"spec": {"containers": [{"name": "c", "image": "i"}]}}));
        let new =
            tpl(json!({"metadata": {"labels": {"a": "1"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}));
        let got = outcome(classify_template_update(&old, &new, &ClassifyOptions::default()));
        assert_eq!(got, Ok(json!({"metaDataPatch": {"metadata": {"labels": {"a": "1"}}}})));
    }

    #[test]
    fn volume_claim_template_hash_rule() {
        let opts = |gate: bool, ignore: bool, old: Option<&str>, new: Option<&str>| ClassifyOptions {
            old_vct_hash: old.map(str::to_owned),
            new_vct_hash: new.map(str::to_owned),
            ignore_vct_hash_diff: ignore,
            ..gates(true, false, gate)
        };
        let ok: Want = Ok(json!({"containerImages": {"main": "nginx:2"}}));
        #[rustfmt::skip]
        let cases = [
            ("gate off", opts(false, false, Some("1"), Some("2")), ok.clone()),
            ("hashes differ", opts(true, false, Some("1"), Some("2")), Err((None, "VolumeClaimTemplatesChanged"))),
            ("hashes equal", opts(true, false, Some("1"), Some("1")), ok.clone()),
            ("old missing", opts(true, false, None, Some("2")), ok.clone()),
            ("new missing", opts(true, false, Some("1"), None), ok.clone()),
            ("InPlaceOnly ignores", opts(true, true, Some("1"), Some("2")), ok.clone()),
        ];
        let new = with(|t| t["spec"]["containers"][0]["image"] = json!("nginx:2"));
        for (name, o, want) in cases {
            let got = outcome(classify_template_update(&tpl(base()), &tpl(new.clone()), &o));
            assert_eq!(got, expect(&want), "{name}");
            let got = outcome(classify_revision_update(&data(base()), &data(new.clone()), &o));
            assert_eq!(got, expect(&want), "{name} (revision)");
        }
    }

    #[test]
    fn ops_the_diff_never_produces_are_still_judged() {
        let old = tpl(base());
        #[rustfmt::skip]
        let cases: Vec<(PatchOp, &str)> = vec![
            (PatchOp::replace("/spec/containers/5/image", json!("x")), "ContainerIndexOutOfRange"),
            (PatchOp::replace("/spec/containers/99999999999999999999999/image", json!("x")), "ContainerIndexOutOfRange"),
            (PatchOp::replace("/spec/containers/0/image", Value::Null), "ImageNotAString"),
            (PatchOp::replace("/spec/containers/0/resources/limits/cpu", Value::Null), "ResourceNotResizable"),
            (PatchOp::replace("/spec/containers/0/resources/limits/cpu", json!(2)), "ResourceNotResizable"),
            (PatchOp::replace("/spec/containers/9/resources/limits/cpu", json!("2")), "ResourceNotResizable"),
            (PatchOp::replace("/spec/containers/0/resources/other/cpu", json!("2")), "ResourceNotResizable"),
            (PatchOp::replace("/spec/containers/0/image/x", json!("x")), "FieldNotUpdatable"),
        ];
        for (op, want) in cases {
            let text = op.to_string();
            let got = decide(vec![op], &old, &old, &gates(true, true, false));
            assert_eq!(got.err().map(|e| reason_name(&e.reason)), Some(want), "{text}");
        }
    }

    #[test]
    fn messages_name_the_op() {
        let new = tpl(with(|t| t["spec"]["containers"][0]["imagePullPolicy"] = json!("Never")));
        let err = classify_template_update(&tpl(base()), &new, &ClassifyOptions::default());
        assert_eq!(
            err.err().map(|e| e.to_string()).as_deref(),
            Some(
                "cannot update in place: only container images (and, with InPlaceWorkloadVerticalScaling, \
                  cpu/memory) can change in place (found replace /spec/containers/0/imagePullPolicy)"
            )
        );
        let resources = BTreeMap::from([("c".to_owned(), ResourceRequirements::default())]);
        let spec = UpdateSpec { container_resources: resources, ..Default::default() };
        assert!(spec.vertical_update_only());
    }
}
