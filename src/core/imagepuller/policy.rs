//! How one tag's pull is attempted: per-attempt timeout, retries with backoff, the active
//! deadline, and the message a failed tag reports. Kruise `pullWorker.Run` and `doPullImage`
//! (`pkg/daemon/imagepuller/imagepuller_worker.go`):
//! - `timeoutSeconds` per attempt (default 600), `backoffLimit` retries after the first attempt
//!   (default 3; a negative value is the default), so at most `backoffLimit + 1` attempts;
//! - between attempts a backoff of 1s, doubled each time, at most 30s;
//! - with `activeDeadlineSeconds`, an attempt's timeout is cut to what is left of the deadline
//!   (counted from the worker's start), and no attempt starts past it: the tag fails with
//!   "pulling exceeds the activeDeadlineSeconds".
//!
//! Kruise also sleeps the backoff after the last failed attempt before reporting; we report at
//! once (the same outcome, sooner).

use std::time::Duration;

use crate::apis::nodeimage::ImageTagSpec;

/// kruise `defaultImagePullingTimeout`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);
/// kruise `defaultImagePullingBackoffLimit`.
pub const DEFAULT_BACKOFF_LIMIT: u32 = 3;
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// The message of a tag whose deadline passed (kruise's, verbatim).
pub const DEADLINE_EXCEEDED: &str = "pulling exceeds the activeDeadlineSeconds";

/// A tag's `pullPolicy` with kruise's defaults applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PullPolicy {
    /// One attempt's timeout.
    pub timeout: Duration,
    /// Retries after the first attempt.
    pub backoff_limit: u32,
    /// Deadline of all attempts, from the worker's start.
    pub active_deadline: Option<Duration>,
}

impl PullPolicy {
    /// The policy of `tag`.
    pub fn of(tag: &ImageTagSpec) -> PullPolicy {
        let p = tag.pull_policy.as_ref();
        let timeout = p
            .and_then(|p| p.timeout_seconds)
            .map(|s| Duration::from_secs(u64::try_from(s).unwrap_or(0)))
            .unwrap_or(DEFAULT_TIMEOUT);
        let backoff_limit =
            p.and_then(|p| p.backoff_limit).and_then(|b| u32::try_from(b).ok()).unwrap_or(DEFAULT_BACKOFF_LIMIT);
        let active_deadline =
            p.and_then(|p| p.active_deadline_seconds).map(|s| Duration::from_secs(u64::try_from(s).unwrap_or(0)));
        PullPolicy { timeout, backoff_limit, active_deadline }
    }

    /// What to do for attempt `attempt` (0 is the first), `elapsed` after the worker started;
    /// `None` when no attempt is left.
    pub fn next(&self, attempt: u32, elapsed: Duration) -> Option<Attempt> {
        if attempt > self.backoff_limit {
            return None;
        }
        match self.active_deadline {
            Some(deadline) if elapsed >= deadline => Some(Attempt::DeadlineExceeded),
            Some(deadline) => Some(Attempt::Pull { timeout: self.timeout.min(deadline - elapsed) }),
            None => Some(Attempt::Pull { timeout: self.timeout }),
        }
    }

    /// The wait after failed attempt `attempt` (0 is the first) before the next one.
    pub fn backoff(attempt: u32) -> Duration {
        let factor = 1u32.checked_shl(attempt.min(31)).unwrap_or(u32::MAX);
        FIRST_BACKOFF.saturating_mul(factor).min(MAX_BACKOFF)
    }
}

/// The next step of a pull worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attempt {
    /// Pull, giving up after `timeout`.
    Pull { timeout: Duration },
    /// The deadline passed: fail with [`DEADLINE_EXCEEDED`].
    DeadlineExceeded,
}

/// How a pull attempt failed, as the runtime said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PullFailure {
    /// The registry refused the credentials (or wanted some).
    Auth { message: String },
    /// The image or tag does not exist.
    NotFound { message: String },
    /// The attempt's timeout passed.
    Timeout,
    /// No container runtime answers on this node.
    NoRuntime { tried: String },
    /// Any other error of the runtime, its message verbatim.
    Runtime { message: String },
}

impl PullFailure {
    /// Whether another attempt could help (kruise retries everything; a node without a runtime
    /// is not retried, it is reported at once).
    pub fn retryable(&self) -> bool {
        !matches!(self, PullFailure::NoRuntime { .. })
    }
}

