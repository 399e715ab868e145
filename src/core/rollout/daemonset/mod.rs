//! The Advanced DaemonSet planner's pure decisions (issue 33 item 2): kruise's
//! `pkg/controller/daemonset` split by what each part decides. Nothing here talks to the API
//! server; callers pass the set, the pods and revisions of its namespace and the nodes, and get
//! owned answers back.
//! - [`eligibility`]: which nodes should run a daemon pod (node name, node selector and required
//!   affinity, taints and the daemon tolerations), how a pod is bound to its node;
//! - [`hash`]: the revision hash (one function, to be swapped for kruise's spew hash);
//! - [`revision`]: the ControllerRevisions (`constructHistory`, `cleanupHistory`);
//! - [`pods`]: pods by node, which are updated, the pod created on a node;
//! - [`backoff`]: the failed-pod backoff kept between rounds;
//! - [`manage`]: creations and deletions (`manage`, `podsShouldBeOnNode`);
//! - [`update`]: `maxSurge`/`maxUnavailable`, the nodes `partition` and `selector` leave to
//!   update, and the rolling update's choices;
//! - [`status`]: the status counters;
//! - [`plan`]: one round assembled from all of the above and the shared pod-update machine.

pub mod backoff;
pub mod eligibility;
pub mod hash;
pub mod manage;
pub mod plan;
pub mod pods;
pub mod predownload;
#[cfg(test)]
mod props;
pub mod revision;
pub mod status;
#[cfg(test)]
pub(crate) mod testkit;
pub mod update;
