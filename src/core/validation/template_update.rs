//! What a template change on UPDATE means for running pods, as the workload validators see it:
//! - the **InPlaceOnly guard** (spec §3.6 with decisions §11.2 and §11.8): when the NEW strategy
//!   is InPlaceOnly, every change of `spec.template.spec` must be a container image replace
//!   (anchored `^/containers/[0-9]+/image$`, for CloneSet and Advanced StatefulSet alike, both API
//!   versions); the first other change is denied with a message naming the op and path and how to
//!   proceed. Template metadata is not compared.
//! - the **recreate warning** (issue 3 item 5, kruise is silent here): under InPlaceIfPossible, a
//!   change the classifier of spec §3.2 cannot apply in place gets a warning (≤ 120 characters)
//!   that pods will be recreated, and why.
//!
//! Both sides are compared after DEFAULTING (§1.5, applied here to old and new alike, so objects
//! stored before defaulting existed or under gate TemplateNoDefaults compare fairly) and Go-shape
//! normalisation ([`crate::compat::normalize::omit_empty`]), so a kubectl merge patch that dropped a
//! defaulted or empty field is not a false rejection (spec §10.4).

use std::cell::OnceCell;

use k8s_openapi::api::core::v1::PodTemplateSpec;
use serde_json::Value;

use crate::compat::field::FieldError;
use crate::compat::normalize::omit_empty;
use crate::core::defaults::pod::default_pod_spec;
use crate::core::features::{FeatureGates, Gate};
use crate::core::inplace::classify::{self, ClassifyOptions, classify_template_update};
use crate::core::inplace::guard::check_in_place_only;

/// The templates of an UPDATE, each normalised ([`normalized_template`]) at most once per
/// review: the rules, the InPlaceOnly guard and the InPlaceIfPossible warning all read them, and
/// normalising both (default, serialise, drop empties, decode) is about a fifth of the
/// instructions of a CloneSet UPDATE review.
pub struct UpdateTemplates<'a> {
    old: &'a PodTemplateSpec,
    new: &'a PodTemplateSpec,
    gates: &'a FeatureGates,
    old_normalized: OnceCell<PodTemplateSpec>,
    new_normalized: OnceCell<PodTemplateSpec>,
}

impl<'a> UpdateTemplates<'a> {
    pub fn new(old: &'a PodTemplateSpec, new: &'a PodTemplateSpec, gates: &'a FeatureGates) -> Self {
        UpdateTemplates { old, new, gates, old_normalized: OnceCell::new(), new_normalized: OnceCell::new() }
    }

    /// The old template, normalised.
    pub fn old_normalized(&self) -> &PodTemplateSpec {
        self.old_normalized.get_or_init(|| normalized_template(self.old, self.gates))
    }

    /// The new template, normalised.
    pub fn new_normalized(&self) -> &PodTemplateSpec {
        self.new_normalized.get_or_init(|| normalized_template(self.new, self.gates))
    }

    /// [`in_place_only_violation`] of these templates.
    pub fn in_place_only_violation(&self, strategy_field: &str) -> Option<FieldError> {
        let op = check_in_place_only(&spec_json(self.old_normalized()), &spec_json(self.new_normalized())).err()?;
        Some(FieldError::forbidden(
            "spec.template.spec",
            format!(
                "only allowed to update images in spec for InPlaceOnly, but found {op}; set {strategy_field} to \
                 InPlaceIfPossible to let pods be recreated for this change"
            ),
        ))
    }

    /// [`recreate_warning`] of these templates.
    pub fn recreate_warning(&self, claims_changed: bool) -> Option<String> {
        if claims_changed && self.gates.enabled(Gate::RecreatePodWhenChangeVCTInCloneSetGate) {
            return Some(fit(format!("{RECREATE_PREFIX}: volumeClaimTemplates changed")));
        }
        let opts = ClassifyOptions { gates: classify::Gates::from_features(self.gates), ..Default::default() };
        let refused = classify_template_update(self.old_normalized(), self.new_normalized(), &opts).err()?;
        Some(fit(match &refused.op {
            Some(op) => format!("{RECREATE_PREFIX}, because of {op}"),
            None => format!("{RECREATE_PREFIX}: {}", refused.reason),
        }))
    }
}

