//! PodProbeMarker validation, kruise's `pkg/webhook/podprobemarker/validating`
//! (`validatingPodProbeMarkerFn`, issue 30 item 4): a non-empty selector, at least one probe,
//! probe names unique, without '#' and not a native pod condition, a container name, exactly one
//! exec/httpGet/tcpSocket handler (no `host`), non-negative timings, a pod condition type or a
//! marker policy (condition types unique and valid label names), marker policies for
//! `Succeeded`/`Failed` only, each once, with valid labels or annotations; on UPDATE the selector
//! is immutable. Kruise stops at the first bad probe (it returns early), and so do we; its field
//! paths (`spec.probes`, `spec.probe.exec`, `spec.markerPolicy`) are kept as kruise writes them,
//! without the probe's index.

use k8s_openapi::api::core::v1::{ExecAction, HTTPGetAction, Probe, TCPSocketAction};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::collections::BTreeSet;

use super::json;
use super::meta::validate_object_meta_with;
use crate::apis::podprobemarker::{PodProbeMarker, ProbeMarkerPolicy};
use crate::compat::field::{FieldError, child};
use crate::compat::intstr::validate_nonnegative;
use crate::compat::names::{max_len_error, regex_error, validate_label_name};
use crate::compat::podspec::{PORT_RANGE, port_name_problems};
use crate::compat::selector::{to_selector_string, validate_label_selector};

/// Probe state `Succeeded` (kruise `ProbeSucceeded`).
pub const PROBE_SUCCEEDED: &str = "Succeeded";
/// Probe state `Failed` (kruise `ProbeFailed`).
pub const PROBE_FAILED: &str = "Failed";
/// Probe state `Unknown` (kruise `ProbeUnknown`).
pub const PROBE_UNKNOWN: &str = "Unknown";

/// Pod condition types a probe may not be named after (kruise `k8sNativePodConditions`).
const NATIVE_POD_CONDITIONS: [&str; 6] =
    ["PodScheduled", "Initialized", "Ready", "ContainersReady", "KruisePodReady", "InPlaceUpdateReady"];

const NAME_MAX_LEN: usize = 63;
const NAME_MSG: &str = "podProbeMarker name must consist of alphanumeric characters or '-'";
const NAME_FMT: &str = r"^[a-zA-Z0-9\-]+$";

/// kruise `validatePodProbeMarkerName` (applied to the fake name of a marker policy's metadata).
fn validate_name(name: &str, _prefix: bool) -> Vec<String> {
    let mut errs = Vec::new();
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        errs.push(regex_error(NAME_MSG, NAME_FMT, &["example-com"]));
    }
    if name.len() > NAME_MAX_LEN {
        errs.push(max_len_error(NAME_MAX_LEN));
    }
    errs
}

/// `validatingPodProbeMarkerFn(obj, old)`: the spec, and on UPDATE the selector unchanged.
pub fn validate(ppm: &PodProbeMarker, old: Option<&PodProbeMarker>) -> Vec<FieldError> {
    let mut errs = validate_spec(ppm, "spec");
    if let Some(old) = old
        && old.spec.selector != ppm.spec.selector
    {
        errs.push(FieldError::invalid("selector", json(&ppm.spec.selector), "selector must be immutable"));
    }
    errs
}

