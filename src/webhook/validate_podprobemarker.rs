//! PodProbeMarker validating handler `vpodprobemarker.kb.io` (kruise `pkg/webhook/podprobemarker/
//! validating`, issue 30 item 4): the object decoded first (400), then 403 while the
//! `PodProbeMarkerGate` or `KruiseDaemon` gate is off, then
//! [`core::validation::podprobemarker`](crate::core::validation::podprobemarker) on CREATE and
//! UPDATE — 422 with the field errors (spec §11.1; kruise answers 400). Kruise has no mutating
//! webhook for this kind, and none for NodePodProbe.

use super::review::{Review, Verdict};
use super::{Context, Objects, decode_object, decode_objects};
use crate::apis::podprobemarker::PodProbeMarker;
use crate::core::features::Gate;
use crate::core::validation::podprobemarker::validate as validate_ppm;

/// Answers a PodProbeMarker CREATE or UPDATE.
pub fn validate(ctx: &Context, review: &Review) -> Verdict {
    let objects =
        match decode_objects(review, ["PodProbeMarker", "old PodProbeMarker"], decode_object::<PodProbeMarker>) {
            Ok(o) => o,
            Err(v) => return v,
        };
    for gate in [Gate::PodProbeMarkerGate, Gate::KruiseDaemon] {
        if !ctx.config.gates.enabled(gate) {
            return Verdict::errored(403, format!("feature-gate {} is not enabled", gate.name()));
        }
    }
    match objects {
        Objects::Create(ppm) => Verdict::validated(&validate_ppm(&ppm, None)),
        Objects::Update(ppm, old) => Verdict::validated(&validate_ppm(&ppm, Some(&old))),
        Objects::Delete(_) | Objects::Nothing => Verdict::allow(),
    }
}
