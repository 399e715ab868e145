//! Pure decisions: no kube client, no HTTP, no async, no I/O. Everything here takes typed values
//! and returns plans or verdicts, and is tested with tables beside it (at the bottom of each
//! file, or in a sibling `tests.rs`). The Go and apimachinery behaviour these decisions are built
//! from (quantities, field errors, selectors, JSON diffs, pod validation...) is in
//! [`crate::compat`].
//!
//! - [`defaults`]: what the mutating webhooks default in CloneSets, Advanced StatefulSets and
//!   their pod templates (spec §1).
//! - [`validation`]: whether a CloneSet or Advanced StatefulSet is valid, may be updated this way,
//!   or deleted (spec §2, §3.6).
//! - [`inplace`]: whether a template change can be applied to running pods in place, how it is
//!   applied, and when it is complete (spec §3).
//! - [`rollout`]: the workload planners — the CloneSet controller's round as a pure function,
//!   with the actions it asks for (spec §5).
//! - [`history`], [`revision`], [`lifecycle`], [`expectations`], [`pods`]: what every workload
//!   controller shares — ControllerRevisions (spec §5.8) and the pod labels naming them, lifecycle
//!   hooks (§5.9), expectations (§5.1), pod predicates.
//! - [`sidecar`]: SidecarSets: defaults, hashes, validity, which apply to a pod and what
//!   injecting them changes (spec §1.3, §2.3, §4).
//! - [`pod_mutation`]: the other pod mutators, readiness gate and launch priority (spec §4.1).
//! - [`launchpriority`]: which priority of an ordered pod's containers its barrier ConfigMap releases
//!   next (kruise's containerlaunchpriority controller).
//! - [`conversion`]: v1alpha1 <-> v1beta1 of CloneSet, SidecarSet, ImagePullJob and Advanced StatefulSet; the `/convert` answer.
//! - [`predownload`]: the ImagePullJobs a CloneSet or Advanced StatefulSet rollout creates to
//!   pre-pull its new images, and when it deletes them (spec §7).
//! - [`features`]: which feature gates are on (kruise's names, defaults and dependencies).
//! - [`certs`]: the webhook certificate's next step: renewal and overlapping CA rotation (§8.4).
//! - [`cert_margin`]: whether managed certificate lifetimes leave time to renew around leader
//!   handovers (§8.4, §8.5).
//! - [`podreadiness`]: which pods get the `KruisePodReady` condition (kruise's podreadiness controller).
//! - [`budget`]: PodUnavailableBudget: which operations on a pod its budget allows, what that
//!   takes from the budget, and the status its controller writes (kruise `pubcontrol`).
//! - [`imagepulljob`]: image pre-download on the leader: NodeImages per Node, ImagePullJobs
//!   spread into them under `parallelism`, ImageListPullJobs (issue 29, spec §7.4).
//! - [`broadcastjob`]: one BroadcastJob round: a pod to completion on every fitting node (issue 33).
//! - [`leader`]: leader election on a Lease, as client-go decides it (§8.5).
//! - [`sidecarterminator`]: what stops a job pod's sidecars once its main containers finished
//!   (issue 30 item 3).
//! - [`containermeta`]: what kruise-daemon reports as a pod's runtime container meta and which
//!   containers it restarts for env read from metadata (issue 30 item 2).
//! - [`uniteddeployment`]: how a UnitedDeployment divides its replicas over its subsets (issue 34).
//! - [`imagepuller`]: `kruise daemon`'s pulls: workers per tag, retries, credentials, status writes.
//! - [`workloadspread`]: which subset of a WorkloadSpread a new pod goes to, what that changes
//!   in the pod and in the spread's status, and what a deleted pod releases (issue 34).

pub mod advancedcronjob;
pub mod broadcastjob;
pub mod budget;
pub mod cert_margin;
pub mod certs;
pub mod containermeta;
pub mod conversion;
pub mod crr;
pub mod defaults;
pub mod expectations;
pub mod features;
pub mod history;
pub mod imagepuller;
pub mod imagepulljob;
pub mod inplace;
pub mod launchpriority;
pub mod leader;
pub mod lifecycle;
pub mod pod_mutation;
pub mod podprobe;
pub mod podreadiness;
pub mod pods;
pub mod predownload;
pub mod revision;
pub mod rollout;
pub mod sidecar;
pub mod sidecarterminator;
pub mod uniteddeployment;
pub mod validation;
pub mod workloadspread;
