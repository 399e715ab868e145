//! The harness's errors: what went wrong while starting or driving the test cluster.

/// A test-cluster failure.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The control plane could not be built, started, or died.
    #[error("control plane: {0}")]
    ControlPlane(String),
    /// A Kubernetes API call failed.
    #[error("kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    /// The kubeconfig could not be read or used.
    #[error("kubeconfig: {0}")]
    Kubeconfig(String),
    /// A manifest could not be read or applied.
    #[error("manifest {path}: {detail}")]
    Manifest {
        /// The file (or a description of the input).
        path: String,
        /// What was wrong.
        detail: String,
    },
    /// Something did not happen in time.
    #[error("timed out waiting for {0}")]
    Timeout(String),
    /// Local I/O (sockets, files).
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// TLS setup of the fault proxy.
    #[error("tls: {0}")]
    Tls(String),
}

impl Error {
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io { context: context.into(), source }
    }
}