/// Longest warning the apiserver shows in full (kubectl prints warnings one per line).
pub const MAX_WARNING_CHARS: usize = 120;

/// The template with kruise's pod defaults applied and Go's `omitempty` shape. A template whose
/// quantities do not parse cannot be defaulted and is only normalised (validation reports it).
pub fn normalized_template(template: &PodTemplateSpec, gates: &FeatureGates) -> PodTemplateSpec {
    let mut defaulted = template.clone();
    let spec = defaulted.spec.get_or_insert_with(Default::default);
    let defaulted = match default_pod_spec(spec, gates, "spec.template.spec") {
        Ok(()) => defaulted,
        Err(_) => template.clone(),
    };
    let Ok(mut json) = serde_json::to_value(&defaulted) else { return defaulted };
    omit_empty(&mut json);
    serde_json::from_value(json).unwrap_or(defaulted)
}

fn spec_json(template: &PodTemplateSpec) -> Value {
    template.spec.as_ref().and_then(|s| serde_json::to_value(s).ok()).unwrap_or(Value::Null)
}

/// The InPlaceOnly guard. `strategy_field` is the field that selects InPlaceOnly
/// (`spec.updateStrategy.type` for CloneSet, `spec.updateStrategy.rollingUpdate.podUpdatePolicy`
/// for Advanced StatefulSet); the message tells the user to set it to InPlaceIfPossible.
pub fn in_place_only_violation(
    old: &PodTemplateSpec,
    new: &PodTemplateSpec,
    gates: &FeatureGates,
    strategy_field: &str,
) -> Option<FieldError> {
    UpdateTemplates::new(old, new, gates).in_place_only_violation(strategy_field)
}

/// The InPlaceIfPossible warning: `Some` when the template change cannot be applied in place.
/// `claims_changed` is whether a CloneSet's volumeClaimTemplates changed, which recreates pods
/// under gate RecreatePodWhenChangeVCTInCloneSetGate.
pub fn recreate_warning(
    old: &PodTemplateSpec,
    new: &PodTemplateSpec,
    gates: &FeatureGates,
    claims_changed: bool,
) -> Option<String> {
    UpdateTemplates::new(old, new, gates).recreate_warning(claims_changed)
}

const RECREATE_PREFIX: &str = "InPlaceIfPossible: pods will be recreated, not updated in place";

