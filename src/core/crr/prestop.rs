//! What the daemon does for a container's preStop hook before it stops the container (issue 30
//! item 1; kruise `pkg/daemon/kuberuntime` `executePreStopHook`, which hands the hook the
//! request copied from the pod to the kubelet's lifecycle handler runner, k8s v1.32
//! `pkg/kubelet/lifecycle/handlers.go` and `pkg/probe/http/request.go`):
//! - `exec`: the command, run in the old container (CRI `ExecSync`);
//! - `httpGet`: a GET of `scheme://host:port/path`, the host the pod's IP unless the hook names
//!   one, a named port resolved through the container's ports (the webhook copies them for an
//!   HTTP hook), the hook's headers with `User-Agent: kube-lifecycle` and `Accept: */*` unless
//!   set (an empty `Accept` drops it), a `Host` header as the request's host. The answer's status
//!   does not matter (the kubelet only reports a failed connection); an HTTPS hook answered in
//!   plain HTTP is sent again as HTTP, without `Authorization`;
//! - `tcpSocket` (or nothing): the kubelet's runner has no TCP handler and reports
//!   "invalid handler"; the container is stopped all the same.
//!
//! A hook that cannot be run (bad port, no pod IP) is reported and the stop goes on, as kruise's.

use k8s_openapi::api::core::v1::{ContainerPort, HTTPGetAction};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::apis::containerrecreaterequest::ProbeHandler;

/// The kubelet's lifecycle User-Agent (`kube-lifecycle`; kruise's build sets no Kubernetes
/// version, so without `/major.minor`).
pub const USER_AGENT: &str = "kube-lifecycle";

/// One HTTP GET, ready to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpGet {
    /// `http` or `https`.
    pub https: bool,
    /// Host to connect to (IP or name).
    pub host: String,
    /// Port to connect to.
    pub port: u16,
    /// Path and query, starting with `/`.
    pub path: String,
    /// Headers to send, in order (a `Host` header is not among them: see [`HttpGet::host_header`]).
    pub headers: Vec<(String, String)>,
    /// `Host:` to send (the hook's `Host` header, else `host:port`).
    pub host_header: String,
}

impl HttpGet {
    /// The URL, as Go's `url.URL` prints it (for messages).
    pub fn url(&self) -> String {
        let scheme = if self.https { "https" } else { "http" };
        format!("{scheme}://{}{}", join_host_port(&self.host, self.port), self.path)
    }
}

/// What to run before the stop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PreStop {
    /// No hook.
    Nothing,
    /// Run this command in the container.
    Exec(Vec<String>),
    /// Send this request.
    HttpGet(HttpGet),
    /// The hook cannot be run: why (logged; the container is stopped all the same).
    Invalid(String),
}

/// Whether running `hook` needs the pod's IP (an `httpGet` without a host).
pub fn needs_pod_ip(hook: Option<&ProbeHandler>) -> bool {
    hook.and_then(|h| if h.exec.is_some() { None } else { h.http_get.as_ref() })
        .is_some_and(|g| g.host.as_deref().is_none_or(str::is_empty))
}

/// The kubelet runner's choice for `hook` of a container with `ports`, the pod's IP `pod_ip`
/// when known.
pub fn plan(hook: Option<&ProbeHandler>, ports: &[ContainerPort], pod_ip: Option<&str>) -> PreStop {
    let Some(hook) = hook else { return PreStop::Nothing };
    if let Some(exec) = &hook.exec {
        return PreStop::Exec(exec.command.clone().unwrap_or_default());
    }
    if let Some(get) = &hook.http_get {
        return match request(get, ports, pod_ip) {
            Ok(r) => PreStop::HttpGet(r),
            Err(e) => PreStop::Invalid(e),
        };
    }
    if hook.tcp_socket.is_some() {
        return PreStop::Invalid("invalid handler: tcpSocket is not supported as a lifecycle handler".into());
    }
    PreStop::Invalid("invalid handler: none of exec, httpGet".into())
}

