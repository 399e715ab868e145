//! Which runtime socket `kruise daemon` talks to (issue 29 item 4; kruise #1319 #1825 #851 #1196
//! #1663). kruise's `factory_unix.go` stats a fixed list of sockets under the host's /var/run and
//! keeps every one it can connect to, using the first; it picks containerd's socket on a node
//! whose kubelet uses cri-dockerd, and exits when none serves CRI v1. Here:
//! 1. an explicit endpoint (flag) is the only one tried;
//! 2. else the kubelet's own `containerRuntimeEndpoint` from its KubeletConfiguration file, when
//!    that file is given and names one: the kubelet's runtime is the one whose images pods use,
//!    so it alone is tried;
//! 3. else each candidate in order, with a CRI `Version` call; the first that answers wins.
//!
//! Every path tried is returned with its outcome for the log and `/readyz`; nothing panics and
//! nothing exits when no runtime answers: the daemon keeps running with pulls disabled.

use std::path::Path;
use std::time::Duration;

use crate::client::{CriClient, RuntimeVersion, socket_path};

/// The sockets runtimes listen on, in the order probed: containerd (also k3s/rke2's and
/// microk8s's own containerd), CRI-O, cri-dockerd last (a node running docker also runs
/// containerd, and kubelet ≥ 1.24 only uses docker through cri-dockerd when told to, which the
/// kubelet config says).
pub const WELL_KNOWN_ENDPOINTS: &[&str] = &[
    "unix:///run/containerd/containerd.sock",
    "unix:///var/run/containerd.sock",
    "unix:///run/k3s/containerd/containerd.sock",
    "unix:///var/snap/microk8s/common/run/containerd.sock",
    "unix:///var/run/crio/crio.sock",
    "unix:///var/run/crio.sock",
    "unix:///var/run/cri-dockerd.sock",
];

/// How long one probe (connect + Version) may take in [`discover`].
pub const DEFAULT_PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// One path tried and what happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    pub endpoint: String,
    /// "ok: containerd 1.7.x (v1)" or the error.
    pub outcome: String,
}

/// The result of [`discover`]: the runtime chosen, if any, and every path tried.
#[derive(Debug)]
pub struct Discovery {
    pub chosen: Option<(CriClient, RuntimeVersion)>,
    pub tried: Vec<Probe>,
}

