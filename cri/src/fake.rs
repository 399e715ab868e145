//! [`FakeRuntime`]: an in-process CRI v1 runtime on a unix socket for tests (issue 29 item 6):
//! `kruise daemon` talks to it exactly as to containerd, and tests script each image's pull
//! (succeed after a delay, fail with a message, require credentials, not exist). It serves the
//! ImageService (PullImage, ImageStatus, ListImages, RemoveImage, ImageFsInfo) and of the
//! RuntimeService Version, and ListContainers, StopContainer and ExecSync over the containers the
//! test kubelet registers ([`FakeRuntime::set_pod_containers`]; a stop runs the
//! [`FakeRuntime::on_stop`] hooks, so the kubelet restarts the container — issue 30; `ExecSync` of
//! `env` prints the environment the kubelet registered, [`FakeRuntime::set_container_env`]); every other
//! RuntimeService method answers Unimplemented, as the generated default stubs do. Failure messages are containerd 1.6's wording, so the
//! classification in `error` is exercised the same way as against containerd.
//!
//! Images are keyed by their normalised reference (`nginx` → `docker.io/library/nginx:latest`);
//! an image's id is `sha256:` + the hex SHA-256 of that reference ([`image_id`]).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use base64::Engine as _;
use sha2::{Digest, Sha256};
use tokio::net::UnixListener;
use tokio_stream::wrappers::UnixListenerStream;
use tonic::{Request, Response, Status};

use crate::v1;
use crate::v1::image_service_server::{ImageService, ImageServiceServer};
use crate::v1::runtime_service_server::{RuntimeService, RuntimeServiceServer};

/// How a pull of one image goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Behaviour {
    /// Succeeds after `delay`.
    Succeed { delay: Duration },
    /// Fails at once with `message` (gRPC code Unknown, as containerd answers).
    Fail { message: String },
    /// Succeeds after `delay` with these credentials (username/password, or the `auth` field as
    /// base64 `user:pass`); otherwise fails at once with containerd's 401 message.
    RequireAuth { username: String, password: String, delay: Duration },
    /// Fails at once with containerd's "not found" message.
    NotFound,
}

impl Default for Behaviour {
    fn default() -> Self {
        Behaviour::Succeed { delay: Duration::ZERO }
    }
}

type Hook = Arc<dyn Fn(&v1::Image) + Send + Sync>;
type StopHook = Arc<dyn Fn(&StoppedContainer) + Send + Sync>;

/// One container the node runs, as its kubelet registers it ([`FakeRuntime::set_pod_containers`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodContainer {
    /// The runtime's id (without the `containerd://` of the pod status).
    pub id: String,
    /// The container's name in the pod.
    pub name: String,
    /// The kubelet's restart count of it.
    pub restart_count: i32,
    /// Start time, in nanoseconds since the epoch.
    pub started_at_nanos: i64,
    /// Whether it runs (false: exited).
    pub running: bool,
}

/// A container stopped through `StopContainer`, as the stop hooks see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoppedContainer {
    /// The runtime's id.
    pub id: String,
    /// The pod's namespace, name and uid.
    pub namespace: String,
    /// Pod name.
    pub pod: String,
    /// Pod uid.
    pub pod_uid: String,
    /// The container's name in the pod.
    pub name: String,
}

