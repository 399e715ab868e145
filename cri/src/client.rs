//! [`CriClient`]: one gRPC channel to a runtime's CRI socket, with the image and runtime service
//! clients on it. The channel is a tonic `Endpoint` whose connector dials the unix socket (tonic
//! speaks HTTP/2 over any stream; the URI is a placeholder). Short calls (Version, ImageStatus,
//! ListImages) are bounded by the connect timeout; PullImage is not, because a pull takes as long
//! as the image is big: its caller (the daemon's per-image timeout) bounds it.

use std::path::PathBuf;
use std::time::Duration;

use hyper_util::rt::TokioIo;
use tokio::net::UnixStream;
use tonic::transport::{Channel, Endpoint, Uri};

use crate::error::CriError;
use crate::v1;
use crate::v1::image_service_client::ImageServiceClient;
use crate::v1::runtime_service_client::RuntimeServiceClient;

/// The label the kubelet puts on every container with its pod's uid.
pub const POD_UID_LABEL: &str = "io.kubernetes.pod.uid";
/// The label the kubelet puts on every container with its name in the pod.
pub const CONTAINER_NAME_LABEL: &str = "io.kubernetes.container.name";
/// The annotation the kubelet puts on every container with the pod's restart count of it.
pub const RESTART_COUNT_ANNOTATION: &str = "io.kubernetes.container.restartCount";

/// kubelet's limit for CRI answers (a ListImages on a node with many images exceeds tonic's
/// default 4 MiB).
const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// What the runtime says it is (CRI `Version`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeVersion {
    pub runtime_name: String,
    pub runtime_version: String,
    pub runtime_api_version: String,
}

/// A connected CRI v1 client (image + runtime service) over a unix socket. Cheap to clone: the
/// clones share one HTTP/2 connection.
#[derive(Clone)]
pub struct CriClient {
    endpoint: String,
    timeout: Duration,
    runtime: RuntimeServiceClient<Channel>,
    images: ImageServiceClient<Channel>,
}

impl std::fmt::Debug for CriClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CriClient").field("endpoint", &self.endpoint).finish_non_exhaustive()
    }
}

/// The socket path of a CRI endpoint: `unix:///run/containerd/containerd.sock`, `unix:/path` or a
/// bare path (kubelet accepts all three). Other schemes (npipe, tcp) are not for Linux nodes.
pub fn socket_path(endpoint: &str) -> Result<PathBuf, String> {
    let path = if let Some(rest) = endpoint.strip_prefix("unix://") {
        rest
    } else if let Some(rest) = endpoint.strip_prefix("unix:") {
        rest
    } else if endpoint.contains("://") {
        return Err(format!("unsupported CRI endpoint {endpoint:?}: only unix sockets are supported"));
    } else {
        endpoint
    };
    if path.is_empty() {
        return Err(format!("empty socket path in CRI endpoint {endpoint:?}"));
    }
    Ok(PathBuf::from(path))
}

/// The message of an error and its causes: tonic's transport error says only "transport error",
/// the io error under it says what happened.
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut message = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = s.source();
    }
    message
}

impl CriClient {
    /// Connects to `endpoint` ("unix:///run/containerd/containerd.sock" or a bare path) within
    /// `timeout`. Connecting says nothing about CRI v1 support: call [`CriClient::version`].
    pub async fn connect(endpoint: &str, timeout: Duration) -> Result<CriClient, CriError> {
        let path =
            socket_path(endpoint).map_err(|message| CriError::Connect { endpoint: endpoint.to_string(), message })?;
        let connector = tower::service_fn(move |_: Uri| {
            let path = path.clone();
            async move {
                let stream = UnixStream::connect(&path).await?;
                Ok::<_, std::io::Error>(TokioIo::new(stream))
            }
        });
        let endpoint_config = Endpoint::from_static("http://cri.invalid").connect_timeout(timeout);
        let channel = endpoint_config.connect_with_connector(connector);
        let channel = match tokio::time::timeout(timeout, channel).await {
            Err(_) => return Err(CriError::Timeout { after: timeout }),
            Ok(Err(e)) => {
                return Err(CriError::Connect { endpoint: endpoint.to_string(), message: error_chain(&e) });
            }
            Ok(Ok(channel)) => channel,
        };
        Ok(CriClient {
            endpoint: endpoint.to_string(),
            timeout,
            runtime: RuntimeServiceClient::new(channel.clone()).max_decoding_message_size(MAX_MESSAGE_BYTES),
            images: ImageServiceClient::new(channel).max_decoding_message_size(MAX_MESSAGE_BYTES),
        })
    }

    /// The endpoint as given to [`CriClient::connect`].
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// CRI `Version`: which runtime this is, and whether it serves CRI v1 at all (an old runtime
    /// answers [`CriError::Unimplemented`]).
    pub async fn version(&self) -> Result<RuntimeVersion, CriError> {
        let mut runtime = self.runtime.clone();
        // kubelet sends its own CRI API version; runtimes ignore it.
        let request = v1::VersionRequest { version: "v1".to_string() };
        let response = self.bounded(runtime.version(request)).await?;
        Ok(RuntimeVersion {
            runtime_name: response.runtime_name,
            runtime_version: response.runtime_version,
            runtime_api_version: response.runtime_api_version,
        })
    }

