//! ImagePullJob v1alpha1 <-> v1beta1 (spec §1.4), as kruise's `imagepulljob_conversion.go`: both
//! versions have the same fields at the same places, so only `apiVersion` changes (set by
//! [`super::convert`]).

use serde_json::{Map, Value};

/// Either direction: nothing moves.
pub fn convert(_: &mut Map<String, Value>) {}
