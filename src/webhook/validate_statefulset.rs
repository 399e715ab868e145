//! Advanced StatefulSet validating handler `vstatefulset.kb.io` (spec §2.2, decisions §11), one
//! path for both versions: v1alpha1 objects are converted to v1beta1 before the decisions of
//! `core::validation::statefulset`. 422 with the aggregated field errors for an invalid object,
//! 403 for deletion protection, 400 for an object that cannot be decoded, and, under
//! InPlaceIfPossible, a warning when the template change will recreate pods.

use super::review::{Review, Verdict};
use super::{Context, Objects, decode_objects, decode_statefulset, deletion_verdict};
use crate::apis::statefulset::IN_PLACE_IF_POSSIBLE;
use crate::core::validation::statefulset::{validate_create, validate_update_with};
use crate::core::validation::template_update::UpdateTemplates;

/// Answers an Advanced StatefulSet CREATE, UPDATE or DELETE.
pub fn validate(ctx: &Context, review: &Review) -> Verdict {
    let version = review.request.resource.version.as_str();
    let decode = |raw: Option<&serde_json::Value>, what: &str| decode_statefulset(raw, what, version);
    let objects = match decode_objects(review, ["StatefulSet", "old StatefulSet"], decode) {
        Ok(objects) => objects,
        Err(v) => return v,
    };
    match objects {
        Objects::Create(new) => Verdict::validated(&validate_create(&new, &ctx.config.gates)),
        Objects::Update(new, old) => {
            let templates = UpdateTemplates::new(&old.spec.template, &new.spec.template, &ctx.config.gates);
            let answer = Verdict::validated(&validate_update_with(&new, &old, &templates, &ctx.config.gates));
            let policy = new.spec.update_strategy.rolling_update.as_ref().map(|r| r.pod_update_policy.as_str());
            if !answer.allowed || policy != Some(IN_PLACE_IF_POSSIBLE) {
                return answer;
            }
            answer.with_warning(templates.recreate_warning(false))
        }
        Objects::Delete(old) => deletion_verdict(&old.metadata, old.spec.replicas, &ctx.config.gates),
        Objects::Nothing => Verdict::allow(),
    }
}
