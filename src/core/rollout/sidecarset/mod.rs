//! The SidecarSet controller's decisions (spec §4.12, kruise `pkg/controller/sidecarset/`,
//! `pkg/control/sidecarcontrol/`; issue 28): which pods a SidecarSet manages, its revisions in the
//! manager namespace, its status, and which injected pods get the new sidecars in place (cold and
//! hot upgrade) this round. [`plan::plan`] is the round; the controller and `kruise plan sidecarset`
//! both call it.

pub mod plan;