#[derive(Default)]
struct State {
    runtime_name: String,
    serves_v1: bool,
    scripts: HashMap<String, Behaviour>,
    /// By normalised reference.
    images: BTreeMap<String, v1::Image>,
    pulling: usize,
    max_pulling: usize,
    pulls: Vec<String>,
    hooks: Vec<Hook>,
    /// Containers by id, with their pod (namespace, name, uid).
    containers: BTreeMap<String, (PodContainer, (String, String, String))>,
    /// Ids stopped through `StopContainer` (they stay exited whatever the kubelet registers).
    stopped: std::collections::BTreeSet<String>,
    /// Every StopContainer received (ids), in order.
    stops: Vec<String>,
    /// Every ExecSync received: container id and command.
    execs: Vec<(String, Vec<String>)>,
    stop_hooks: Vec<StopHook>,
    /// Scripted ExecSync answers by command: exit code and stdout (default: exit 0, no output).
    exec_answers: BTreeMap<Vec<String>, (i32, String)>,
    /// Exit code and finish time (ns since the epoch) of each container `StopContainer` stopped.
    exits: BTreeMap<String, (i32, i64)>,
    /// The exit code a container of this name stops with (default 0: it handles SIGTERM).
    stop_exit_codes: HashMap<String, i32>,
    /// The environment each container started with (what `env` prints in it), by id.
    envs: BTreeMap<String, Vec<(String, String)>>,
}

/// An in-process CRI image+runtime service on a unix socket, scriptable per image. Clones share
/// state, so a test keeps one to script and inspect while the server runs.
#[derive(Clone)]
pub struct FakeRuntime {
    state: Arc<Mutex<State>>,
}

impl std::fmt::Debug for FakeRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.lock();
        f.debug_struct("FakeRuntime")
            .field("runtime_name", &state.runtime_name)
            .field("images", &state.images.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// Normalises an image reference the way containerd names images: a registry host (default
/// `docker.io`), `library/` for single-name Docker Hub images, and `:latest` when there is neither
/// tag nor digest.
pub fn normalize(image: &str) -> String {
    let image = image.trim();
    let (name, digest) = match image.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (image, None),
    };
    let (first, rest) = match name.split_once('/') {
        Some((f, r)) => (f, Some(r)),
        None => (name, None),
    };
    let is_host = |s: &str| s.contains('.') || s.contains(':') || s == "localhost";
    let full = match rest {
        Some(rest) if is_host(first) => format!("{first}/{rest}"),
        Some(_) => format!("docker.io/{name}"),
        None => format!("docker.io/library/{name}"),
    };
    let last = full.rsplit('/').next().unwrap_or_default();
    match digest {
        Some(d) => format!("{full}@{d}"),
        None if last.contains(':') => full,
        None => format!("{full}:latest"),
    }
}

