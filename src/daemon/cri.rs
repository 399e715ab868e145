//! [`ImageRuntime`] over the node's CRI (`kruise-cri`): the runtime found by discovery (the
//! explicit `--runtime-endpoint`, else the kubelet config's `containerRuntimeEndpoint`, else the
//! well-known sockets; kruise `criruntime.NewFactory`), pulls as kruise's `pullImageV1` sends
//! them (the sandbox config always carries `apps.kruise.io/pulling-image-by: kruise-daemon`, some
//! runtimes fail on a nil one), and the runtime's errors sorted into auth failures, missing
//! images and the rest, with the runtime's text kept as Go prints a gRPC status
//! (`rpc error: code = Unknown desc = ...`). While no runtime answers, pulls fail naming every
//! endpoint tried, and discovery is retried.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwapOption;
use kruise_cri::{CriClient, CriError, WELL_KNOWN_ENDPOINTS, v1};
use tokio_util::sync::CancellationToken;

use super::admin::Health;
use super::runtime::ImageRuntime;
use crate::apis::imagepulljob::SandboxConfig;
use crate::core::imagepuller::auth::Credential;
use crate::core::imagepuller::policy::PullFailure;

/// kruise's `pullingImageSandboxConfigAnno`.
pub const PULLING_IMAGE_BY: &str = "apps.kruise.io/pulling-image-by";
/// How often discovery is retried while no runtime answers.
pub const REDISCOVER_EVERY: Duration = Duration::from_secs(30);

struct Chosen {
    client: CriClient,
    description: String,
}

/// Where discovery looks.
#[derive(Clone, Debug, Default)]
pub struct Where {
    /// `--runtime-endpoint`.
    pub explicit: Option<String>,
    /// `--kubelet-config`.
    pub kubelet_config: Option<PathBuf>,
}

/// The runtime discovery chose (or none, with every endpoint tried).
pub struct CriRuntime {
    chosen: ArcSwapOption<Chosen>,
    tried: ArcSwapOption<String>,
}

impl CriRuntime {
    /// Discovers the runtime once; logs every endpoint tried.
    pub async fn discover(at: &Where) -> CriRuntime {
        let runtime = CriRuntime { chosen: ArcSwapOption::empty(), tried: ArcSwapOption::empty() };
        runtime.probe(at).await;
        runtime
    }

    async fn probe(&self, at: &Where) -> bool {
        let (explicit, mut notes) = endpoint_to_probe(at).await;
        let candidates: Vec<String> = well_known();
        let candidates: Vec<&str> = candidates.iter().map(String::as_str).collect();
        let mut found = kruise_cri::discover(explicit.as_deref(), None, &candidates).await;
        notes.append(&mut found.tried);
        found.tried = notes;
        for p in &found.tried {
            tracing::info!(endpoint = %p.endpoint, outcome = %p.outcome, "CRI endpoint probed");
        }
        self.tried.store(Some(Arc::new(found.summary())));
        match found.chosen {
            Some((client, version)) => {
                let description = format!(
                    "{} {} (CRI {}) at {}",
                    version.runtime_name,
                    version.runtime_version,
                    version.runtime_api_version,
                    client.endpoint()
                );
                tracing::info!(runtime = %description, "container runtime chosen");
                self.chosen.store(Some(Arc::new(Chosen { client, description })));
                true
            }
            None => {
                tracing::error!(tried = %found.summary(), "no container runtime answered: pulls are disabled until one does");
                false
            }
        }
    }

    /// Retries discovery every [`REDISCOVER_EVERY`] while none answered (the runtime may start
    /// after the daemon); reports to `health`.
    pub async fn rediscover_until_found(self: Arc<Self>, at: Where, health: Arc<Health>, stop: CancellationToken) {
        health.set_runtime(self.describe());
        while self.chosen.load().is_none() {
            tokio::select! {
                _ = tokio::time::sleep(REDISCOVER_EVERY) => {}
                _ = stop.cancelled() => return,
            }
            self.probe(&at).await;
            health.set_runtime(self.describe());
        }
    }

    /// The connected client, when discovery found a runtime (the CRR executor's calls).
    pub fn client(&self) -> Option<CriClient> {
        self.chosen.load().as_deref().map(|c| c.client.clone())
    }

