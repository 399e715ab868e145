//! CloneSet validating handler `vcloneset.kb.io` (spec §2.1, §1.1.4, decisions §11), both API
//! versions decided on the v1alpha1 model: a v1beta1 object is converted, checked by the rules
//! of `core::validation::cloneset` with v1beta1 field names, plus the few only v1beta1 can break
//! (`core::validation::cloneset_v1beta1`). Reads the `podsToDelete` pods from the cluster view;
//! 422 with the aggregated field errors for an invalid object, 403 for deletion protection, 400
//! for an object that cannot be decoded (or a version not served), and, under
//! InPlaceIfPossible, a warning when the template change will recreate pods.

use kube::core::admission::Operation;
use serde_json::Value;

use super::review::{Review, Verdict};
use super::{CLONESET, Context, Objects, decode_object, decode_objects, decode_on_v1alpha1, deletion_verdict};
use crate::apis::CloneSet;
use crate::apis::cloneset::{IN_PLACE_IF_POSSIBLE, v1beta1};
use crate::compat::field::FieldError;
use crate::compat::normalize::semantic_eq;
use crate::core::validation::cloneset::{PodsByName, Shape, pods_to_look_up, validate_create_as, validate_update_with};
use crate::core::validation::cloneset_v1beta1::validate_v1beta1_fields;
use crate::core::validation::template_update::UpdateTemplates;

/// Answers a CloneSet CREATE, UPDATE or DELETE.
pub fn validate(ctx: &Context, review: &Review) -> Verdict {
    let version = review.request.resource.version.as_str();
    let decode =
        |raw: Option<&Value>, what: &str| decode_on_v1alpha1::<CloneSet>(raw, what, version, CLONESET).map(|(c, _)| c);
    let (shape, v1beta1_errors) = match shape_of(review, version) {
        Ok(pair) => pair,
        Err(v) => return v,
    };
    let objects = match decode_objects(review, ["CloneSet", "old CloneSet"], decode) {
        Ok(objects) => objects,
        Err(v) => return v,
    };
    match objects {
        Objects::Create(new) => {
            let pods = lookup(ctx, &new, None);
            let mut errs = validate_create_as(&new, &pods, &ctx.config.gates, shape);
            errs.extend(v1beta1_errors);
            Verdict::validated(&errs)
        }
        Objects::Update(new, old) => {
            let pods = lookup(ctx, &new, Some(&old));
            let templates = UpdateTemplates::new(&old.spec.template, &new.spec.template, &ctx.config.gates);
            let mut errs = validate_update_with(&new, &old, &templates, &pods, shape);
            errs.extend(v1beta1_errors);
            let answer = Verdict::validated(&errs);
            if !answer.allowed || new.spec.update_strategy.type_ != IN_PLACE_IF_POSSIBLE {
                return answer;
            }
            let claims_changed = !semantic_eq(
                &serde_json::to_value(&old.spec.volume_claim_templates).unwrap_or_default(),
                &serde_json::to_value(&new.spec.volume_claim_templates).unwrap_or_default(),
            );
            answer.with_warning(templates.recreate_warning(claims_changed))
        }
        Objects::Delete(old) => deletion_verdict(&old.metadata, old.spec.replicas, &ctx.config.gates),
        Objects::Nothing => Verdict::allow(),
    }
}

/// The field names of the request's version and, for a v1beta1 CREATE or UPDATE, the errors
/// only its v1beta1 shape can have. 400 for a version not served.
fn shape_of(review: &Review, version: &str) -> Result<(Shape, Vec<FieldError>), Verdict> {
    match version {
        "v1alpha1" => Ok((Shape::V1alpha1, Vec::new())),
        "v1beta1" if matches!(review.request.operation, Operation::Create | Operation::Update) => {
            let beta: v1beta1::CloneSet = decode_object(review.object.as_ref(), "CloneSet")?;
            let rolling_update = beta.spec.update_strategy.rolling_update.is_some();
            Ok((Shape::V1beta1 { rolling_update }, validate_v1beta1_fields(&beta)))
        }
        "v1beta1" => Ok((Shape::V1beta1 { rolling_update: true }, Vec::new())),
        other => Err(Verdict::errored(400, format!("unsupported version: {other}"))),
    }
}

/// The pods of `podsToDelete` that the rules need, from the CloneSet's namespace.
fn lookup(ctx: &Context, new: &CloneSet, old: Option<&CloneSet>) -> PodsByName {
    let namespace = new.metadata.namespace.as_deref().unwrap_or_default();
    pods_to_look_up(
        &new.spec.scale_strategy.pods_to_delete,
        old.map(|o| o.spec.scale_strategy.pods_to_delete.as_slice()),
    )
    .into_iter()
    .filter_map(|name| ctx.cluster.pod(namespace, &name).map(|pod| (name, pod)))
    .collect()
}
