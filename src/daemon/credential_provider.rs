//! The kubelet's credential-provider plugins, run by `kruise daemon` (kruise-daemon's
//! `--plugin-config-file` and `--plugin-bin-dir`, k8s.io/kubernetes
//! `pkg/credentialprovider/plugin`): each provider whose `matchImages` match the image runs its
//! executable with the config's args and env (added to the daemon's), a
//! `CredentialProviderRequest` on stdin, one minute at most, and its response is kept as
//! `cacheKeyType`/`cacheDuration` say. One run per provider at a time (the kubelet's single
//! flight): a pull waiting for it finds the answer in the cache. A plugin that fails is logged
//! and gives no credentials, as the kubelet's. The decisions are in
//! [`crate::core::imagepuller::credential_provider`].

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;

use crate::core::imagepuller::auth::Credential;
use crate::core::imagepuller::credential_provider::{self as core, Cache, Provider};

/// The kubelet's catch-all timeout for one run of a plugin.
const EXEC_TIMEOUT: Duration = Duration::from_secs(60);

struct Plugin {
    provider: Provider,
    bin: PathBuf,
    cache: std::sync::Mutex<Cache>,
    flight: tokio::sync::Mutex<()>,
}

/// The registered plugins.
pub struct CredentialPlugins {
    plugins: Vec<Plugin>,
}

impl std::fmt::Debug for CredentialPlugins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.plugins.iter().map(|p| &p.provider.name)).finish()
    }
}

/// Reads the config at `config` (a file, or a directory of `.json`/`.yaml`/`.yml` files read in
/// name order), validates it and finds each provider's executable in `bin_dir` (kubelet
/// `RegisterCredentialProviderPlugins`).
pub fn register(config: &Path, bin_dir: &Path) -> Result<CredentialPlugins, String> {
    if let Err(e) = std::fs::metadata(bin_dir) {
        return Err(match e.kind() {
            std::io::ErrorKind::NotFound => format!("plugin binary directory {} did not exist", bin_dir.display()),
            _ => format!("error inspecting binary directory {}: {e}", bin_dir.display()),
        });
    }
    let meta = std::fs::metadata(config).map_err(|e| format!("unable to access path {:?}: {e}", config.display()))?;
    let files: Vec<PathBuf> = if meta.is_dir() {
        let mut files: Vec<PathBuf> = std::fs::read_dir(config)
            .map_err(|e| format!("unable to read directory {:?}: {e}", config.display()))?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| {
                p.is_file()
                    && p.extension().and_then(|x| x.to_str()).is_some_and(|x| ["json", "yaml", "yml"].contains(&x))
            })
            .collect();
        files.sort();
        if files.is_empty() {
            return Err(format!("no configuration files found in directory {:?}", config.display()));
        }
        files
    } else {
        vec![config.to_path_buf()]
    };
    let mut parsed = Vec::new();
    for file in &files {
        let data = std::fs::read(file).map_err(|e| format!("unable to read file {:?}: {e}", file.display()))?;
        parsed.push(core::parse_config(&data).map_err(|e| format!("error decoding config {:?}: {e}", file.display()))?);
    }
    let providers = core::merge(parsed)?;
    let errs = core::validate(&providers);
    if !errs.is_empty() {
        return Err(format!("failed to validate credential provider config: [{}]", errs.join(", ")));
    }
    let mut plugins = Vec::new();
    for provider in providers {
        let bin = bin_dir.join(&provider.name);
        if !bin.is_file() {
            return Err(format!("plugin binary executable {} did not exist", bin.display()));
        }
        plugins.push(Plugin {
            provider,
            bin,
            cache: std::sync::Mutex::default(),
            flight: tokio::sync::Mutex::const_new(()),
        });
    }
    Ok(CredentialPlugins { plugins })
}

/// The plugins of kruise-daemon's flags: none when the config file does not exist (kruise skips
/// them then); a config that does not register is logged and leaves none, as kruise's.
pub fn from_flags(config: &Path, bin_dir: &Path) -> Option<CredentialPlugins> {
    match std::fs::metadata(config) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            tracing::info!(config = %config.display(), "no credential provider plugin config file found, skipping");
            None
        }
        Err(e) => {
            tracing::error!(config = %config.display(), error = %e, "failed to check the credential provider plugin config file");
            None
        }
        Ok(_) => match register(config, bin_dir) {
            Ok(p) => {
                tracing::info!(plugins = ?p, "credential provider plugins registered");
                Some(p)
            }
            Err(e) => {
                tracing::error!(error = %e, "failed to register credential provider plugins");
                None
            }
        },
    }
}

impl CredentialPlugins {
    /// The credentials every matching provider gives for `image` (a repository such as
    /// `registry.example.com/team/app`), provider by provider in config order.
    pub async fn lookup(&self, image: &str) -> Vec<Credential> {
        let mut found = Vec::new();
        for plugin in self.plugins.iter().filter(|p| p.provider.matches(image)) {
            match plugin.provide(image).await {
                Ok(auth) => found.extend(core::credentials(&auth, image)),
                Err(e) => {
                    tracing::error!(provider = %plugin.provider.name, image, error = %e, "failed to provide credentials for image")
                }
            }
        }
        found
    }
}

type Auth = std::collections::BTreeMap<String, Credential>;

impl Plugin {
    fn cached(&self, image: &str) -> Option<Auth> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner()).get(image, Instant::now())
    }

    async fn provide(&self, image: &str) -> Result<Auth, String> {
        if let Some(auth) = self.cached(image) {
            return Ok(auth);
        }
        let _flight = self.flight.lock().await;
        // Answered while this one waited.
        if let Some(auth) = self.cached(image) {
            return Ok(auth);
        }
        let stdout = self.exec(image).await?;
        let response = core::parse_response(&stdout, &self.provider.api_version)?;
        let default = self.provider.default_cache_duration.unwrap_or_default();
        self.cache.lock().unwrap_or_else(|e| e.into_inner()).put(image, &response, default, Instant::now());
        Ok(response.auth)
    }

    async fn exec(&self, image: &str) -> Result<Vec<u8>, String> {
        let failed = |e: &dyn std::fmt::Display| {
            format!("error execing credential provider plugin {} for image {image}: {e}", self.provider.name)
        };
        let mut child = tokio::process::Command::new(&self.bin)
            .args(&self.provider.args)
            .envs(self.provider.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| failed(&e))?;
        let request = core::request(&self.provider.api_version, image);
        if let Some(mut stdin) = child.stdin.take() {
            // A plugin that exits without reading its request is judged by its exit and output.
            let _ = stdin.write_all(&request).await;
        }
        let output = match tokio::time::timeout(EXEC_TIMEOUT, child.wait_with_output()).await {
            Err(_) => return Err(failed(&"context deadline exceeded")),
            Ok(Err(e)) => return Err(failed(&e)),
            Ok(Ok(o)) => o,
        };
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            return Err(format!("{}: {}", failed(&output.status), stderr.trim_end()));
        }
        Ok(output.stdout)
    }
}