/// The id the fake gives an image: `sha256:` + hex SHA-256 of its normalised reference.
pub fn image_id(image: &str) -> String {
    let digest = Sha256::digest(normalize(image).as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// The fake size of an image: between 1 and ~66 MB, fixed per reference, so node.status.images
/// sizes differ between images.
fn image_size(id: &str) -> u64 {
    let head =
        id.strip_prefix("sha256:").and_then(|h| h.get(..4)).and_then(|h| u64::from_str_radix(h, 16).ok()).unwrap_or(0);
    1_000_000 + head * 1_000
}

fn make_image(reference: &str) -> v1::Image {
    let id = image_id(reference);
    let repo = match reference.split_once('@') {
        Some((repo, _)) => repo.to_string(),
        None => match reference.rsplit_once(':') {
            Some((repo, tag)) if !tag.contains('/') => repo.to_string(),
            _ => reference.to_string(),
        },
    };
    let (repo_tags, repo_digests) = if reference.contains('@') {
        (vec![], vec![reference.to_string()])
    } else {
        (vec![reference.to_string()], vec![format!("{repo}@{id}")])
    };
    v1::Image {
        size: image_size(&id),
        id,
        repo_tags,
        repo_digests,
        spec: Some(v1::ImageSpec { image: reference.to_string(), ..Default::default() }),
        ..Default::default()
    }
}

/// Decrements the in-flight pull count however the pull ends (including a client hanging up,
/// which drops the handler future).
struct PullSlot(Arc<Mutex<State>>);

impl Drop for PullSlot {
    fn drop(&mut self) {
        let mut state = self.0.lock().unwrap_or_else(|p| p.into_inner());
        state.pulling = state.pulling.saturating_sub(1);
    }
}

fn credentials_match(auth: Option<&v1::AuthConfig>, username: &str, password: &str) -> bool {
    let Some(auth) = auth else { return false };
    if !auth.username.is_empty() || !auth.password.is_empty() {
        return auth.username == username && auth.password == password;
    }
    base64::engine::general_purpose::STANDARD
        .decode(auth.auth.as_bytes())
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .is_some_and(|pair| pair == format!("{username}:{password}"))
}

fn registry_host(reference: &str) -> &str {
    reference.split('/').next().unwrap_or(reference)
}

impl FakeRuntime {
    /// A runtime whose `Version` answers `runtime_name` `name`, serving CRI v1.
    pub fn new(name: &str) -> Self {
        FakeRuntime {
            state: Arc::new(Mutex::new(State {
                runtime_name: name.to_string(),
                serves_v1: true,
                ..Default::default()
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A test thread that panicked holding the lock leaves the state usable for the others.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How pulls of `image` go from now on (default: succeed at once).
    pub fn script(&self, image: &str, b: Behaviour) {
        self.lock().scripts.insert(normalize(image), b);
    }

    /// Makes the runtime answer every call Unimplemented (`unknown service runtime.v1...`), as a
    /// runtime without CRI v1 does; `true` again restores it.
    pub fn set_serves_v1(&self, serves: bool) {
        self.lock().serves_v1 = serves;
    }

    /// What the runtime has (pulled or [`FakeRuntime::ensure_image`]d), by reference.
    pub fn images(&self) -> Vec<v1::Image> {
        self.lock().images.values().cloned().collect()
    }

    /// The image `image` names, if the runtime has it.
    pub fn image(&self, image: &str) -> Option<v1::Image> {
        self.lock().images.get(&normalize(image)).cloned()
    }

    /// The most pulls seen at once.
    pub fn max_concurrent_pulls(&self) -> usize {
        self.lock().max_pulling
    }

    /// Pulls running now (with [`FakeRuntime::max_concurrent_pulls`], what a test samples to
    /// check a bound on concurrent pulls across nodes).
    pub fn pulls_in_flight(&self) -> usize {
        self.lock().pulling
    }

    /// Restarts [`FakeRuntime::max_concurrent_pulls`] from the pulls running now (a shared
    /// runtime between tests).
    pub fn reset_max_concurrent_pulls(&self) {
        let mut state = self.lock();
        state.max_pulling = state.pulling;
    }

    /// Every PullImage received, in order, as requested (failed ones included).
    pub fn pulls(&self) -> Vec<String> {
        self.lock().pulls.clone()
    }

    /// Called after each successful pull with the image, and when [`FakeRuntime::ensure_image`]
    /// adds one (testenv hooks node.status.images here).
    pub fn on_pull(&self, f: impl Fn(&v1::Image) + Send + Sync + 'static) {
        self.lock().hooks.push(Arc::new(f));
    }

    /// Adds `image` without a pull script or delay (a kubelet pulling a pod's image, or an image
    /// preloaded on the node) and returns it; the pull hooks run when it is new.
    pub fn ensure_image(&self, image: &str) -> v1::Image {
        self.record(&normalize(image), false)
    }

    /// Stores the image; runs the hooks when it is new or `pulled` (a re-pull is still a pull).
    fn record(&self, reference: &str, pulled: bool) -> v1::Image {
        let (image, new, hooks) = {
            let mut state = self.lock();
            let new = !state.images.contains_key(reference);
            let image = state.images.entry(reference.to_string()).or_insert_with(|| make_image(reference)).clone();
            (image, new, state.hooks.clone())
        };
        // Hooks run outside the lock: they may call back into the runtime.
        if new || pulled {
            for hook in &hooks {
                hook(&image);
            }
        }
        image
    }

    /// Registers the containers the node's kubelet runs for one pod (replacing what it
    /// registered before for that pod uid); a container stopped through `StopContainer` stays
    /// exited.
    pub fn set_pod_containers(&self, namespace: &str, pod: &str, pod_uid: &str, containers: Vec<PodContainer>) {
        let mut state = self.lock();
        state.containers.retain(|_, (_, (_, _, uid))| uid != pod_uid);
        for c in containers {
            let owner = (namespace.to_string(), pod.to_string(), pod_uid.to_string());
            state.containers.insert(c.id.clone(), (c, owner));
        }
    }

    /// Forgets the containers of a pod that is gone.
    pub fn forget_pod(&self, pod_uid: &str) {
        self.lock().containers.retain(|_, (_, (_, _, uid))| uid != pod_uid);
    }

    /// Whether `StopContainer` stopped the container `id`.
    pub fn was_stopped(&self, id: &str) -> bool {
        self.lock().stopped.contains(id.trim_start_matches("containerd://"))
    }

    /// The exit code and finish time (ns since the epoch) of a container `StopContainer`
    /// stopped (`(0, 0)` for one marked stopped by a test).
    pub fn stop_exit(&self, id: &str) -> Option<(i32, i64)> {
        let id = id.trim_start_matches("containerd://");
        let state = self.lock();
        state.exits.get(id).copied().or_else(|| state.stopped.contains(id).then_some((0, 0)))
    }

    /// The environment container `id` started with (`ExecSync` of `env` prints it); only the
    /// first call for an id counts, as a running container's environment never changes.
    pub fn set_container_env(&self, id: &str, env: Vec<(String, String)>) {
        self.lock().envs.entry(id.trim_start_matches("containerd://").to_string()).or_insert(env);
    }

    /// Containers named `name` exit with `code` when stopped from now on (default 0).
    pub fn set_stop_exit_code(&self, name: &str, code: i32) {
        self.lock().stop_exit_codes.insert(name.to_string(), code);
    }

    /// Marks a container stopped as `StopContainer` would, without the hooks (tests).
    pub fn mark_stopped_for_test(&self, id: &str) {
        self.lock().stopped.insert(id.to_string());
    }

    /// Every StopContainer received (container ids), in order.
    pub fn stops(&self) -> Vec<String> {
        self.lock().stops.clone()
    }

    /// Every ExecSync received (container id, command), in order.
    pub fn execs(&self) -> Vec<(String, Vec<String>)> {
        self.lock().execs.clone()
    }

    /// How ExecSync of exactly `cmd` answers from now on, in any container: exit code and stdout
    /// (probe scripts of PodProbeMarker tests; unscripted commands exit 0 without output).
    pub fn script_exec(&self, cmd: &[&str], exit_code: i32, stdout: &str) {
        let cmd = cmd.iter().map(|s| s.to_string()).collect();
        self.lock().exec_answers.insert(cmd, (exit_code, stdout.to_string()));
    }

    /// Called after each successful StopContainer (testenv's kubelet restarts the container).
    pub fn on_stop(&self, f: impl Fn(&StoppedContainer) + Send + Sync + 'static) {
        self.lock().stop_hooks.push(Arc::new(f));
    }

    fn list_containers_matching(&self, filter: Option<&v1::ContainerFilter>) -> Vec<v1::Container> {
        let state = self.lock();
        let mut out = Vec::new();
        for (id, (c, (ns, pod, uid))) in &state.containers {
            let running = c.running && !state.stopped.contains(id);
            let labels: std::collections::HashMap<String, String> = [
                (crate::POD_UID_LABEL.to_string(), uid.clone()),
                ("io.kubernetes.pod.namespace".to_string(), ns.clone()),
                ("io.kubernetes.pod.name".to_string(), pod.clone()),
                (crate::CONTAINER_NAME_LABEL.to_string(), c.name.clone()),
            ]
            .into_iter()
            .collect();
            if let Some(f) = filter {
                if !f.id.is_empty() && &f.id != id {
                    continue;
                }
                if f.label_selector.iter().any(|(k, v)| labels.get(k) != Some(v)) {
                    continue;
                }
            }
            let state_value =
                if running { v1::ContainerState::ContainerRunning } else { v1::ContainerState::ContainerExited };
            out.push(v1::Container {
                id: id.clone(),
                metadata: Some(v1::ContainerMetadata {
                    name: c.name.clone(),
                    attempt: u32::try_from(c.restart_count).unwrap_or(0),
                }),
                state: state_value as i32,
                created_at: c.started_at_nanos,
                labels,
                annotations: [(crate::RESTART_COUNT_ANNOTATION.to_string(), c.restart_count.to_string())]
                    .into_iter()
                    .collect(),
                ..Default::default()
            });
        }
        out
    }

    /// Binds `socket` (replacing a stale file) and serves until the handle is aborted.
    pub async fn serve(&self, socket: &Path) -> std::io::Result<tokio::task::JoinHandle<()>> {
        match tokio::fs::remove_file(socket).await {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        let listener = UnixListener::bind(socket)?;
        let router = tonic::transport::Server::builder()
            .add_service(RuntimeServiceServer::new(self.clone()))
            .add_service(ImageServiceServer::new(self.clone()));
        Ok(tokio::spawn(async move {
            if let Err(e) = router.serve_with_incoming(UnixListenerStream::new(listener)).await {
                tracing::warn!(error = %e, "fake CRI runtime stopped");
            }
        }))
    }

    fn check_v1(&self, service: &str) -> Result<(), Status> {
        if self.lock().serves_v1 {
            Ok(())
        } else {
            Err(Status::unimplemented(format!("unknown service runtime.v1.{service}")))
        }
    }

    async fn pull(&self, request: v1::PullImageRequest) -> Result<String, Status> {
        let requested = request.image.map(|s| s.image).unwrap_or_default();
        if requested.trim().is_empty() {
            return Err(Status::invalid_argument("ImageSpec.Image is empty"));
        }
        let reference = normalize(&requested);
        let behaviour = {
            let mut state = self.lock();
            state.pulls.push(requested.clone());
            state.pulling += 1;
            state.max_pulling = state.max_pulling.max(state.pulling);
            state.scripts.get(&reference).cloned().unwrap_or_default()
        };
        let _slot = PullSlot(self.state.clone());
        let unpack = format!("failed to pull and unpack image \"{reference}\"");
        let resolve = format!("failed to resolve reference \"{reference}\"");
        let delay = match behaviour {
            Behaviour::Succeed { delay } => delay,
            Behaviour::Fail { message } => return Err(Status::unknown(message)),
            Behaviour::NotFound => {
                return Err(Status::unknown(format!("{unpack}: {resolve}: {reference}: not found")));
            }
            Behaviour::RequireAuth { username, password, delay } => {
                if !credentials_match(request.auth.as_ref(), &username, &password) {
                    return Err(Status::unknown(format!(
                        "{unpack}: {resolve}: pulling from host {} failed with status code [manifests {}]: 401 Unauthorized",
                        registry_host(&reference),
                        reference.rsplit([':', '@']).next().unwrap_or_default()
                    )));
                }
                delay
            }
        };
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        Ok(self.record(&reference, true).id)
    }

    fn find(&self, image: &str) -> Option<v1::Image> {
        let state = self.lock();
        if image.starts_with("sha256:") {
            return state.images.values().find(|i| i.id == image).cloned();
        }
        state.images.get(&normalize(image)).cloned()
    }
}

#[tonic::async_trait]
impl RuntimeService for FakeRuntime {
    async fn version(&self, _request: Request<v1::VersionRequest>) -> Result<Response<v1::VersionResponse>, Status> {
        self.check_v1("RuntimeService")?;
        let name = self.lock().runtime_name.clone();
        Ok(Response::new(v1::VersionResponse {
            version: "0.1.0".to_string(),
            runtime_name: name,
            runtime_version: "0.0.0-fake".to_string(),
            runtime_api_version: "v1".to_string(),
        }))
    }

    async fn list_containers(
        &self,
        request: Request<v1::ListContainersRequest>,
    ) -> Result<Response<v1::ListContainersResponse>, Status> {
        self.check_v1("RuntimeService")?;
        let filter = request.into_inner().filter;
        Ok(Response::new(v1::ListContainersResponse { containers: self.list_containers_matching(filter.as_ref()) }))
    }

    async fn stop_container(
        &self,
        request: Request<v1::StopContainerRequest>,
    ) -> Result<Response<v1::StopContainerResponse>, Status> {
        self.check_v1("RuntimeService")?;
        let id = request.into_inner().container_id;
        let (stopped, hooks) = {
            let mut state = self.lock();
            state.stops.push(id.clone());
            // CRI: stopping an unknown container is an error; stopping a stopped one is not.
            let Some((c, (ns, pod, uid))) = state.containers.get(&id).cloned() else {
                return Err(Status::not_found(format!(
                    "an error occurred when try to find container \"{id}\": not found"
                )));
            };
            state.stopped.insert(id.clone());
            let code = state.stop_exit_codes.get(&c.name).copied().unwrap_or(0);
            let at = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
            state.exits.entry(id.clone()).or_insert((code, at));
            let stopped = StoppedContainer { id, namespace: ns, pod, pod_uid: uid, name: c.name };
            (stopped, state.stop_hooks.clone())
        };
        for hook in &hooks {
            hook(&stopped);
        }
        Ok(Response::new(v1::StopContainerResponse {}))
    }

    async fn exec_sync(&self, request: Request<v1::ExecSyncRequest>) -> Result<Response<v1::ExecSyncResponse>, Status> {
        self.check_v1("RuntimeService")?;
        let r = request.into_inner();
        let mut state = self.lock();
        if !state.containers.contains_key(&r.container_id) || state.stopped.contains(&r.container_id) {
            return Err(Status::not_found(format!("container {} is not running", r.container_id)));
        }
        let (exit_code, stdout) = match state.exec_answers.get(&r.cmd).cloned() {
            Some(answer) => answer,
            None if r.cmd == ["env"] => {
                let env = state.envs.get(&r.container_id).cloned().unwrap_or_default();
                (0, env.iter().map(|(k, v)| format!("{k}={v}\n")).collect::<String>())
            }
            None => (0, String::new()),
        };
        state.execs.push((r.container_id, r.cmd));
        Ok(Response::new(v1::ExecSyncResponse { stdout: stdout.into_bytes(), stderr: Vec::new(), exit_code }))
    }
}

#[tonic::async_trait]
impl ImageService for FakeRuntime {
    async fn list_images(
        &self,
        request: Request<v1::ListImagesRequest>,
    ) -> Result<Response<v1::ListImagesResponse>, Status> {
        self.check_v1("ImageService")?;
        let filter = request.into_inner().filter.and_then(|f| f.image).map(|s| s.image).filter(|s| !s.is_empty());
        let images = match filter {
            Some(image) => self.find(&image).into_iter().collect(),
            None => self.images(),
        };
        Ok(Response::new(v1::ListImagesResponse { images }))
    }

    async fn image_status(
        &self,
        request: Request<v1::ImageStatusRequest>,
    ) -> Result<Response<v1::ImageStatusResponse>, Status> {
        self.check_v1("ImageService")?;
        let image = request.into_inner().image.map(|s| s.image).unwrap_or_default();
        // CRI: an image the runtime does not have is an answer with no image, not an error.
        Ok(Response::new(v1::ImageStatusResponse { image: self.find(&image), info: Default::default() }))
    }

    async fn pull_image(
        &self,
        request: Request<v1::PullImageRequest>,
    ) -> Result<Response<v1::PullImageResponse>, Status> {
        self.check_v1("ImageService")?;
        let image_ref = self.pull(request.into_inner()).await?;
        Ok(Response::new(v1::PullImageResponse { image_ref }))
    }

    async fn remove_image(
        &self,
        request: Request<v1::RemoveImageRequest>,
    ) -> Result<Response<v1::RemoveImageResponse>, Status> {
        self.check_v1("ImageService")?;
        let image = request.into_inner().image.map(|s| s.image).unwrap_or_default();
        // CRI: removing an absent image succeeds.
        if let Some(found) = self.find(&image) {
            self.lock().images.retain(|_, i| i.id != found.id);
        }
        Ok(Response::new(v1::RemoveImageResponse {}))
    }

    async fn image_fs_info(
        &self,
        _request: Request<v1::ImageFsInfoRequest>,
    ) -> Result<Response<v1::ImageFsInfoResponse>, Status> {
        self.check_v1("ImageService")?;
        let images = self.images();
        let used: u64 = images.iter().map(|i| i.size).sum();
        let timestamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
            .unwrap_or(0);
        Ok(Response::new(v1::ImageFsInfoResponse {
            image_filesystems: vec![v1::FilesystemUsage {
                timestamp,
                fs_id: Some(v1::FilesystemIdentifier { mountpoint: "/var/lib/fake-cri/images".to_string() }),
                used_bytes: Some(v1::UInt64Value { value: used }),
                inodes_used: Some(v1::UInt64Value { value: images.len() as u64 }),
            }],
            container_filesystems: vec![],
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_table() {
        let cases = [
            ("nginx", "docker.io/library/nginx:latest"),
            ("nginx:1.25", "docker.io/library/nginx:1.25"),
            ("library/nginx", "docker.io/library/nginx:latest"),
            ("bitnami/redis:7", "docker.io/bitnami/redis:7"),
            ("docker.io/library/busybox:1", "docker.io/library/busybox:1"),
            ("127.0.0.1:5000/tiny", "127.0.0.1:5000/tiny:latest"),
            ("127.0.0.1:5000/a/tiny:v2", "127.0.0.1:5000/a/tiny:v2"),
            ("localhost/x", "localhost/x:latest"),
            ("ghcr.io/o/p@sha256:abc", "ghcr.io/o/p@sha256:abc"),
            (" quay.io/o/p:1 ", "quay.io/o/p:1"),
        ];
        for (input, want) in cases {
            assert_eq!(normalize(input), want, "{input}");
        }
    }

    #[test]
    fn images_made_from_references() {
        let tagged = make_image("127.0.0.1:5000/a/tiny:v2");
        assert_eq!(tagged.id, image_id("127.0.0.1:5000/a/tiny:v2"));
        assert_eq!(tagged.id.len(), "sha256:".len() + 64);
        assert_eq!(tagged.repo_tags, ["127.0.0.1:5000/a/tiny:v2"]);
        assert_eq!(tagged.repo_digests, [format!("127.0.0.1:5000/a/tiny@{}", tagged.id)]);
        assert!(tagged.size >= 1_000_000);
        let pinned = make_image("ghcr.io/o/p@sha256:abc");
        assert!(pinned.repo_tags.is_empty());
        assert_eq!(pinned.repo_digests, ["ghcr.io/o/p@sha256:abc"]);
        assert_eq!(image_id("nginx"), image_id("docker.io/library/nginx:latest"));
        assert_ne!(image_id("nginx:1"), image_id("nginx:2"));
    }

    #[test]
    fn credentials() {
        let up = |u: &str, p: &str| v1::AuthConfig { username: u.into(), password: p.into(), ..Default::default() };
        let b64 = |s: &str| v1::AuthConfig {
            auth: base64::engine::general_purpose::STANDARD.encode(s),
            ..Default::default()
        };
        assert!(credentials_match(Some(&up("u", "p")), "u", "p"));
        assert!(!credentials_match(Some(&up("u", "x")), "u", "p"));
        assert!(credentials_match(Some(&b64("u:p")), "u", "p"));
        assert!(!credentials_match(Some(&b64("u:x")), "u", "p"));
        assert!(!credentials_match(None, "u", "p"));
        assert!(!credentials_match(Some(&v1::AuthConfig::default()), "u", "p"));
    }
}