    fn tried(&self) -> String {
        self.tried.load().as_deref().cloned().unwrap_or_else(|| "nothing yet".into())
    }
}

/// An endpoint as the daemon's container sees it: the DaemonSet mounts the host's /run at /run
/// and not at /var/run (the kubelet mounts the ServiceAccount token under /var/run/secrets, which
/// must not land in a read-only host directory), and /var/run is /run on every systemd host, so
/// `unix:///var/run/x` is probed as `unix:///run/x`.
pub fn in_container(endpoint: &str) -> String {
    for (from, to) in [("unix:///var/run/", "unix:///run/"), ("unix:/var/run/", "unix:/run/")] {
        if let Some(rest) = endpoint.strip_prefix(from) {
            return format!("{to}{rest}");
        }
    }
    match endpoint.strip_prefix("/var/run/") {
        Some(rest) => format!("/run/{rest}"),
        None => endpoint.to_string(),
    }
}

/// kruise-cri's well-known endpoints as the container sees them, without repeats.
pub fn well_known() -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for e in WELL_KNOWN_ENDPOINTS {
        let e = in_container(e);
        if !out.contains(&e) {
            out.push(e);
        }
    }
    out
}

/// The one endpoint to probe (`--runtime-endpoint`, else the kubelet config's
/// `containerRuntimeEndpoint`), and what reading the kubelet config said (for `/readyz`).
async fn endpoint_to_probe(at: &Where) -> (Option<String>, Vec<kruise_cri::Probe>) {
    if let Some(e) = &at.explicit {
        return (Some(in_container(e)), Vec::new());
    }
    let Some(file) = &at.kubelet_config else { return (None, Vec::new()) };
    let note = |outcome: String| vec![kruise_cri::Probe { endpoint: file.display().to_string(), outcome }];
    match tokio::fs::read_to_string(file).await {
        Err(e) => (None, note(format!("kubelet config unreadable: {e}; probing well-known sockets"))),
        Ok(text) => match kruise_cri::kubelet_runtime_endpoint(&text) {
            Err(e) => (None, note(format!("kubelet config: {e}; probing well-known sockets"))),
            Ok(None) => {
                (None, note("kubelet config sets no containerRuntimeEndpoint; probing well-known sockets".into()))
            }
            Ok(Some(e)) => {
                let inside = in_container(&e);
                (Some(inside.clone()), note(format!("kubelet config names {e} (probed as {inside})")))
            }
        },
    }
}

/// The sandbox config of a pull (kruise `pullImageV1`).
pub fn sandbox_config(sandbox: Option<&SandboxConfig>) -> v1::PodSandboxConfig {
    let mut config = v1::PodSandboxConfig::default();
    if let Some(s) = sandbox {
        config.labels = s.labels.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        config.annotations = s.annotations.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    }
    config.annotations.insert(PULLING_IMAGE_BY.into(), "kruise-daemon".into());
    config
}

/// Sorts a runtime's error for the tag's status.
pub fn failure(e: &CriError) -> PullFailure {
    let message = match e {
        CriError::Status { code, message } => format!("rpc error: code = {code:?} desc = {message}"),
        other => other.to_string(),
    };
    if e.is_auth_failure() {
        PullFailure::Auth { message }
    } else if e.is_not_found() {
        PullFailure::NotFound { message }
    } else if matches!(e, CriError::Timeout { .. }) {
        PullFailure::Timeout
    } else {
        PullFailure::Runtime { message }
    }
}

impl ImageRuntime for CriRuntime {
    async fn pull(
        &self,
        image: &str,
        auth: Option<&Credential>,
        sandbox: Option<&SandboxConfig>,
    ) -> Result<String, PullFailure> {
        let Some(chosen) = self.chosen.load_full() else {
            return Err(PullFailure::NoRuntime { tried: self.tried() });
        };
        let auth = auth.map(|c| v1::AuthConfig {
            username: c.username.clone(),
            password: c.password.clone(),
            ..Default::default()
        });
        chosen.client.pull_image(image, auth, Some(sandbox_config(sandbox))).await.map_err(|e| failure(&e))
    }

    async fn image_id(&self, image: &str) -> Result<Option<String>, PullFailure> {
        let Some(chosen) = self.chosen.load_full() else {
            return Err(PullFailure::NoRuntime { tried: self.tried() });
        };
        chosen.client.image_status(image).await.map(|i| i.map(|i| i.id)).map_err(|e| failure(&e))
    }

