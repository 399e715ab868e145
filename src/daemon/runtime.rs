//! The container runtime as the puller sees it: pull an image with optional credentials, and
//! ask for an image's id. [`ImageRuntime`] is bound to the CRI client of `kruise-cri` in
//! [`super::cri`]; tests bind it to in-memory fakes. [`NoRuntime`] is the node where no runtime
//! answered: every pull fails at once naming the endpoints tried (the daemon keeps running rather
//! than crash-looping, kruise #1319 #1825).

use std::future::Future;

use crate::apis::imagepulljob::SandboxConfig;
use crate::core::imagepuller::auth::Credential;
use crate::core::imagepuller::policy::PullFailure;

/// The image half of a container runtime.
pub trait ImageRuntime: Send + Sync + 'static {
    /// Pulls `image` (`name:tag`) with `auth` (anonymous when `None`); the runtime's image ref.
    fn pull(
        &self,
        image: &str,
        auth: Option<&Credential>,
        sandbox: Option<&SandboxConfig>,
    ) -> impl Future<Output = Result<String, PullFailure>> + Send;

    /// The id of `image` when the runtime has it.
    fn image_id(&self, image: &str) -> impl Future<Output = Result<Option<String>, PullFailure>> + Send;

    /// What `/readyz` says about the runtime: `Ok(name, version and endpoint)` or `Err(every
    /// endpoint tried and why it failed)`.
    fn describe(&self) -> Result<String, String>;
}

/// No runtime answered on this node.
#[derive(Clone, Debug)]
pub struct NoRuntime {
    /// Every endpoint tried, with its outcome.
    pub tried: String,
}

impl ImageRuntime for NoRuntime {
    async fn pull(
        &self,
        _image: &str,
        _auth: Option<&Credential>,
        _sandbox: Option<&SandboxConfig>,
    ) -> Result<String, PullFailure> {
        Err(PullFailure::NoRuntime { tried: self.tried.clone() })
    }

    async fn image_id(&self, _image: &str) -> Result<Option<String>, PullFailure> {
        Err(PullFailure::NoRuntime { tried: self.tried.clone() })
    }

    fn describe(&self) -> Result<String, String> {
        Err(format!("no container runtime answered; tried {}", self.tried))
    }
}