    /// CRI `PullImage`. Returns the image ref the runtime answers (the image id, e.g.
    /// containerd's `sha256:...`). Not bounded here: see the module comment.
    pub async fn pull_image(
        &self,
        image: &str,
        auth: Option<v1::AuthConfig>,
        sandbox: Option<v1::PodSandboxConfig>,
    ) -> Result<String, CriError> {
        let mut images = self.images.clone();
        let request = v1::PullImageRequest { image: Some(image_spec(image)), auth, sandbox_config: sandbox };
        let response = images.pull_image(request).await.map_err(|s| CriError::from_status(&self.endpoint, s))?;
        Ok(response.into_inner().image_ref)
    }

    /// CRI `ImageStatus`: `None` when the runtime does not have the image.
    pub async fn image_status(&self, image: &str) -> Result<Option<v1::Image>, CriError> {
        let mut images = self.images.clone();
        let request = v1::ImageStatusRequest { image: Some(image_spec(image)), verbose: false };
        Ok(self.bounded(images.image_status(request)).await?.image)
    }

    /// CRI `ListImages`, unfiltered.
    pub async fn list_images(&self) -> Result<Vec<v1::Image>, CriError> {
        let mut images = self.images.clone();
        let request = v1::ListImagesRequest { filter: None };
        Ok(self.bounded(images.list_images(request)).await?.images)
    }

    /// CRI `ListContainers` of the pod whose uid is `pod_uid` (label `io.kubernetes.pod.uid`, as
    /// the kubelet labels every container it creates).
    pub async fn list_pod_containers(&self, pod_uid: &str) -> Result<Vec<v1::Container>, CriError> {
        let mut runtime = self.runtime.clone();
        let filter = v1::ContainerFilter {
            label_selector: [(POD_UID_LABEL.to_string(), pod_uid.to_string())].into_iter().collect(),
            ..Default::default()
        };
        let request = v1::ListContainersRequest { filter: Some(filter) };
        Ok(self.bounded(runtime.list_containers(request)).await?.containers)
    }

    /// CRI `StopContainer` with the grace period `timeout_seconds` (the runtime kills the
    /// container when it has not stopped by then); bounded by that grace period plus the call
    /// timeout.
    pub async fn stop_container(&self, container_id: &str, timeout_seconds: i64) -> Result<(), CriError> {
        let mut runtime = self.runtime.clone();
        let request = v1::StopContainerRequest { container_id: container_id.to_string(), timeout: timeout_seconds };
        let grace = Duration::from_secs(u64::try_from(timeout_seconds).unwrap_or(0));
        match tokio::time::timeout(self.timeout + grace, runtime.stop_container(request)).await {
            Err(_) => Err(CriError::Timeout { after: self.timeout + grace }),
            Ok(Err(status)) => Err(CriError::from_status(&self.endpoint, status)),
            Ok(Ok(_)) => Ok(()),
        }
    }

    /// CRI `ExecSync` of `cmd` in the container, bounded by `timeout_seconds` (0: the call
    /// timeout); the exit code and output.
    pub async fn exec_sync(
        &self,
        container_id: &str,
        cmd: Vec<String>,
        timeout_seconds: i64,
    ) -> Result<v1::ExecSyncResponse, CriError> {
        let mut runtime = self.runtime.clone();
        let request = v1::ExecSyncRequest { container_id: container_id.to_string(), cmd, timeout: timeout_seconds };
        let bound = self.timeout + Duration::from_secs(u64::try_from(timeout_seconds).unwrap_or(0));
        match tokio::time::timeout(bound, runtime.exec_sync(request)).await {
            Err(_) => Err(CriError::Timeout { after: bound }),
            Ok(Err(status)) => Err(CriError::from_status(&self.endpoint, status)),
            Ok(Ok(r)) => Ok(r.into_inner()),
        }
    }

    async fn bounded<T>(
        &self,
        call: impl Future<Output = Result<tonic::Response<T>, tonic::Status>>,
    ) -> Result<T, CriError> {
        match tokio::time::timeout(self.timeout, call).await {
            Err(_) => Err(CriError::Timeout { after: self.timeout }),
            Ok(Err(status)) => Err(CriError::from_status(&self.endpoint, status)),
            Ok(Ok(response)) => Ok(response.into_inner()),
        }
    }
}

fn image_spec(image: &str) -> v1::ImageSpec {
    v1::ImageSpec { image: image.to_string(), ..Default::default() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_paths() {
        let ok = [
            ("unix:///run/containerd/containerd.sock", "/run/containerd/containerd.sock"),
            ("unix:/run/crio/crio.sock", "/run/crio/crio.sock"),
            ("/var/run/cri-dockerd.sock", "/var/run/cri-dockerd.sock"),
            ("rel/x.sock", "rel/x.sock"),
        ];
        for (endpoint, path) in ok {
            assert_eq!(socket_path(endpoint), Ok(PathBuf::from(path)), "{endpoint}");
        }
        for bad in ["npipe:////./pipe/containerd", "tcp://1.2.3.4:5", "unix://", ""] {
            assert!(socket_path(bad).is_err(), "{bad}");
        }
    }

    #[tokio::test]
    async fn connect_to_a_missing_socket_is_a_connect_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("none.sock");
        let endpoint = format!("unix://{}", path.display());
        let err = CriClient::connect(&endpoint, Duration::from_secs(2)).await.unwrap_err();
        match err {
            CriError::Connect { endpoint: e, message } => {
                assert_eq!(e, endpoint);
                assert!(message.contains("No such file"), "{message}");
            }
            other => panic!("expected Connect, got {other:?}"),
        }
    }
}
