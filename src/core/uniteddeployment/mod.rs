//! UnitedDeployment decisions (issue 34, kruise `pkg/controller/uniteddeployment`):
//! [`allocation`] divides the replicas over the subsets as kruise's allocators do; [`subsets`]
//! plans a round over the subset workloads (create, update, delete, status), whose shape per kind
//! (CloneSet, Advanced StatefulSet, apps/v1 StatefulSet, Deployment) is [`workload`]'s; [`revision`] is the
//! revision data kruise hashes and [`history`] which revision a round uses; [`adaptive`] marks subsets whose pods
//! cannot be scheduled (adaptive scheduling), and [`reservation`] keeps such pods as reserved
//! while temporary pods elsewhere do their work (`reserveUnschedulablePods`).

pub mod adaptive;
pub mod allocation;
pub mod history;
pub mod reservation;
pub mod revision;
pub mod subsets;
pub mod workload;