/// The message a failed tag reports for `image:tag` (its registry host `registry`). Auth
/// failures are named as such with the registry (kruise #780: they were silent), other runtime
/// errors keep kruise's `Failed to pull image reference "<ref>": <runtime message>`, a timeout
/// kruise's `pulling image <ref> is canceled`.
pub fn failure_message(image_ref: &str, registry: &str, failure: &PullFailure) -> String {
    match failure {
        PullFailure::Auth { message } => format!("authentication failed for {registry}: {message}"),
        PullFailure::NotFound { message } | PullFailure::Runtime { message } => {
            format!("Failed to pull image reference {image_ref:?}: {message}")
        }
        PullFailure::Timeout => format!("pulling image {image_ref} is canceled"),
        PullFailure::NoRuntime { tried } => {
            format!("no container runtime on this node (pulls disabled); tried {tried}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apis::nodeimage::ImageTagPullPolicy;

    fn policy(timeout: Option<i32>, backoff: Option<i32>, deadline: Option<i64>) -> PullPolicy {
        PullPolicy::of(&ImageTagSpec {
            tag: "1".into(),
            pull_policy: Some(ImageTagPullPolicy {
                timeout_seconds: timeout,
                backoff_limit: backoff,
                active_deadline_seconds: deadline,
                ttl_seconds_after_finished: None,
            }),
            ..Default::default()
        })
    }

    #[test]
    fn defaults_as_kruise() {
        let none = PullPolicy::of(&ImageTagSpec::default());
        assert_eq!(none, PullPolicy { timeout: DEFAULT_TIMEOUT, backoff_limit: 3, active_deadline: None });
        assert_eq!(policy(None, Some(-1), None).backoff_limit, 3, "negative backoffLimit is the default");
        assert_eq!(
            policy(Some(30), Some(0), Some(60)),
            PullPolicy {
                timeout: Duration::from_secs(30),
                backoff_limit: 0,
                active_deadline: Some(Duration::from_secs(60))
            }
        );
    }

    #[test]
    fn attempts_timeouts_and_the_deadline() {
        let s = Duration::from_secs;
        // (policy, attempt, elapsed, want)
        let rows = [
            (policy(Some(10), Some(2), None), 0, s(0), Some(Attempt::Pull { timeout: s(10) })),
            (policy(Some(10), Some(2), None), 2, s(100), Some(Attempt::Pull { timeout: s(10) })),
            (policy(Some(10), Some(2), None), 3, s(100), None),
            (policy(Some(10), Some(0), None), 1, s(0), None),
            // The deadline cuts the attempt's timeout to what is left.
            (policy(Some(10), Some(3), Some(15)), 1, s(8), Some(Attempt::Pull { timeout: s(7) })),
            (policy(Some(10), Some(3), Some(15)), 1, s(15), Some(Attempt::DeadlineExceeded)),
            (policy(Some(10), Some(3), Some(15)), 0, s(20), Some(Attempt::DeadlineExceeded)),
        ];
        for (i, (p, attempt, elapsed, want)) in rows.into_iter().enumerate() {
            assert_eq!(p.next(attempt, elapsed), want, "row {i}");
        }
    }

    #[test]
    fn backoff_doubles_to_thirty_seconds() {
        let got: Vec<u64> = (0..8).map(|a| PullPolicy::backoff(a).as_secs()).collect();
        assert_eq!(got, [1, 2, 4, 8, 16, 30, 30, 30]);
        assert_eq!(PullPolicy::backoff(u32::MAX), Duration::from_secs(30));
    }

    #[test]
    fn messages_name_auth_failures_and_keep_the_runtime_text() {
        let auth = PullFailure::Auth { message: "pull access denied: unauthorized".into() };
        assert_eq!(
            failure_message("registry.example.com/app:1", "registry.example.com", &auth),
            "authentication failed for registry.example.com: pull access denied: unauthorized"
        );
        let nf = PullFailure::NotFound { message: "manifest unknown".into() };
        assert_eq!(
            failure_message("nginx:nope", "docker.io", &nf),
            "Failed to pull image reference \"nginx:nope\": manifest unknown"
        );
        assert_eq!(failure_message("nginx:1", "docker.io", &PullFailure::Timeout), "pulling image nginx:1 is canceled");
        let none = PullFailure::NoRuntime { tried: "unix:///run/containerd/containerd.sock (no such file)".into() };
        assert!(failure_message("nginx:1", "docker.io", &none).contains("unix:///run/containerd/containerd.sock"));
        assert!(!none.retryable() && auth.retryable());
    }
}