/// `validatePodProbeMarkerSpec`.
fn validate_spec(ppm: &PodProbeMarker, path: &str) -> Vec<FieldError> {
    let spec = &ppm.spec;
    let mut errs = Vec::new();
    let selector_path = child(path, "selector");
    match &spec.selector {
        None => errs.push(FieldError::invalid(
            &selector_path,
            serde_json::Value::Null,
            "empty Selector is not valid for PodProbeMarker.",
        )),
        Some(sel) => errs.extend(validate_selector(sel, &selector_path)),
    }
    let probes_path = child(path, "probes");
    if spec.probes.is_empty() {
        errs.push(FieldError::invalid(
            &probes_path,
            json(&spec.probes),
            "empty probes is not valid for PodProbeMarker.",
        ));
        return errs;
    }
    let mut unique_probe = BTreeSet::new();
    let mut unique_condition = BTreeSet::new();
    for probe in &spec.probes {
        let name = probe.name.as_str();
        if name.contains('#') {
            errs.push(FieldError::invalid(&probes_path, name, "probe name can't contains '#'."));
            return errs;
        }
        if name.is_empty() {
            errs.push(FieldError::invalid(&probes_path, name, "probe name can't be empty in PodProbeMarker."));
            return errs;
        }
        if probe.container_name.is_empty() {
            errs.push(FieldError::invalid(
                &probes_path,
                probe.container_name.as_str(),
                "probe containerName can't be empty in PodProbeMarker.",
            ));
            return errs;
        }
        if NATIVE_POD_CONDITIONS.contains(&name) {
            errs.push(FieldError::invalid(&probes_path, name, format!("probe name can't be {name}")));
            return errs;
        }
        if !unique_probe.insert(name) {
            errs.push(FieldError::invalid(&probes_path, name, "probe name must be unique in PodProbeMarker."));
            return errs;
        }
        errs.extend(validate_probe(&probe.probe, &child(path, "probe")));
        let condition = probe.pod_condition_type.as_str();
        if condition.is_empty() && probe.marker_policy.is_empty() {
            errs.push(FieldError::invalid(
                &probes_path,
                json(probe),
                "podConditionType and markerPolicy cannot be empty at the same time",
            ));
            return errs;
        }
        if !condition.is_empty() {
            if !unique_condition.insert(condition) {
                errs.push(FieldError::invalid(
                    &probes_path,
                    condition,
                    format!("podConditionType {condition} must be unique in podProbeMarker"),
                ));
                return errs;
            }
            errs.extend(validate_label_name(condition, path));
        }
        let policy_path = child(path, "markerPolicy");
        let mut unique_policy = BTreeSet::new();
        for policy in &probe.marker_policy {
            if !unique_policy.insert(policy.state.as_str()) {
                errs.push(FieldError::invalid(
                    &policy_path,
                    policy.state.as_str(),
                    "marker policy state must be unique.",
                ));
                return errs;
            }
            errs.extend(validate_marker_policy(policy, &policy_path));
        }
    }
    errs
}

/// `validateSelector`: a valid, non-empty selector that converts to a labels selector.
fn validate_selector(sel: &LabelSelector, path: &str) -> Vec<FieldError> {
    let mut errs = validate_label_selector(sel, path);
    let count =
        sel.match_labels.as_ref().map_or(0, |m| m.len()) + sel.match_expressions.as_ref().map_or(0, |m| m.len());
    if count == 0 {
        errs.push(FieldError::invalid(path, json(sel), "empty selector is not valid for podProbeMarker."));
    }
    if to_selector_string(sel).is_err() {
        errs.push(FieldError::invalid(&child(path, "selector"), json(sel), ""));
    }
    errs
}

/// `validateProbe`: the handler and the non-negative timings.
pub fn validate_probe(probe: &Probe, path: &str) -> Vec<FieldError> {
    let mut errs = validate_handler(probe, path);
    let timings = [
        ("initialDelaySeconds", probe.initial_delay_seconds),
        ("timeoutSeconds", probe.timeout_seconds),
        ("periodSeconds", probe.period_seconds),
        ("successThreshold", probe.success_threshold),
        ("failureThreshold", probe.failure_threshold),
    ];
    for (name, value) in timings {
        errs.extend(validate_nonnegative(i64::from(value.unwrap_or(0)), &child(path, name)));
    }
    errs
}

/// `validateHandler`: exactly one of exec, httpGet, tcpSocket (gRPC is not a handler kruise
/// runs).
pub fn validate_handler(probe: &Probe, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut handlers = 0;
    if let Some(exec) = &probe.exec {
        handlers += 1;
        errs.extend(validate_exec(exec, &child(path, "exec")));
    }
    if let Some(http) = &probe.http_get {
        if handlers > 0 {
            errs.push(FieldError::forbidden(&child(path, "httpGet"), "may not specify more than 1 handler type"));
        } else {
            handlers += 1;
            errs.extend(validate_http_get(http, &child(path, "httpGet")));
        }
    }
    if let Some(tcp) = &probe.tcp_socket {
        if handlers > 0 {
            errs.push(FieldError::forbidden(&child(path, "tcpSocket"), "may not specify more than 1 handler type"));
        } else {
            handlers += 1;
            errs.extend(validate_tcp_socket(tcp, &child(path, "tcpSocket")));
        }
    }
    if handlers == 0 {
        errs.push(FieldError::required(path, "must specify a handler type"));
    }
    errs
}

fn validate_exec(exec: &ExecAction, path: &str) -> Vec<FieldError> {
    if exec.command.as_ref().is_none_or(Vec::is_empty) {
        return vec![FieldError::required(&child(path, "command"), "")];
    }
    Vec::new()
}

/// `validateTCPSocketAction`: no host, a valid port number or name.
pub fn validate_tcp_socket(tcp: &TCPSocketAction, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(host) = tcp.host.as_deref().filter(|h| !h.is_empty()) {
        errs.push(FieldError::invalid(&child(path, "host"), host, "host field in probes is not allowed"));
    }
    errs.extend(validate_port_num_or_name(&tcp.port, &child(path, "port")));
    errs
}

