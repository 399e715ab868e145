//! One tag's pull worker (kruise `pullWorker.Run` / `doPullImage`): wait for a slot of
//! `--max-concurrent-pulls` (the tag stays Waiting), report Pulling with its start time, then
//! attempt as [`PullPolicy`] says: `IfNotPresent` and the runtime has it is a success; otherwise
//! the credentials of the image's pull secrets that match its registry, then those of the
//! kubelet's credential-provider plugins, are tried in turn (an anonymous pull only when none
//! match); the last report is Succeeded with the image id or
//! Failed with the message. A stopped worker reports nothing more.

use std::sync::Arc;
use std::time::Instant;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::events::{Event, EventType, Recorder};
use tokio::sync::{Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

use super::admin::Metrics;
use super::credential_provider::CredentialPlugins;
use super::runtime::ImageRuntime;
use super::secrets::SecretCache;
use crate::apis::imagepulljob::SandboxConfig;
use crate::apis::nodeimage::v1beta1::ReferenceObject;
use crate::apis::nodeimage::{ImageTagSpec, ImageTagStatus};
use crate::core::imagepuller::auth::Keyring;
use crate::core::imagepuller::policy::{Attempt, DEADLINE_EXCEEDED, PullFailure, PullPolicy, failure_message};
use crate::core::imagepuller::pools::Phase;
use crate::core::imagepuller::{registry_of, repository_of};

/// A worker's report to the puller.
#[derive(Clone, Debug)]
pub struct Report {
    /// The image (NodeImage key).
    pub image: String,
    /// The tag's new status.
    pub status: ImageTagStatus,
}

/// What every worker shares.
pub struct Shared<R> {
    /// The runtime pulls go through.
    pub runtime: Arc<R>,
    /// Pull secrets.
    pub secrets: SecretCache,
    /// The kubelet's credential-provider plugins.
    pub credential_plugins: Option<Arc<CredentialPlugins>>,
    /// `--max-concurrent-pulls` (none: no limit).
    pub limit: Option<Arc<Semaphore>>,
    /// Reports to the puller.
    pub reports: mpsc::UnboundedSender<Report>,
    /// Metrics.
    pub metrics: Metrics,
    /// Events (kruise's `PullImageSucceed` / `PullImageFailed`).
    pub recorder: Option<Recorder>,
}

/// One tag to pull.
#[derive(Clone, Debug)]
pub struct Job {
    /// Image name (NodeImage key), e.g. `nginx`.
    pub image: String,
    /// The tag's spec.
    pub tag: ImageTagSpec,
    /// The image's pull secrets.
    pub pull_secrets: Vec<ReferenceObject>,
    /// The image's sandbox config.
    pub sandbox: Option<SandboxConfig>,
    /// The NodeImage, for Events.
    pub node_image: ObjectReference,
}

/// Now, at the second the API keeps (so a status read back compares equal).
pub fn now() -> Time {
    let t = Timestamp::now();
    Time(Timestamp::from_second(t.as_second()).unwrap_or(t))
}

/// Decrements the in-flight gauge however the pull ends (a timeout or a stop drops it).
struct InFlight(Metrics);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight(-1);
    }
}

/// Runs `job` until it is done or `stop` fires.
pub async fn run<R: ImageRuntime>(shared: Arc<Shared<R>>, job: Job, stop: CancellationToken) {
    let _permit = match &shared.limit {
        Some(limit) => tokio::select! {
            p = Arc::clone(limit).acquire_owned() => match p {
                Ok(p) => Some(p),
                Err(_) => return,
            },
            _ = stop.cancelled() => return,
        },
        None => None,
    };
    let image_ref = format!("{}:{}", job.image, job.tag.tag);
    let registry = registry_of(&job.image);
    let started = Instant::now();
    let mut status = ImageTagStatus {
        tag: job.tag.tag.clone(),
        phase: Phase::Pulling.as_str().into(),
        start_time: Some(now()),
        version: job.tag.version,
        ..Default::default()
    };
    report(&shared, &job, &status);
    tracing::info!(image = %image_ref, version = job.tag.version, "pulling");
    let policy = PullPolicy::of(&job.tag);
    let mut attempt = 0u32;
    let mut last_error = String::new();
    let outcome = loop {
        let timeout = match policy.next(attempt, started.elapsed()) {
            None => break Err(last_error),
            Some(Attempt::DeadlineExceeded) => break Err(DEADLINE_EXCEEDED.to_string()),
            Some(Attempt::Pull { timeout }) => timeout,
        };
        let result = tokio::select! {
            r = tokio::time::timeout(timeout, pull_once(&shared, &job, &image_ref)) => {
                r.unwrap_or(Err(PullFailure::Timeout))
            }
            _ = stop.cancelled() => return,
        };
        match result {
            Ok(id) => break Ok(id),
            Err(failure) => {
                if failure == PullFailure::Timeout {
                    shared.metrics.pull("timeout", timeout.as_secs_f64());
                }
                last_error = failure_message(&image_ref, &registry, &failure);
                tracing::warn!(image = %image_ref, attempt = attempt + 1, error = %last_error, "pull failed");
                if !failure.retryable() || attempt >= policy.backoff_limit {
                    break Err(last_error);
                }
                tokio::select! {
                    _ = tokio::time::sleep(PullPolicy::backoff(attempt)) => {}
                    _ = stop.cancelled() => return,
                }
                attempt += 1;
            }
        }
    };
    status.completion_time = Some(now());
    let elapsed = started.elapsed();
    match outcome {
        Ok(id) => {
            status.phase = Phase::Succeeded.as_str().into();
            status.progress = 100;
            status.image_id = id.map(|id| format!("{}@{id}", job.image)).unwrap_or_default();
            tracing::info!(image = %image_ref, seconds = elapsed.as_secs_f64(), "pulled");
            let note = format!("Image {image_ref}, ecalpsedTime {elapsed:?}");
            event(&shared, &job.node_image, EventType::Normal, "PullImageSucceed", &image_ref, note).await;
        }
        Err(message) => {
            status.phase = Phase::Failed.as_str().into();
            status.message = message.clone();
            let note = format!("Image {image_ref} {message}");
            for owner in &job.tag.owner_references {
                event(&shared, owner, EventType::Warning, "PullImageFailed", &image_ref, note.clone()).await;
            }
            event(&shared, &job.node_image, EventType::Warning, "PullImageFailed", &image_ref, note).await;
        }
    }
    if !stop.is_cancelled() {
        report(&shared, &job, &status);
    }
}