    fn describe(&self) -> Result<String, String> {
        match self.chosen.load().as_deref() {
            Some(c) => Ok(c.description.clone()),
            None => Err(format!("no container runtime answered; tried {}", self.tried())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_sorted_and_keep_the_runtime_text() {
        let status = |code, m: &str| CriError::Status { code, message: m.into() };
        let auth = failure(&status(
            tonic::Code::Unknown,
            "failed to pull and unpack image \"r.io/a:1\": failed to resolve reference: unexpected status from HEAD request: 401 Unauthorized",
        ));
        assert!(
            matches!(&auth, PullFailure::Auth { message } if message.starts_with("rpc error: code = Unknown desc = failed to pull"))
        );
        let nf = failure(&status(tonic::Code::NotFound, "r.io/a:nope: not found"));
        assert_eq!(
            nf,
            PullFailure::NotFound { message: "rpc error: code = NotFound desc = r.io/a:nope: not found".into() }
        );
        assert_eq!(failure(&CriError::Timeout { after: Duration::from_secs(1) }), PullFailure::Timeout);
        let gone = failure(&CriError::Connect { endpoint: "unix:///x.sock".into(), message: "broken pipe".into() });
        assert!(matches!(gone, PullFailure::Runtime { message } if message.contains("unix:///x.sock")));
    }

    #[test]
    fn var_run_is_probed_under_run() {
        for (given, probed) in [
            ("unix:///var/run/crio/crio.sock", "unix:///run/crio/crio.sock"),
            ("unix:/var/run/cri-dockerd.sock", "unix:/run/cri-dockerd.sock"),
            ("/var/run/containerd.sock", "/run/containerd.sock"),
            ("unix:///run/containerd/containerd.sock", "unix:///run/containerd/containerd.sock"),
            (
                "unix:///var/snap/microk8s/common/run/containerd.sock",
                "unix:///var/snap/microk8s/common/run/containerd.sock",
            ),
        ] {
            assert_eq!(in_container(given), probed);
        }
        let w = well_known();
        assert!(w.iter().all(|e| !e.contains("/var/run/")), "{w:?}");
        assert!(w.contains(&"unix:///run/crio/crio.sock".to_string()));
        assert_eq!(w.len(), w.iter().collect::<std::collections::BTreeSet<_>>().len());
    }

    #[tokio::test]
    async fn the_kubelet_config_names_the_endpoint() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.yaml");
        std::fs::write(&file, "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncontainerRuntimeEndpoint: unix:///var/run/crio/crio.sock\n").unwrap();
        let at = Where { explicit: None, kubelet_config: Some(file.clone()) };
        let (e, notes) = endpoint_to_probe(&at).await;
        assert_eq!(e.as_deref(), Some("unix:///run/crio/crio.sock"));
        assert!(notes[0].outcome.contains("kubelet config names unix:///var/run/crio/crio.sock"));
        std::fs::write(&file, "kind: KubeletConfiguration\n").unwrap();
        assert_eq!(endpoint_to_probe(&at).await.0, None);
        let gone = Where { explicit: None, kubelet_config: Some(dir.path().join("missing.yaml")) };
        let (e, notes) = endpoint_to_probe(&gone).await;
        assert!(e.is_none() && notes[0].outcome.contains("unreadable"), "{notes:?}");
        let explicit = Where { explicit: Some("/var/run/x.sock".into()), kubelet_config: Some(file) };
        assert_eq!(endpoint_to_probe(&explicit).await.0.as_deref(), Some("/run/x.sock"));
    }

    #[test]
    fn the_sandbox_always_says_who_pulls() {
        let plain = sandbox_config(None);
        assert_eq!(plain.annotations.get(PULLING_IMAGE_BY).map(String::as_str), Some("kruise-daemon"));
        let s = SandboxConfig {
            labels: [("team".to_string(), "a".to_string())].into(),
            annotations: [("x".to_string(), "y".to_string())].into(),
        };
        let c = sandbox_config(Some(&s));
        assert_eq!(c.labels.get("team").map(String::as_str), Some("a"));
        assert_eq!(c.annotations.len(), 2);
    }
}