/// kubelet `NewRequestForHTTPGetAction`.
fn request(get: &HTTPGetAction, ports: &[ContainerPort], pod_ip: Option<&str>) -> Result<HttpGet, String> {
    let scheme = get.scheme.as_deref().unwrap_or_default().to_ascii_lowercase();
    let https = match scheme.as_str() {
        "" | "http" => false,
        "https" => true,
        other => return Err(format!("unsupported protocol scheme \"{other}\"")),
    };
    let host = match get.host.as_deref().filter(|h| !h.is_empty()) {
        Some(h) => h.to_string(),
        None => pod_ip.filter(|ip| !ip.is_empty()).ok_or("failed to find networking container: no pod IP")?.to_string(),
    };
    let port = resolve_port(&get.port, ports)?;
    let raw = get.path.as_deref().unwrap_or_default();
    let path = if raw.starts_with('/') { raw.to_string() } else { format!("/{raw}") };
    let mut headers = Vec::new();
    let mut host_header = join_host_port(&host, port);
    let (mut agent, mut accept) = (false, false);
    for h in get.http_headers.iter().flatten() {
        if h.name.eq_ignore_ascii_case("host") {
            host_header.clone_from(&h.value);
            continue;
        }
        agent |= h.name.eq_ignore_ascii_case("user-agent");
        if h.name.eq_ignore_ascii_case("accept") {
            accept = true;
            if h.value.is_empty() {
                continue;
            }
        }
        headers.push((h.name.clone(), h.value.clone()));
    }
    if !agent {
        headers.push(("User-Agent".into(), USER_AGENT.into()));
    }
    if !accept {
        headers.push(("Accept".into(), "*/*".into()));
    }
    Ok(HttpGet { https, host, port, path, headers, host_header })
}

/// kubelet `probe.ResolveContainerPort`: a number, or the name of one of the container's ports.
fn resolve_port(port: &IntOrString, ports: &[ContainerPort]) -> Result<u16, String> {
    let n = match port {
        IntOrString::Int(n) => *n,
        IntOrString::String(name) => ports
            .iter()
            .find(|p| p.name.as_deref() == Some(name.as_str()))
            .map(|p| p.container_port)
            .ok_or_else(|| format!("couldn't find port: {name} in the container's ports"))?,
    };
    u16::try_from(n).ok().filter(|p| *p > 0).ok_or_else(|| format!("invalid port number: {n}"))
}

