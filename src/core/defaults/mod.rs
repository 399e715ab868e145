//! Mutating-webhook defaults of the kruise workloads (spec §1.1.3, §1.2.3, §1.5): pure functions
//! over typed objects; the webhook turns the result into a patch. [`cloneset`] and
//! [`statefulset`] default their resource; [`pod`] the pod templates both carry, and decides when
//! template defaults apply at all ([`pod::should_inject_template_defaults`]).
//! [`imagepulljob`], [`imagelistpulljob`] and [`nodeimage`] are the image-pull kinds' defaults
//! (issue 29 item 1). [`daemonset`]: the Advanced DaemonSet's (issue 33).

pub mod advancedcronjob;
pub mod broadcastjob;
pub mod cloneset;
pub mod daemonset;
pub mod imagelistpulljob;
pub mod imagepulljob;
pub mod nodeimage;
pub mod pod;
pub mod statefulset;
pub mod uniteddeployment;

pub use pod::QuantityError;
