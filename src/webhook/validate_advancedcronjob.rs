//! AdvancedCronJob validating handler `vadvancedcronjob.kb.io` (kruise `pkg/webhook/
//! advancedcronjob/validating`, v1.8.4): `core::validation::advancedcronjob` on CREATE and UPDATE
//! — 422 with the field errors, 400 for an object that does not decode or a version not served.
//! A v1beta1 request is decoded on the v1beta1 model and checked as kruise HEAD checks it
//! (`core::validation::advancedcronjob_v1beta1`: the ImageListPullJob template too).

use super::review::{Review, Verdict};
use super::{Context, Objects, decode_object, decode_objects};
use crate::apis::advancedcronjob::AdvancedCronJob;
use crate::apis::advancedcronjob::v1beta1;
use crate::core::validation::advancedcronjob::{validate_create, validate_update};
use crate::core::validation::advancedcronjob_v1beta1 as beta;

/// Answers an AdvancedCronJob CREATE or UPDATE.
pub fn validate(_ctx: &Context, review: &Review) -> Verdict {
    match review.request.resource.version.as_str() {
        "v1beta1" => return validate_v1beta1(review),
        "v1alpha1" => {}
        other => return Verdict::errored(400, format!("unsupported version: {other}")),
    }
    let objects =
        match decode_objects(review, ["AdvancedCronJob", "old AdvancedCronJob"], decode_object::<AdvancedCronJob>) {
            Ok(objects) => objects,
            Err(v) => return v,
        };
    match objects {
        Objects::Create(new) => Verdict::validated(&validate_create(&new)),
        Objects::Update(new, old) => Verdict::validated(&validate_update(&new, &old)),
        Objects::Delete(_) | Objects::Nothing => Verdict::allow(),
    }
}

/// A v1beta1 CREATE or UPDATE.
fn validate_v1beta1(review: &Review) -> Verdict {
    let decode = decode_object::<v1beta1::AdvancedCronJob>;
    let objects = match decode_objects(review, ["AdvancedCronJob", "old AdvancedCronJob"], decode) {
        Ok(objects) => objects,
        Err(v) => return v,
    };
    match objects {
        Objects::Create(new) => Verdict::validated(&beta::validate_create(&new)),
        Objects::Update(new, old) => Verdict::validated(&beta::validate_update(&new, &old)),
        Objects::Delete(_) | Objects::Nothing => Verdict::allow(),
    }
}