/// Cuts a warning to [`MAX_WARNING_CHARS`] characters, ending with "..." when cut.
fn fit(text: String) -> String {
    if text.chars().count() <= MAX_WARNING_CHARS {
        return text;
    }
    let mut cut: String = text.chars().take(MAX_WARNING_CHARS - 3).collect();
    cut.push_str("...");
    cut
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A template as stored: defaulted by the mutating webhook.
    fn stored() -> PodTemplateSpec {
        let t: PodTemplateSpec = serde_json::from_value(json!({
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "main", "image": "nginx:1.25",
                                     "env": [{"name": "MODE", "value": "prod"}]}]}
        }))
        .unwrap();
        normalized_template(&t, &FeatureGates::default())
    }

    /// The user's manifest: no defaults at all.
    fn raw(edit: impl FnOnce(&mut Value)) -> PodTemplateSpec {
        let mut v = json!({
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "main", "image": "nginx:1.25",
                                     "env": [{"name": "MODE", "value": "prod"}]}]}
        });
        edit(&mut v);
        serde_json::from_value(v).unwrap()
    }

    const FIELD: &str = "spec.updateStrategy.type";

    #[test]
    fn guard_table() {
        let g = FeatureGates::default();
        #[rustfmt::skip]
        let cases: Vec<(&str, PodTemplateSpec, Option<&str>)> = vec![
            ("unchanged, undefaulted new side", raw(|_| {}), None),
            ("image change", raw(|v| v["spec"]["containers"][0]["image"] = json!("nginx:1.26")), None),
            ("label change", raw(|v| v["metadata"]["labels"]["tier"] = json!("a")), None),
            ("empty env list vs none is no change", raw(|v| v["spec"]["containers"][0]["args"] = json!([])), None),
            ("env value", raw(|v| v["spec"]["containers"][0]["env"][0]["value"] = json!("dev")),
             Some("replace /containers/0/env/0/value")),
            ("env removed", raw(|v| v["spec"]["containers"][0]["env"] = json!([])), Some("remove /containers/0/env")),
            ("imagePullPolicy changed", raw(|v| v["spec"]["containers"][0]["imagePullPolicy"] = json!("IfNotPresent")),
             Some("replace /containers/0/imagePullPolicy")),
            ("init container added", raw(|v| v["spec"]["initContainers"] = json!([{"name": "i", "image": "x"}])),
             Some("add /initContainers")),
        ];
        for (name, new, want) in cases {
            let got = in_place_only_violation(&stored(), &new, &g, FIELD);
            match want {
                None => assert_eq!(got, None, "{name}"),
                Some(op) => {
                    let msg = got.unwrap_or_else(|| panic!("{name}: allowed")).to_string();
                    assert_eq!(
                        msg,
                        format!(
                            "spec.template.spec: Forbidden: only allowed to update images in spec for InPlaceOnly, \
                                 but found {op}; set {FIELD} to InPlaceIfPossible to let pods be recreated for this change"
                        ),
                        "{name}"
                    );
                }
            }
        }
    }

    #[test]
    fn undefaulted_old_side_compares_fairly() {
        // An object stored before defaulting existed (or with TemplateNoDefaults): the old side
        // lacks every default, the new side has them.
        let g = FeatureGates::default();
        assert_eq!(in_place_only_violation(&raw(|_| {}), &stored(), &g, FIELD), None);
        let new = raw(|v| v["spec"]["containers"][0]["image"] = json!("nginx:2"));
        assert_eq!(in_place_only_violation(&raw(|_| {}), &new, &g, FIELD), None);
    }

    #[test]
    fn warning_table() {
        let g = FeatureGates::default();
        #[rustfmt::skip]
        let cases: Vec<(&str, PodTemplateSpec, bool, &FeatureGates, Option<&str>)> = vec![
            ("no change", raw(|_| {}), false, &g, None),
            ("image", raw(|v| v["spec"]["containers"][0]["image"] = json!("nginx:2")), false, &g, None),
            ("label", raw(|v| v["metadata"]["labels"]["x"] = json!("y")), false, &g, None),
            ("env", raw(|v| v["spec"]["containers"][0]["env"][0]["value"] = json!("dev")), false, &g,
             Some("InPlaceIfPossible: pods will be recreated, not updated in place, because of replace /spec/containers/0/env/0/value")),
            ("vct without the gate", raw(|_| {}), true, &g, None),
        ];
        for (name, new, claims, gates, want) in cases {
            let got = recreate_warning(&stored(), &new, gates, claims);
            assert_eq!(got.as_deref(), want, "{name}");
            if let Some(w) = got {
                assert!(w.chars().count() <= MAX_WARNING_CHARS, "{name}: {w}");
            }
        }
        let vct = FeatureGates::default().with(Gate::RecreatePodWhenChangeVCTInCloneSetGate, true);
        assert_eq!(
            recreate_warning(&stored(), &raw(|_| {}), &vct, true).as_deref(),
            Some("InPlaceIfPossible: pods will be recreated, not updated in place: volumeClaimTemplates changed")
        );
    }

    #[test]
    fn long_warnings_are_cut() {
        let g = FeatureGates::default();
        let long = "k".repeat(200);
        let old = raw(|v| v["spec"]["nodeSelector"] = json!({ long.clone(): "a" }));
        let new = raw(|v| v["spec"]["nodeSelector"] = json!({ long.clone(): "b" }));
        let w = recreate_warning(&old, &new, &g, false).unwrap();
        assert_eq!(w.chars().count(), MAX_WARNING_CHARS);
        assert!(w.ends_with("..."), "{w}");
    }
}