/// Go's `net.JoinHostPort`: an IPv6 host in brackets.
fn join_host_port(host: &str, port: u16) -> String {
    if host.contains(':') { format!("[{host}]:{port}") } else { format!("{host}:{port}") }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn hook(v: Value) -> ProbeHandler {
        serde_json::from_value(v).unwrap()
    }

    fn ports() -> Vec<ContainerPort> {
        serde_json::from_value(
            json!([{"name": "http", "containerPort": 8080}, {"name": "admin", "containerPort": 9090}]),
        )
        .unwrap()
    }

    fn get(v: Value) -> HttpGet {
        match plan(Some(&hook(json!({"httpGet": v}))), &ports(), Some("10.0.0.7")) {
            PreStop::HttpGet(g) => g,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn kinds_of_hook() {
        assert_eq!(plan(None, &[], None), PreStop::Nothing);
        assert_eq!(
            plan(Some(&hook(json!({"exec": {"command": ["sh", "-c", "x"]}}))), &[], None),
            PreStop::Exec(vec!["sh".into(), "-c".into(), "x".into()])
        );
        assert_eq!(plan(Some(&hook(json!({"exec": {}}))), &[], None), PreStop::Exec(vec![]));
        assert!(matches!(plan(Some(&hook(json!({"tcpSocket": {"port": 80}}))), &[], Some("1.2.3.4")),
            PreStop::Invalid(m) if m.starts_with("invalid handler")));
        assert!(
            matches!(plan(Some(&hook(json!({}))), &[], None), PreStop::Invalid(m) if m.starts_with("invalid handler"))
        );
    }

    #[test]
    fn http_get_requests_as_the_kubelet_builds_them() {
        // (httpGet, url, headers, Host)
        type Row<'a> = (Value, &'a str, Vec<(&'a str, &'a str)>, &'a str);
        let rows: Vec<Row> = vec![
            (
                json!({"port": 80, "path": "/stop"}),
                "http://10.0.0.7:80/stop",
                vec![("User-Agent", "kube-lifecycle"), ("Accept", "*/*")],
                "10.0.0.7:80",
            ),
            (
                json!({"port": "http", "path": "stop?now=1"}),
                "http://10.0.0.7:8080/stop?now=1",
                vec![("User-Agent", "kube-lifecycle"), ("Accept", "*/*")],
                "10.0.0.7:8080",
            ),
            (
                json!({"port": 443, "scheme": "HTTPS", "host": "example.test"}),
                "https://example.test:443/",
                vec![("User-Agent", "kube-lifecycle"), ("Accept", "*/*")],
                "example.test:443",
            ),
            (
                json!({"port": 80, "host": "fd00::1"}),
                "http://[fd00::1]:80/",
                vec![("User-Agent", "kube-lifecycle"), ("Accept", "*/*")],
                "[fd00::1]:80",
            ),
            (
                json!({"port": 80, "httpHeaders": [{"name": "Host", "value": "svc.local"}, {"name": "X-A", "value": "1"},
                    {"name": "user-agent", "value": "me"}, {"name": "Accept", "value": ""}]}),
                "http://10.0.0.7:80/",
                vec![("X-A", "1"), ("user-agent", "me")],
                "svc.local",
            ),
            (
                json!({"port": 80, "httpHeaders": [{"name": "Accept", "value": "text/plain"}]}),
                "http://10.0.0.7:80/",
                vec![("Accept", "text/plain"), ("User-Agent", "kube-lifecycle")],
                "10.0.0.7:80",
            ),
        ];
        for (spec, url, headers, host) in rows {
            let g = get(spec.clone());
            assert_eq!(g.url(), url, "{spec}");
            let want: Vec<(String, String)> = headers.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect();
            assert_eq!(g.headers, want, "{spec}");
            assert_eq!(g.host_header, host, "{spec}");
        }
    }

    #[test]
    fn http_get_hooks_that_cannot_run() {
        let invalid = |v: Value, ip: Option<&str>| match plan(Some(&hook(json!({"httpGet": v}))), &ports(), ip) {
            PreStop::Invalid(m) => m,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            invalid(json!({"port": "grpc"}), Some("1.1.1.1")),
            "couldn't find port: grpc in the container's ports"
        );
        assert_eq!(invalid(json!({"port": 0}), Some("1.1.1.1")), "invalid port number: 0");
        assert_eq!(invalid(json!({"port": 70000}), Some("1.1.1.1")), "invalid port number: 70000");
        assert_eq!(invalid(json!({"port": 80}), None), "failed to find networking container: no pod IP");
        assert_eq!(
            invalid(json!({"port": 80, "scheme": "FTP"}), Some("1.1.1.1")),
            "unsupported protocol scheme \"ftp\""
        );
    }

    #[test]
    fn the_pod_ip_is_needed_only_for_an_http_hook_without_host() {
        assert!(needs_pod_ip(Some(&hook(json!({"httpGet": {"port": 80}})))));
        assert!(needs_pod_ip(Some(&hook(json!({"httpGet": {"port": 80, "host": ""}})))));
        assert!(!needs_pod_ip(Some(&hook(json!({"httpGet": {"port": 80, "host": "h"}})))));
        assert!(!needs_pod_ip(Some(&hook(json!({"exec": {"command": ["x"]}, "httpGet": {"port": 80}})))));
        assert!(!needs_pod_ip(Some(&hook(json!({"tcpSocket": {"port": 80}})))));
        assert!(!needs_pod_ip(None));
    }
}
