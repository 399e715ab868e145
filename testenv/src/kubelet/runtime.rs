//! What the simulated container runtime runs for one pod, and the pod status a kubelet reports
//! for it: pure functions of the pod, the previous runtime state, the settings and the clock.
//!
//! - A new pod's containers start at once (images matching a pull-failure pattern wait in
//!   `ErrImagePull`, then `ImagePullBackOff` after [`BACKOFF_AFTER`]); init containers complete at
//!   once, restartable (sidecar) init containers run like containers.
//! - A container is ready `ready_delay` after it started. `ContainersReady` needs every container
//!   ready; `Ready` also needs every readiness gate's condition True.
//! - A changed image restarts only that container, as the kubelet does for an in-place update: a
//!   new containerID and imageID, restartCount + 1, the old instance in `lastState`, and a
//!   NotReady window of `ready_delay`.
//! - A container whose env reads a ConfigMap key (`valueFrom.configMapKeyRef`, or all of a
//!   ConfigMap through `envFrom.configMapRef`) that is missing, and not `optional`, is not started:
//!   it waits in `CreateContainerConfigError` with the kubelet's message until the key exists, as
//!   the kubelet's `makeEnvironmentVariables` fails the container's start (other containers start).
//!   Only container creation reads the env: a running container is not touched when the key goes.
//! - `image` is reported the way containerd reports it (`docker.io/library/nginx:1.25` for
//!   `nginx:1.25`) and `imageID` is a digest reference derived from it.

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{
    Container, ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStateWaiting, ContainerStatus,
    HostIP, Pod, PodCondition, PodIP, PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// How long a failed pull shows `ErrImagePull` before `ImagePullBackOff`.
pub const BACKOFF_AFTER: Duration = Duration::from_secs(1);

/// The condition types the kubelet owns (others, such as readiness gates, are left alone).
pub const KUBELET_CONDITIONS: [&str; 4] = ["PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready"];

/// What the runtime does for one pod.
#[derive(Debug, Clone, PartialEq)]
pub struct PodRuntime {
    /// The pod IP.
    pub pod_ip: String,
    /// The node IP.
    pub host_ip: String,
    /// When the kubelet accepted the pod.
    pub start_time: Timestamp,
    /// Init containers by name.
    pub init: BTreeMap<String, ContainerRuntime>,
    /// Containers by name.
    pub containers: BTreeMap<String, ContainerRuntime>,
}

/// One container instance (or the wait for its image).
#[derive(Debug, Clone, PartialEq)]
pub struct ContainerRuntime {
    /// The image as containerd reports it.
    pub image: String,
    /// What runs.
    pub state: RunState,
    /// Restarts so far.
    pub restart_count: i32,
    /// The previous instance, once restarted.
    pub last: Option<Finished>,
}

/// A container's state.
#[derive(Debug, Clone, PartialEq)]
pub enum RunState {
    /// Running since `started_at`.
    Running {
        /// `containerd://...`.
        container_id: String,
        /// The image digest reference.
        image_id: String,
        /// Start time.
        started_at: Timestamp,
    },
    /// A completed (init) container.
    Completed {
        /// `containerd://...`.
        container_id: String,
        /// The image digest reference.
        image_id: String,
        /// Start time.
        started_at: Timestamp,
    },
    /// The image cannot be pulled since `since`.
    PullFailing {
        /// First failure.
        since: Timestamp,
    },
    /// Not created: its env reads a missing ConfigMap or key (`CreateContainerConfigError`).
    ConfigError {
        /// The kubelet's message.
        message: String,
    },
}

/// The ConfigMaps of one namespace as the runtime resolves env from them: name → data keys.
pub type ConfigMapKeys = BTreeMap<String, BTreeSet<String>>;

/// Why the kubelet cannot build the env of container `c` of a pod in `namespace`, with its
/// message (`makeEnvironmentVariables`): a non-optional `envFrom.configMapRef` whose ConfigMap is
/// missing, or a non-optional `configMapKeyRef` whose ConfigMap or key is missing.
pub fn config_error(c: &Container, namespace: &str, config_maps: &ConfigMapKeys) -> Option<String> {
    let not_found = |name: &str| format!("configmap \"{name}\" not found");
    for from in c.env_from.iter().flatten() {
        if let Some(r) = &from.config_map_ref
            && r.optional != Some(true)
            && !config_maps.contains_key(&r.name)
        {
            return Some(not_found(&r.name));
        }
    }
    for e in c.env.iter().flatten() {
        let Some(r) = e.value_from.as_ref().and_then(|v| v.config_map_key_ref.as_ref()) else { continue };
        if r.optional == Some(true) {
            continue;
        }
        match config_maps.get(&r.name) {
            None => return Some(not_found(&r.name)),
            Some(keys) if !keys.contains(&r.key) => {
                return Some(format!("couldn't find key {} in ConfigMap {namespace}/{}", r.key, r.name));
            }
            Some(_) => {}
        }
    }
    None
}

/// A terminated instance kept as `lastState`.
#[derive(Debug, Clone, PartialEq)]
pub struct Finished {
    /// Its id.
    pub container_id: String,
    /// Its image digest reference.
    pub image_id: String,
    /// Its start.
    pub started_at: Timestamp,
    /// Its end.
    pub finished_at: Timestamp,
}

/// The runtime's knobs that matter to one pod.
#[derive(Debug, Clone, PartialEq)]
pub struct RuntimeSettings {
    /// Start to ready.
    pub ready_delay: Duration,
    /// Images containing one of these fail to pull.
    pub pull_failures: Vec<String>,
}

/// Sources of fresh ids, so tests of this module are deterministic.
pub trait Ids {
    /// A new `containerd://<hex>` id.
    fn container_id(&mut self) -> String;

    /// The imageID of a container started from `normalized`: the node's runtime pulls the image
    /// and names it (the pod loop); by default the digest reference [`image_id`] derives.
    fn image_id(&mut self, normalized: &str) -> String {
        image_id(normalized)
    }
}

/// Random container ids.
pub struct RandomIds;

impl Ids for RandomIds {
    fn container_id(&mut self) -> String {
        let mut hex = String::with_capacity(64);
        for _ in 0..4 {
            hex.push_str(&format!("{:016x}", fastrand::u64(..)));
        }
        format!("containerd://{hex}")
    }
}

/// Advances the runtime of `pod` to `now`: starts what is new, restarts containers whose image
/// changed, retries failing pulls whose image no longer fails and containers whose env can now be
/// built from `config_maps` (those of the pod's namespace).
pub fn advance(
    pod: &Pod,
    previous: PodRuntime,
    settings: &RuntimeSettings,
    config_maps: &ConfigMapKeys,
    now: Timestamp,
    ids: &mut impl Ids,
) -> PodRuntime {
    let Some(spec) = pod.spec.as_ref() else { return previous };
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    let env_error = |c: &Container| config_error(c, namespace, config_maps);
    let mut next = PodRuntime { containers: BTreeMap::new(), init: BTreeMap::new(), ..previous.clone() };
    let mut initialized = true;
    for c in spec.init_containers.iter().flatten() {
        let sidecar = c.restart_policy.as_deref() == Some("Always");
        let rt = advance_container(c, previous.init.get(&c.name), !sidecar, settings, env_error(c), now, ids);
        initialized &= match &rt.state {
            RunState::Completed { .. } => true,
            RunState::Running { .. } => sidecar,
            RunState::PullFailing { .. } | RunState::ConfigError { .. } => false,
        };
        next.init.insert(c.name.clone(), rt);
        if !initialized {
            break;
        }
    }
    if initialized {
        for c in &spec.containers {
            let rt = advance_container(c, previous.containers.get(&c.name), false, settings, env_error(c), now, ids);
            next.containers.insert(c.name.clone(), rt);
        }
    }
    next
}

/// One container's next state. The image is pulled before the env is built (the kubelet's
/// `startContainer`: `EnsureImageExists`, then `generateContainerConfig`), so a failing pull shows
/// before a missing ConfigMap key.
fn advance_container(
    c: &Container,
    previous: Option<&ContainerRuntime>,
    completes: bool,
    settings: &RuntimeSettings,
    env_error: Option<String>,
    now: Timestamp,
    ids: &mut impl Ids,
) -> ContainerRuntime {
    let image = normalize_image(c.image.as_deref().unwrap_or_default());
    let fails = settings.pull_failures.iter().any(|p| !p.is_empty() && image.contains(p.as_str()));
    let mut start = || {
        if let Some(message) = env_error.clone() {
            return RunState::ConfigError { message };
        }
        let (container_id, image_id) = (ids.container_id(), ids.image_id(&image));
        if completes {
            RunState::Completed { container_id, image_id, started_at: now }
        } else {
            RunState::Running { container_id, image_id, started_at: now }
        }
    };
    let (state, restart_count, last) = match previous {
        None if fails => (RunState::PullFailing { since: now }, 0, None),
        None => (start(), 0, None),
        Some(prev) if prev.image == image => match &prev.state {
            RunState::PullFailing { .. } | RunState::ConfigError { .. } if !fails => {
                (start(), prev.restart_count, prev.last.clone())
            }
            _ => return prev.clone(),
        },
        // The image changed: stop the instance, start one of the new image (or fail to pull it).
        Some(prev) => {
            let (last, restarted) = match &prev.state {
                RunState::Running { container_id, image_id, started_at }
                | RunState::Completed { container_id, image_id, started_at } => (
                    Some(Finished {
                        container_id: container_id.clone(),
                        image_id: image_id.clone(),
                        started_at: *started_at,
                        finished_at: now,
                    }),
                    true,
                ),
                RunState::PullFailing { .. } | RunState::ConfigError { .. } => (prev.last.clone(), false),
            };
            if fails {
                (RunState::PullFailing { since: now }, prev.restart_count, last)
            } else {
                (start(), prev.restart_count + i32::from(restarted), last)
            }
        }
    };
    ContainerRuntime { image, state, restart_count, last }
}

/// The status the kubelet reports: the kubelet-owned fields of `pod.status` (phase, IPs, start
/// time, container statuses, its four conditions — others are carried over untouched) and the
/// next moment at which it changes by itself (a container turning ready, a pull backing off).
pub fn render(
    pod: &Pod,
    rt: &PodRuntime,
    settings: &RuntimeSettings,
    now: Timestamp,
) -> (PodStatus, Option<Timestamp>) {
    let mut wake: Option<Timestamp> = None;
    let mut soon = |t: Timestamp| wake = Some(wake.map_or(t, |w| w.min(t)));
    let spec = pod.spec.as_ref();
    let current = pod.status.clone().unwrap_or_default();
    let mut status_of = |c: &Container, rt: Option<&ContainerRuntime>, init_waiting: bool| -> ContainerStatus {
        let Some(rt) = rt else {
            let reason = if init_waiting { "PodInitializing" } else { "ContainerCreating" };
            return ContainerStatus {
                name: c.name.clone(),
                image: normalize_image(c.image.as_deref().unwrap_or_default()),
                image_id: String::new(),
                ready: false,
                restart_count: 0,
                started: Some(false),
                state: Some(ContainerState {
                    waiting: Some(ContainerStateWaiting { reason: Some(reason.into()), message: None }),
                    ..Default::default()
                }),
                last_state: Some(ContainerState::default()),
                ..Default::default()
            };
        };
        let last_state = Some(match &rt.last {
            Some(f) => ContainerState {
                terminated: Some(ContainerStateTerminated {
                    container_id: Some(f.container_id.clone()),
                    exit_code: 0,
                    reason: Some("Completed".into()),
                    started_at: Some(time(f.started_at)),
                    finished_at: Some(time(f.finished_at)),
                    ..Default::default()
                }),
                ..Default::default()
            },
            None => ContainerState::default(),
        });
        let base = ContainerStatus {
            name: c.name.clone(),
            image: rt.image.clone(),
            restart_count: rt.restart_count,
            last_state,
            ..Default::default()
        };
        match &rt.state {
            RunState::Running { container_id, image_id, started_at } => {
                let ready_at = add(*started_at, settings.ready_delay);
                let ready = now >= ready_at;
                if !ready {
                    soon(ready_at);
                }
                ContainerStatus {
                    container_id: Some(container_id.clone()),
                    image_id: image_id.clone(),
                    ready,
                    started: Some(true),
                    state: Some(ContainerState {
                        running: Some(ContainerStateRunning { started_at: Some(time(*started_at)) }),
                        ..Default::default()
                    }),
                    ..base
                }
            }
            RunState::Completed { container_id, image_id, started_at } => ContainerStatus {
                container_id: Some(container_id.clone()),
                image_id: image_id.clone(),
                ready: false,
                started: Some(false),
                state: Some(ContainerState {
                    terminated: Some(ContainerStateTerminated {
                        container_id: Some(container_id.clone()),
                        exit_code: 0,
                        reason: Some("Completed".into()),
                        started_at: Some(time(*started_at)),
                        finished_at: Some(time(*started_at)),
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                ..base
            },
            RunState::ConfigError { message } => ContainerStatus {
                image_id: String::new(),
                ready: false,
                started: Some(false),
                state: Some(ContainerState {
                    waiting: Some(ContainerStateWaiting {
                        reason: Some("CreateContainerConfigError".into()),
                        message: Some(message.clone()),
                    }),
                    ..Default::default()
                }),
                ..base
            },
            RunState::PullFailing { since } => {
                let backoff_at = add(*since, BACKOFF_AFTER);
                let (reason, message) = if now >= backoff_at {
                    (
                        "ImagePullBackOff",
                        format!("Back-off pulling image \"{}\"", c.image.as_deref().unwrap_or_default()),
                    )
                } else {
                    soon(backoff_at);
                    ("ErrImagePull", format!("failed to pull and unpack image \"{}\": not found", rt.image))
                };
                ContainerStatus {
                    image_id: String::new(),
                    ready: false,
                    started: Some(false),
                    state: Some(ContainerState {
                        waiting: Some(ContainerStateWaiting { reason: Some(reason.into()), message: Some(message) }),
                        ..Default::default()
                    }),
                    ..base
                }
            }
        }
    };

    let init_specs: Vec<&Container> = spec.map(|s| s.init_containers.iter().flatten().collect()).unwrap_or_default();
    let init_statuses: Vec<ContainerStatus> =
        init_specs.iter().map(|c| status_of(c, rt.init.get(&c.name), true)).collect();
    let initialized = init_specs.iter().all(|c| {
        let sidecar = c.restart_policy.as_deref() == Some("Always");
        match rt.init.get(&c.name).map(|r| &r.state) {
            Some(RunState::Completed { .. }) => true,
            Some(RunState::Running { .. }) => sidecar,
            _ => false,
        }
    });
    let containers: Vec<&Container> = spec.map(|s| s.containers.iter().collect()).unwrap_or_default();
    let statuses: Vec<ContainerStatus> =
        containers.iter().map(|c| status_of(c, rt.containers.get(&c.name), !initialized)).collect();
    let sidecars_ready = init_specs
        .iter()
        .zip(&init_statuses)
        .filter(|(c, _)| c.restart_policy.as_deref() == Some("Always"))
        .all(|(_, s)| s.ready);
    let unready: Vec<&str> = statuses.iter().filter(|s| !s.ready).map(|s| s.name.as_str()).collect();
    let containers_ready = initialized && unready.is_empty() && sidecars_ready;
    let running = statuses.iter().any(|s| s.state.as_ref().is_some_and(|st| st.running.is_some()));

    let gates: Vec<&str> = spec
        .and_then(|s| s.readiness_gates.as_ref())
        .map(|g| g.iter().map(|g| g.condition_type.as_str()).collect())
        .unwrap_or_default();
    let conditions = current.conditions.clone().unwrap_or_default();
    let gate_problem = gates.iter().find_map(|g| match conditions.iter().find(|c| c.type_ == *g) {
        None => Some(format!("corresponding condition of pod readiness gate \"{g}\" does not exist.")),
        Some(c) if c.status != "True" => {
            Some(format!("the status of pod readiness gate \"{g}\" is not \"True\", but {}", c.status))
        }
        Some(_) => None,
    });
    let generation = pod.metadata.generation;
    let cond = |type_: &str, ok: bool, reason: Option<String>, message: Option<String>| -> PodCondition {
        let status = if ok { "True" } else { "False" };
        let previous = conditions.iter().find(|c| c.type_ == type_);
        let last_transition_time = match previous {
            Some(p) if p.status == status => p.last_transition_time.clone(),
            _ => Some(time(now)),
        };
        PodCondition {
            type_: type_.into(),
            status: status.into(),
            last_transition_time,
            reason: if ok { None } else { reason },
            message: if ok { None } else { message },
            observed_generation: generation,
            ..Default::default()
        }
    };
    let unready_list = format!("[{}]", unready.join(" "));
    let ready_message = match (&gate_problem, containers_ready) {
        (_, false) => Some(format!("containers with unready status: {unready_list}")),
        (Some(g), true) => Some(g.clone()),
        (None, true) => None,
    };
    let ready_reason = if containers_ready { "ReadinessGatesNotReady" } else { "ContainersNotReady" };
    let ours = [
        cond("PodReadyToStartContainers", true, None, None),
        cond(
            "Initialized",
            initialized,
            Some("ContainersNotInitialized".into()),
            Some("containers with incomplete status: [init]".into()),
        ),
        cond(
            "ContainersReady",
            containers_ready,
            Some("ContainersNotReady".into()),
            Some(format!("containers with unready status: {unready_list}")),
        ),
        cond("Ready", containers_ready && gate_problem.is_none(), Some(ready_reason.into()), ready_message),
    ];
    // Keep every other condition (PodScheduled from the scheduler, readiness gates from
    // controllers) where it is; the kubelet's own follow, in the kubelet's order.
    let mut all: Vec<PodCondition> =
        conditions.iter().filter(|c| !KUBELET_CONDITIONS.contains(&c.type_.as_str())).cloned().collect();
    all.extend(ours);

    let status = PodStatus {
        phase: Some(if running && initialized { "Running" } else { "Pending" }.into()),
        host_ip: Some(rt.host_ip.clone()),
        host_ips: Some(vec![HostIP { ip: rt.host_ip.clone() }]),
        pod_ip: Some(rt.pod_ip.clone()),
        pod_ips: Some(vec![PodIP { ip: rt.pod_ip.clone() }]),
        start_time: Some(time(rt.start_time)),
        conditions: Some(all),
        container_statuses: Some(statuses),
        init_container_statuses: if init_statuses.is_empty() { None } else { Some(init_statuses) },
        observed_generation: generation,
        ..current
    };
    (status, wake)
}

/// Whether `a` and `b` agree on every field the kubelet writes.
pub fn same_kubelet_fields(a: &PodStatus, b: &PodStatus) -> bool {
    let ours = |s: &PodStatus| -> Vec<PodCondition> {
        s.conditions.iter().flatten().filter(|c| KUBELET_CONDITIONS.contains(&c.type_.as_str())).cloned().collect()
    };
    a.phase == b.phase
        && a.host_ip == b.host_ip
        && a.pod_ip == b.pod_ip
        && a.start_time == b.start_time
        && a.container_statuses == b.container_statuses
        && a.init_container_statuses.as_ref().filter(|v| !v.is_empty())
            == b.init_container_statuses.as_ref().filter(|v| !v.is_empty())
        && a.observed_generation == b.observed_generation
        && ours(a) == ours(b)
}

/// The image reference as containerd reports it: a registry host and, without tag or digest,
/// `:latest` (`nginx:1.25` → `docker.io/library/nginx:1.25`).
pub fn normalize_image(image: &str) -> String {
    if image.is_empty() {
        return String::new();
    }
    let (first, rest) = image.split_once('/').map_or(("", image), |(f, r)| (f, r));
    let has_domain = !first.is_empty() && (first.contains('.') || first.contains(':') || first == "localhost");
    let mut name = match (has_domain, first.is_empty()) {
        (true, _) => image.to_string(),
        (false, true) => format!("docker.io/library/{rest}"),
        (false, false) => format!("docker.io/{image}"),
    };
    let last = name.rsplit('/').next().unwrap_or_default();
    if !last.contains(':') && !last.contains('@') {
        name.push_str(":latest");
    }
    name
}

/// A digest reference for a normalized image (`repo@sha256:...`): the image's own digest when it
/// has one, else one derived from its name.
pub fn image_id(normalized: &str) -> String {
    if normalized.contains('@') {
        return normalized.to_string();
    }
    let repo = match normalized.rsplit_once(':') {
        Some((repo, tag)) if !tag.contains('/') => repo,
        _ => normalized,
    };
    let digest: String = Sha256::digest(normalized.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
    format!("{repo}@sha256:{digest}")
}

fn add(t: Timestamp, d: Duration) -> Timestamp {
    jiff::SignedDuration::try_from(d).ok().and_then(|d| t.checked_add(d).ok()).unwrap_or(t)
}

/// Kubernetes times have whole seconds on the wire; rounding here keeps what we render equal to
/// what we read back.
pub fn time(t: Timestamp) -> Time {
    Time(Timestamp::from_second(t.as_second()).unwrap_or(t))
}

#[cfg(test)]
mod tests;
