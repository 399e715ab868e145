//! The embedded reconcilers (issue 11; spec §5): thin kube-runtime adapters that observe
//! (reflector-fed [`index`]es), call a pure planner in `core/`, and act ([`apply`]), with
//! expectations so a stale cache never doubles a pod or deletes one too many. [`cloneset`] is the
//! CloneSet controller; the index, the applier and [`Settings`] are built to be shared by the
//! Advanced StatefulSet and SidecarSet controllers to come.

pub mod apply;
pub mod cloneset;
pub mod index;
pub mod queue;

use std::time::Duration;

use crate::core::expectations::EXPECTATION_TIMEOUT;
use crate::core::features::FeatureGates;

/// What a controller is started with (from the process settings).
#[derive(Clone, Debug)]
pub struct Settings {
    /// Feature gates, as for `serve`.
    pub gates: FeatureGates,
    /// Watch and reconcile only this namespace (all namespaces when `None`).
    pub namespace: Option<String>,
    /// Objects reconciled at the same time.
    pub concurrency: u16,
    /// Writes one reconcile sends side by side (to different pods; one pod's writes stay in
    /// order). 1 by default: on the 2-core test machine, 16 made a 1,000-pod in-place rollout
    /// 2.5× slower and 4× costlier in controller CPU (more, shorter rounds; examples/cloneset_rollout.rs).
    pub writes_in_flight: usize,
    /// How long a created or deleted object may stay unseen by the cache before a warning
    /// (kruise's `--expectation-timeout`); the controller keeps waiting after it, as kruise does.
    pub expectation_timeout: Duration,
    /// The longest pause between two plans of one workload. Plans of one workload are spaced by
    /// twice the time the last one took, so planning takes at most a third of a core per
    /// workload (a rollout of many pods sends a stream of events; they fold into the next plan),
    /// and by no more than this.
    pub max_plan_interval: Duration,
    /// The safety-net requeue of a workload nothing asked to look at again.
    pub resync: Duration,
    /// The Events' reporting instance (the pod name in a cluster).
    pub instance: Option<String>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            gates: FeatureGates::default(),
            namespace: None,
            concurrency: 3,
            writes_in_flight: 1,
            expectation_timeout: Duration::from_secs(EXPECTATION_TIMEOUT.as_secs().unsigned_abs()),
            resync: Duration::from_secs(300),
            max_plan_interval: Duration::from_secs(1),
            instance: None,
        }
    }
}
