//! CloneSet validating handler `vcloneset.kb.io` (spec §2.1, decisions §11): decodes the review,
//! reads the `podsToDelete` pods from the cluster view, and answers with the decisions of
//! `core::validation::cloneset`: 422 with the aggregated field errors for an invalid object, 403
//! for deletion protection, 400 for an object that cannot be decoded (or a version not served),
//! and, under InPlaceIfPossible, a warning when the template change will recreate pods.

use kube::core::admission::Operation;

use super::review::{Review, Verdict};
use super::{Context, decode_object, deletion_verdict, require_version};
use crate::apis::CloneSet;
use crate::apis::cloneset::IN_PLACE_IF_POSSIBLE;
use crate::compat::normalize::semantic_eq;
use crate::core::validation::cloneset::{PodsByName, pods_to_look_up, validate_create, validate_update};
use crate::core::validation::template_update::recreate_warning;

/// Answers a CloneSet CREATE, UPDATE or DELETE.
pub fn validate(ctx: &Context, review: &Review) -> Verdict {
    if let Err(v) = require_version(review, "v1alpha1") {
        return v;
    }
    match review.request.operation {
        Operation::Create => {
            let new: CloneSet = match decode_object(review.object.as_ref(), "CloneSet") {
                Ok(c) => c,
                Err(v) => return v,
            };
            let pods = lookup(ctx, &new, None);
            Verdict::validated(&validate_create(&new, &pods, &ctx.config.gates))
        }
        Operation::Update => {
            let (new, old): (CloneSet, CloneSet) = match (
                decode_object(review.object.as_ref(), "CloneSet"),
                decode_object(review.old_object.as_ref(), "old CloneSet"),
            ) {
                (Ok(n), Ok(o)) => (n, o),
                (Err(v), _) | (_, Err(v)) => return v,
            };
            let pods = lookup(ctx, &new, Some(&old));
            let answer = Verdict::validated(&validate_update(&new, &old, &pods, &ctx.config.gates));
            if !answer.allowed || new.spec.update_strategy.type_ != IN_PLACE_IF_POSSIBLE {
                return answer;
            }
            let claims_changed = !semantic_eq(
                &serde_json::to_value(&old.spec.volume_claim_templates).unwrap_or_default(),
                &serde_json::to_value(&new.spec.volume_claim_templates).unwrap_or_default(),
            );
            answer.with_warning(recreate_warning(
                &old.spec.template,
                &new.spec.template,
                &ctx.config.gates,
                claims_changed,
            ))
        }
        Operation::Delete => {
            // Kubernetes < 1.16 sends no oldObject on DELETE: nothing to check.
            if review.old_object.is_none() {
                return Verdict::allow();
            }
            let old: CloneSet = match decode_object(review.old_object.as_ref(), "old CloneSet") {
                Ok(c) => c,
                Err(v) => return v,
            };
            deletion_verdict(&old.metadata, old.spec.replicas, &ctx.config.gates)
        }
        Operation::Connect => Verdict::allow(),
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
