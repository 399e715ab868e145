//! AdvancedCronJob validating handler `vadvancedcronjob.kb.io` (kruise `pkg/webhook/
//! advancedcronjob/validating`, v1.8.4): `core::validation::advancedcronjob` on CREATE and UPDATE
//! — 422 with the field errors, 400 for an object that does not decode.

use super::review::{Review, Verdict};
use super::{Context, Objects, decode_object, decode_objects};
use crate::apis::advancedcronjob::AdvancedCronJob;
use crate::core::validation::advancedcronjob::{validate_create, validate_update};

/// Answers an AdvancedCronJob CREATE or UPDATE.
pub fn validate(_ctx: &Context, review: &Review) -> Verdict {
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
