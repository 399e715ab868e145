//! What went wrong talking to a runtime, and what kind of failure a runtime's answer is: an auth
//! failure or a missing image must be told apart from other pull failures so `kruise daemon` can
//! report "auth failed" instead of failing silently (kruise #780). Runtimes answer a failed pull
//! with gRPC code Unknown and a message (containerd: `failed to pull and unpack image ...: 401
//! Unauthorized`), so the message decides; the code decides where a runtime sets it.

use std::time::Duration;

/// A failed CRI call. `Status` carries the runtime's own message, verbatim, for the NodeImage
/// status; the other variants are about reaching the runtime at all.
#[derive(Debug, thiserror::Error)]
pub enum CriError {
    /// The socket is missing, refuses connections, or the connection broke.
    #[error("cannot connect to CRI endpoint {endpoint}: {message}")]
    Connect { endpoint: String, message: String },
    /// The runtime answers but does not serve CRI v1 (`runtime.v1`): containerd < 1.5 or with its
    /// CRI plugin disabled, cri-dockerd too old.
    #[error("CRI endpoint {endpoint} does not serve CRI v1 (runtime.v1): {message}")]
    Unimplemented { endpoint: String, message: String },
    /// The runtime's answer to a call it serves.
    #[error("{message}")]
    Status { code: tonic::Code, message: String },
    /// No answer in time.
    #[error("no answer from the CRI runtime after {after:?}")]
    Timeout { after: Duration },
}

/// Substrings (lower case) of the messages runtimes and registries give when credentials are
/// missing or wrong: containerd's resolver ("401 Unauthorized", "failed to authorize", "403
/// Forbidden"), the distribution registry ("authentication required", "denied: requested access
/// to the resource is denied"), docker/cri-dockerd ("pull access denied", "no basic auth
/// credentials", "unauthorized: "), CRI-O via containers/image ("authentication required",
/// "invalid username/password").
const AUTH_MARKERS: &[&str] = &[
    "401 unauthorized",
    "403 forbidden",
    "unauthorized:",
    "failed to authorize",
    "authorization failed",
    "authentication required",
    "pull access denied",
    "no basic auth credentials",
    "requested access to the resource is denied",
    "invalid username/password",
    "incorrect username or password",
    "insufficient_scope",
];

/// Substrings (lower case) of "the image or tag does not exist": containerd ends its resolver
/// error with `<ref>: not found`; the registry API answers `manifest unknown`; docker says
/// `manifest for <ref> not found` or `repository ... not found`; CRI-O `reading manifest ... in
/// ...: manifest unknown`.
const NOT_FOUND_MARKERS: &[&str] = &[
    ": not found",
    "manifest unknown",
    "not found: manifest",
    "manifest for",
    "name unknown",
    "repository does not exist",
    "no such image",
];

impl CriError {
    /// Classifies a gRPC status from `endpoint`: Unimplemented means the runtime lacks CRI v1 (or
    /// this method of it); Unavailable means the connection, not the runtime, failed.
    pub fn from_status(endpoint: &str, status: tonic::Status) -> CriError {
        match status.code() {
            tonic::Code::Unimplemented => {
                CriError::Unimplemented { endpoint: endpoint.to_string(), message: status.message().to_string() }
            }
            tonic::Code::Unavailable => {
                CriError::Connect { endpoint: endpoint.to_string(), message: status.message().to_string() }
            }
            code => CriError::Status { code, message: status.message().to_string() },
        }
    }

    /// The registry refused our credentials (or their absence).
    pub fn is_auth_failure(&self) -> bool {
        match self {
            CriError::Status { code, message } => {
                matches!(code, tonic::Code::Unauthenticated | tonic::Code::PermissionDenied)
                    || contains_any(message, AUTH_MARKERS)
            }
            _ => false,
        }
    }

    /// The image or tag does not exist. A "pull access denied ... repository does not exist or
    /// may require authorization" message is both: docker cannot tell them apart.
    pub fn is_not_found(&self) -> bool {
        match self {
            CriError::Status { code, message } => {
                *code == tonic::Code::NotFound || contains_any(message, NOT_FOUND_MARKERS)
            }
            _ => false,
        }
    }
}