impl Discovery {
    /// One line for logs and `/readyz`: `endpoint: outcome; endpoint: outcome`.
    pub fn summary(&self) -> String {
        self.tried.iter().map(|p| format!("{}: {}", p.endpoint, p.outcome)).collect::<Vec<_>>().join("; ")
    }
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct KubeletConfiguration {
    #[serde(default)]
    container_runtime_endpoint: Option<String>,
}

/// The `containerRuntimeEndpoint` of a KubeletConfiguration file (YAML or JSON); `Ok(None)` when
/// the file does not set it (kubelet's default then applies, which probing finds).
pub fn kubelet_runtime_endpoint(config: &str) -> Result<Option<String>, String> {
    let parsed: KubeletConfiguration =
        serde_yaml_ng::from_str(config).map_err(|e| format!("not a KubeletConfiguration: {e}"))?;
    Ok(parsed.container_runtime_endpoint.map(|e| e.trim().to_string()).filter(|e| !e.is_empty()))
}

/// Runtime discovery with [`DEFAULT_PROBE_TIMEOUT`] per probe; see the module comment.
pub async fn discover(explicit: Option<&str>, kubelet_config: Option<&Path>, candidates: &[&str]) -> Discovery {
    discover_with_timeout(explicit, kubelet_config, candidates, DEFAULT_PROBE_TIMEOUT).await
}

/// [`discover`] with a chosen timeout per probe.
pub async fn discover_with_timeout(
    explicit: Option<&str>,
    kubelet_config: Option<&Path>,
    candidates: &[&str],
    timeout: Duration,
) -> Discovery {
    let mut tried = Vec::new();
    if let Some(endpoint) = explicit {
        let chosen = probe(endpoint, "explicit", timeout, &mut tried).await;
        return Discovery { chosen, tried };
    }
    if let Some(file) = kubelet_config {
        let label = format!("kubelet config {}", file.display());
        match tokio::fs::read_to_string(file).await {
            Err(e) => tried.push(Probe {
                endpoint: file.display().to_string(),
                outcome: format!("{label} unreadable: {e}; probing well-known sockets"),
            }),
            Ok(text) => match kubelet_runtime_endpoint(&text) {
                Err(e) => tried.push(Probe {
                    endpoint: file.display().to_string(),
                    outcome: format!("{label}: {e}; probing well-known sockets"),
                }),
                Ok(None) => tried.push(Probe {
                    endpoint: file.display().to_string(),
                    outcome: format!("{label} sets no containerRuntimeEndpoint; probing well-known sockets"),
                }),
                Ok(Some(endpoint)) => {
                    let chosen = probe(&endpoint, &label, timeout, &mut tried).await;
                    return Discovery { chosen, tried };
                }
            },
        }
    }
    for endpoint in candidates {
        if let Some(chosen) = probe(endpoint, "well-known", timeout, &mut tried).await {
            return Discovery { chosen: Some(chosen), tried };
        }
    }
    Discovery { chosen: None, tried }
}

/// Connects and asks `Version`; records the outcome under `source` (where the endpoint came
/// from).
async fn probe(
    endpoint: &str,
    source: &str,
    timeout: Duration,
    tried: &mut Vec<Probe>,
) -> Option<(CriClient, RuntimeVersion)> {
    let outcome = match socket_path(endpoint) {
        Err(e) => Err(e),
        // A missing socket is the common case when probing: say so plainly.
        Ok(path) if !path.exists() => Err("no socket at this path".to_string()),
        Ok(_) => match CriClient::connect(endpoint, timeout).await {
            Err(e) => Err(e.to_string()),
            Ok(client) => match client.version().await {
                Err(e) => Err(e.to_string()),
                Ok(version) => Ok((client, version)),
            },
        },
    };
    match outcome {
        Ok((client, version)) => {
            tried.push(Probe {
                endpoint: endpoint.to_string(),
                outcome: format!(
                    "ok: {} {} ({}) [{source}]",
                    version.runtime_name, version.runtime_version, version.runtime_api_version
                ),
            });
            Some((client, version))
        }
        Err(e) => {
            tried.push(Probe { endpoint: endpoint.to_string(), outcome: format!("{e} [{source}]") });
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubelet_config_endpoint() {
        let cases: &[(&str, Result<Option<&str>, ()>)] = &[
            (
                "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncontainerRuntimeEndpoint: unix:///run/k3s/containerd/containerd.sock\ncgroupDriver: systemd\n",
                Ok(Some("unix:///run/k3s/containerd/containerd.sock")),
            ),
            (
                r#"{"apiVersion":"kubelet.config.k8s.io/v1beta1","kind":"KubeletConfiguration","containerRuntimeEndpoint":"/var/run/cri-dockerd.sock"}"#,
                Ok(Some("/var/run/cri-dockerd.sock")),
            ),
            (
                "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nclusterDNS: [10.96.0.10]\n",
                Ok(None),
            ),
            ("containerRuntimeEndpoint: \"\"\n", Ok(None)),
            ("containerRuntimeEndpoint: ~\n", Ok(None)),
            ("", Ok(None)),
            ("containerRuntimeEndpoint: [a, b]\n", Err(())),
            ("- just\n- a list\n", Err(())),
        ];
        for (text, want) in cases {
            let got = kubelet_runtime_endpoint(text).map_err(|_| ());
            let want = want.map(|o| o.map(str::to_string));
            assert_eq!(got, want, "{text}");
        }
    }

    #[tokio::test]
    async fn nothing_answers_is_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let a = format!("unix://{}", dir.path().join("a.sock").display());
        let b = dir.path().join("b.sock").display().to_string();
        let missing_config = dir.path().join("kubelet.yaml");
        let d = discover_with_timeout(
            None,
            Some(&missing_config),
            &[&a, &b, "tcp://1.2.3.4:1"],
            Duration::from_millis(500),
        )
        .await;
        assert!(d.chosen.is_none());
        let endpoints: Vec<&str> = d.tried.iter().map(|p| p.endpoint.as_str()).collect();
        let config = missing_config.display().to_string();
        assert_eq!(endpoints, [config.as_str(), &a, &b, "tcp://1.2.3.4:1"]);
        assert!(d.tried[0].outcome.contains("unreadable"), "{:?}", d.tried);
        assert!(d.tried[1].outcome.starts_with("no socket at this path"));
        assert!(d.tried[3].outcome.contains("only unix sockets"));
        assert!(d.summary().contains(&a));
    }
}