fn report<R>(shared: &Shared<R>, job: &Job, status: &ImageTagStatus) {
    let _ = shared.reports.send(Report { image: job.image.clone(), status: status.clone() });
}

/// Records an Event. The action names the image: kube's recorder folds Events of the same
/// object, reason and action into one series, which must not swallow another tag's failure.
async fn event<R>(
    shared: &Shared<R>,
    regarding: &ObjectReference,
    type_: EventType,
    reason: &str,
    image_ref: &str,
    note: String,
) {
    let Some(recorder) = &shared.recorder else { return };
    let action: String = format!("Pull {image_ref}").chars().take(128).collect();
    let ev = Event { type_, reason: reason.into(), note: Some(note), action, secondary: None };
    if let Err(e) = recorder.publish(&ev, regarding).await {
        tracing::debug!(error = %e, "cannot record Event {reason}");
    }
}

/// One attempt: the image id when the runtime reports one.
async fn pull_once<R: ImageRuntime>(
    shared: &Shared<R>,
    job: &Job,
    image_ref: &str,
) -> Result<Option<String>, PullFailure> {
    // kruise: the runtime's listing error is ignored here and the pull tried.
    if job.tag.image_pull_policy == "IfNotPresent"
        && let Ok(Some(id)) = shared.runtime.image_id(image_ref).await
    {
        shared.metrics.pull("present", 0.0);
        return Ok(Some(id));
    }
    let secrets = shared.secrets.get(&job.pull_secrets).await;
    let not_read = |message: String| {
        if secrets.problems.is_empty() {
            message
        } else {
            format!("{message} (pull secrets not read: {})", secrets.problems.join("; "))
        }
    };
    let repository = repository_of(&job.image, &job.tag.tag);
    let mut credentials = match Keyring::from_secrets(&secrets.found) {
        Ok(keyring) => repository.as_deref().map(|r| keyring.lookup(r)).unwrap_or_default(),
        Err(e) => return Err(PullFailure::Auth { message: e }),
    };
    // The secrets' credentials, then the plugins' (kubelet `UnionDockerKeyring` of the secrets'
    // keyring and the default one, as kruise's `ConvertToRegistryAuths`).
    if let (Some(plugins), Some(r)) = (&shared.credential_plugins, &repository) {
        credentials.extend(plugins.lookup(r).await);
    }
    shared.metrics.in_flight(1);
    let _guard = InFlight(shared.metrics.clone());
    let started = Instant::now();
    let result = if credentials.is_empty() {
        shared.runtime.pull(image_ref, None, job.sandbox.as_ref()).await
    } else {
        // Each matching credential in turn (kruise `pullImageV1`); the failures joined.
        let mut failures = Vec::new();
        let mut pulled = None;
        for c in &credentials {
            match shared.runtime.pull(image_ref, Some(c), job.sandbox.as_ref()).await {
                Ok(r) => {
                    pulled = Some(r);
                    break;
                }
                Err(f) => failures.push(f),
            }
        }
        match pulled {
            Some(r) => Ok(r),
            None => Err(join_failures(failures)),
        }
    };
    let seconds = started.elapsed().as_secs_f64();
    let result = result.map_err(|f| match f {
        PullFailure::Auth { message } => PullFailure::Auth { message: not_read(message) },
        other => other,
    });
    shared.metrics.pull(result_label(&result), seconds);
    let pulled_ref = result?;
    // The id the runtime lists for the tag (kruise `getImageInfo`), else what the pull answered.
    let id = shared.runtime.image_id(image_ref).await.ok().flatten();
    Ok(id.or(Some(pulled_ref).filter(|r| !r.is_empty())))
}

fn join_failures(mut failures: Vec<PullFailure>) -> PullFailure {
    if failures.len() == 1 {
        return failures.remove(0);
    }
    let auth = failures.iter().any(|f| matches!(f, PullFailure::Auth { .. }));
    let messages: Vec<String> = failures
        .iter()
        .map(|f| match f {
            PullFailure::Auth { message } | PullFailure::NotFound { message } | PullFailure::Runtime { message } => {
                message.clone()
            }
            PullFailure::Timeout => "timeout".into(),
            PullFailure::NoRuntime { tried } => tried.clone(),
        })
        .collect();
    let message = format!("[{}]", messages.join(", "));
    if auth { PullFailure::Auth { message } } else { PullFailure::Runtime { message } }
}

fn result_label<T>(r: &Result<T, PullFailure>) -> &'static str {
    match r {
        Ok(_) => "succeeded",
        Err(PullFailure::Auth { .. }) => "auth_failed",
        Err(PullFailure::NotFound { .. }) => "not_found",
        Err(PullFailure::Timeout) => "timeout",
        Err(PullFailure::NoRuntime { .. }) => "no_runtime",
        Err(PullFailure::Runtime { .. }) => "error",
    }
}
