//! ContainerRecreateRequest decisions (issue 30 item 1; kruise `pkg/webhook/containerrecreaterequest`,
//! `pkg/controller/containerrecreaterequest`, `pkg/daemon/containerrecreate`), pure and tabled:
//! - [`admission`]: the webhook's defaults, injection from the pod and refusals;
//! - [`manager`]: the manager controller's round for one request (TTL, deadline, pod gone,
//!   synced statuses, not-ready acquisition);
//! - [`daemon`]: the node daemon's choice of request, per-container states and next step;
//! - [`prestop`]: what the daemon runs for a container's preStop hook (the kubelet's runner).

pub mod admission;
pub mod daemon;
pub mod manager;
pub mod prestop;
