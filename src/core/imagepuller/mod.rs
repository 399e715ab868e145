//! `kruise daemon`'s image puller, as pure decisions (kruise `pkg/daemon/imagepuller` and the
//! credential lookup of `pkg/util/secret`; issue 29 item 4). The adapters that watch the
//! NodeImage, run the pulls through the CRI and write the status are in [`crate::daemon`].
//!
//! - [`pools`]: which workers run for which tags given the NodeImage's spec and status, and the
//!   status (per tag, with the counts) the daemon reports.
//! - [`policy`]: one tag's attempts: timeout, retries with backoff, active deadline, and the
//!   message of a failure.
//! - [`auth`]: which credentials of the image's pull secrets a pull tries (the kubelet keyring).
//! - [`credential_provider`]: the kubelet's credential-provider plugins' config, request,
//!   response and cache (the credentials a pull tries after its secrets').
//! - [`write`]: when the status is written (changes only, coalesced).

pub mod auth;
pub mod credential_provider;
pub mod policy;
pub mod pools;
pub mod write;

/// The registry host of `image` (`nginx` -> `docker.io`), for messages and credential lookup;
/// kruise's `ParseRegistry` cut at the first `/`, which takes `library` for `library/nginx`.
pub fn registry_of(image: &str) -> String {
    match crate::compat::image::parse_image(image) {
        Ok(r) => r.domain,
        Err(_) => image.split_once('/').map(|(d, _)| d).unwrap_or("docker.io").to_string(),
    }
}

/// The repository the keyring is asked about (kubelet: `parsers.ParseImageName(image:tag)`'s
/// repository, e.g. `docker.io/library/nginx`); `None` when the reference does not parse.
pub fn repository_of(image: &str, tag: &str) -> Option<String> {
    crate::compat::image::parse_image(&format!("{image}:{tag}")).ok().map(|r| r.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// kruise `TestParseRegistry` (pkg/daemon/util/util_test.go), except `library/ubuntu`-like
    /// names whose first part has no dot, which are Docker Hub's.
    #[test]
    fn registries() {
        for (image, want) in [
            ("docker.io/library/ubuntu", "docker.io"),
            ("gcr.io/project/image", "gcr.io"),
            ("myregistry.com:5000/user/image", "myregistry.com:5000"),
            ("ubuntu", "docker.io"),
            ("library/ubuntu", "docker.io"),
            ("localhost:5000/app", "localhost:5000"),
        ] {
            assert_eq!(registry_of(image), want, "{image}");
        }
        assert_eq!(repository_of("nginx", "v1").as_deref(), Some("docker.io/library/nginx"));
        assert_eq!(
            repository_of("registry.private.com/app/echoserver", "v1").as_deref(),
            Some("registry.private.com/app/echoserver")
        );
        assert_eq!(repository_of("INVALID_IMAGE", "latest"), None);
    }
}