/// `validateHTTPGetAction`: a path that parses as a URL, no host, a valid port, scheme HTTP or
/// HTTPS (there is no defaulting: an empty scheme is refused, as in kruise), header names.
pub fn validate_http_get(http: &HTTPGetAction, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let url_path = http.path.as_deref().unwrap_or("");
    if url_path.is_empty() {
        errs.push(FieldError::required(&child(path, "path"), ""));
    }
    if let Some(host) = http.host.as_deref().filter(|h| !h.is_empty()) {
        errs.push(FieldError::invalid(&child(path, "host"), host, "host field in probes is not allowed"));
    }
    if !go_url_parses(url_path) {
        errs.push(FieldError::invalid(&child(path, "path"), url_path, "must be a valid URL path"));
    }
    errs.extend(validate_port_num_or_name(&http.port, &child(path, "port")));
    let scheme = http.scheme.as_deref().unwrap_or("");
    if !matches!(scheme, "HTTP" | "HTTPS") {
        errs.push(FieldError::not_supported(&child(path, "scheme"), scheme, &["HTTP", "HTTPS"]));
    }
    for header in http.http_headers.iter().flatten() {
        let name = header.name.as_str();
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
            errs.push(FieldError::invalid(
                &child(path, "httpHeaders"),
                name,
                regex_error(
                    "a valid HTTP header must consist of alphanumeric characters or '-'",
                    "[-A-Za-z0-9]+",
                    &["X-Header-Name"],
                ),
            ));
        }
    }
    errs
}

/// `ValidatePortNumOrName`.
pub fn validate_port_num_or_name(port: &IntOrString, path: &str) -> Vec<FieldError> {
    match port {
        IntOrString::Int(n) => {
            if (1..=65535).contains(n) {
                Vec::new()
            } else {
                vec![FieldError::invalid(path, *n, PORT_RANGE)]
            }
        }
        IntOrString::String(s) => {
            port_name_problems(s).into_iter().map(|m| FieldError::invalid(path, s.as_str(), m)).collect()
        }
    }
}

/// `validateProbeMarkerPolicy`: state Succeeded or Failed, labels or annotations, both valid.
fn validate_marker_policy(policy: &ProbeMarkerPolicy, path: &str) -> Vec<FieldError> {
    if policy.state != PROBE_SUCCEEDED && policy.state != PROBE_FAILED {
        return vec![FieldError::required(&child(path, "state"), "marker policy state must be 'True' or 'False'")];
    }
    if policy.labels.is_empty() && policy.annotations.is_empty() {
        return vec![FieldError::required(path, "marker policy annotations or labels can't be both empty")];
    }
    let meta = ObjectMeta {
        name: Some("fake-name".into()),
        labels: Some(policy.labels.clone()),
        annotations: Some(policy.annotations.clone()),
        ..ObjectMeta::default()
    };
    validate_object_meta_with(&meta, false, validate_name, path)
}

/// Whether Go's `url.Parse` accepts `raw` (the checks a probe path can fail: control
/// characters, a leading ':', a colon in the first segment of a scheme-less relative path, and
/// bad percent-escapes in the path or fragment).
fn go_url_parses(raw: &str) -> bool {
    let (rest, fragment) = raw.split_once('#').map_or((raw, None), |(r, f)| (r, Some(f)));
    if rest.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return false;
    }
    if let Some(f) = fragment
        && !escapes_ok(f)
    {
        return false;
    }
    if rest == "*" {
        return true;
    }
    // getScheme
    let mut has_scheme = false;
    for (i, b) in rest.bytes().enumerate() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' if i == 0 => break,
            b'0'..=b'9' | b'+' | b'-' | b'.' => {}
            b':' => {
                if i == 0 {
                    return false;
                }
                has_scheme = true;
                break;
            }
            _ => break,
        }
    }
    let rest = if has_scheme { rest.split_once(':').map_or("", |(_, r)| r) } else { rest };
    let rest = rest.split_once('?').map_or(rest, |(p, _)| p);
    if !rest.starts_with('/') {
        if has_scheme {
            return true;
        }
        let first = rest.split('/').next().unwrap_or("");
        if first.contains(':') {
            return false;
        }
    }
    escapes_ok(rest)
}

/// Every '%' is followed by two hex digits.
fn escapes_ok(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            if i + 2 >= b.len() || !(b[i + 1].is_ascii_hexdigit() && b[i + 2].is_ascii_hexdigit()) {
                return false;
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    true
}

#[cfg(test)]
#[path = "podprobemarker_tests.rs"]
mod tests;