fn contains_any(message: &str, markers: &[&str]) -> bool {
    let lower = message.to_ascii_lowercase();
    markers.iter().any(|m| lower.contains(m))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::Code;

    fn status(code: Code, message: &str) -> CriError {
        CriError::from_status("unix:///run/x.sock", tonic::Status::new(code, message))
    }

    #[test]
    fn status_codes_map_to_variants() {
        assert!(matches!(
            status(Code::Unimplemented, "unknown service runtime.v1.RuntimeService"),
            CriError::Unimplemented { endpoint, message }
                if endpoint == "unix:///run/x.sock" && message == "unknown service runtime.v1.RuntimeService"
        ));
        assert!(matches!(status(Code::Unavailable, "connection refused"), CriError::Connect { .. }));
        assert!(matches!(
            status(Code::Unknown, "boom"),
            CriError::Status { code: Code::Unknown, message } if message == "boom"
        ));
    }

    #[test]
    fn display_keeps_the_runtime_message_verbatim() {
        let m = r#"failed to pull and unpack image "127.0.0.1:5000/a:b": failed to resolve reference "127.0.0.1:5000/a:b": 127.0.0.1:5000/a:b: not found"#;
        assert_eq!(status(Code::Unknown, m).to_string(), m);
    }

    /// (code, message, auth failure, not found)
    const TABLE: &[(Code, &str, bool, bool)] = &[
        // containerd 1.6/1.7, basic-auth registry, wrong password.
        (
            Code::Unknown,
            r#"failed to pull and unpack image "127.0.0.1:5000/busy:1": failed to resolve reference "127.0.0.1:5000/busy:1": pulling from host 127.0.0.1:5000 failed with status code [manifests 1]: 401 Unauthorized"#,
            true,
            false,
        ),
        // containerd, token registry.
        (
            Code::Unknown,
            r#"failed to pull and unpack image "ghcr.io/x/y:1": failed to resolve reference "ghcr.io/x/y:1": failed to authorize: failed to fetch oauth token: unexpected status: 401 Unauthorized"#,
            true,
            false,
        ),
        (
            Code::Unknown,
            r#"failed to pull and unpack image "r.example/p:1": failed to resolve reference "r.example/p:1": unexpected status from HEAD request to https://r.example/v2/p/manifests/1: 403 Forbidden"#,
            true,
            false,
        ),
        // containerd, missing tag.
        (
            Code::Unknown,
            r#"failed to pull and unpack image "127.0.0.1:5000/busy:nope": failed to resolve reference "127.0.0.1:5000/busy:nope": 127.0.0.1:5000/busy:nope: not found"#,
            false,
            true,
        ),
        // docker / cri-dockerd: ambiguous, both.
        (
            Code::Unknown,
            "Error response from daemon: pull access denied for foo, repository does not exist or may require 'docker login': denied: requested access to the resource is denied",
            true,
            true,
        ),
        (
            Code::Unknown,
            "Error response from daemon: manifest for nginx:nope not found: manifest unknown: manifest unknown",
            false,
            true,
        ),
        (
            Code::Unknown,
            "Error response from daemon: Get \"https://r.example/v2/\": no basic auth credentials",
            true,
            false,
        ),
        // CRI-O.
        (
            Code::Unknown,
            "initializing source docker://r.example/p:1: reading manifest 1 in r.example/p: authentication required",
            true,
            false,
        ),
        (
            Code::Unknown,
            "initializing source docker://quay.io/p:nope: reading manifest nope in quay.io/p: manifest unknown",
            false,
            true,
        ),
        // Codes alone.
        (Code::Unauthenticated, "bad token", true, false),
        (Code::PermissionDenied, "nope", true, false),
        (Code::NotFound, "image gone", false, true),
        // Neither.
        (
            Code::Unknown,
            r#"failed to pull and unpack image "a/b:1": failed to copy: httpReadSeeker: failed open: failed to do request: dial tcp 10.0.0.1:443: i/o timeout"#,
            false,
            false,
        ),
        (Code::Unknown, "failed to extract layer: no space left on device", false, false),
        (Code::DeadlineExceeded, "context deadline exceeded", false, false),
    ];

    #[test]
    fn classification_table() {
        for (code, message, auth, not_found) in TABLE {
            let e = status(*code, message);
            assert_eq!(e.is_auth_failure(), *auth, "auth? {code:?} {message}");
            assert_eq!(e.is_not_found(), *not_found, "not found? {code:?} {message}");
        }
    }

    #[test]
    fn transport_errors_are_neither() {
        let errors = [
            CriError::Connect { endpoint: "e".into(), message: "401 Unauthorized".into() },
            CriError::Unimplemented { endpoint: "e".into(), message: "not found".into() },
            CriError::Timeout { after: Duration::from_secs(1) },
        ];
        for e in errors {
            assert!(!e.is_auth_failure(), "{e}");
            assert!(!e.is_not_found(), "{e}");
        }
    }
}
