//! The client of `kubectl kruise`, configured as kubectl configures itself: `--kubeconfig`, else
//! `$KUBECONFIG` (a list of files, merged) or `~/.kube/config`, else the in-cluster service
//! account; `--context`/`--cluster`/`--user` pick from the kubeconfig; the namespace is `-n`, else
//! the context's, else `default`. No client-side rate limit: one command sends a handful of
//! requests.

use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

use super::Failure;
use super::cli::KubeFlags;

fn options(flags: &KubeFlags) -> KubeConfigOptions {
    KubeConfigOptions { context: flags.context.clone(), cluster: flags.cluster.clone(), user: flags.user.clone() }
}

/// The configuration the flags name.
pub async fn config(flags: &KubeFlags) -> Result<Config, Failure> {
    let options = options(flags);
    let picked = flags.context.is_some() || flags.cluster.is_some() || flags.user.is_some();
    match &flags.kubeconfig {
        Some(path) => {
            let kubeconfig = Kubeconfig::read_from(path)
                .map_err(|e| Failure::Other(format!("cannot read kubeconfig {}: {e}", path.display())))?;
            Config::from_custom_kubeconfig(kubeconfig, &options)
                .await
                .map_err(|e| Failure::Other(format!("kubeconfig {}: {e}", path.display())))
        }
        None => match Config::from_kubeconfig(&options).await {
            Ok(c) => Ok(c),
            // No kubeconfig at all: in a pod, the service account (as kubectl's in-cluster fallback).
            Err(e) if !picked => Config::incluster().map_err(|_| Failure::Other(format!("no configuration: {e}"))),
            Err(e) => Err(Failure::Other(e.to_string())),
        },
    }
}

/// A client and the namespace to act in.
pub async fn connect(flags: &KubeFlags) -> Result<(Client, String), Failure> {
    let config = config(flags).await?;
    let namespace = flags.namespace.clone().unwrap_or_else(|| config.default_namespace.clone());
    let client = Client::try_from(config).map_err(|e| Failure::Other(format!("cannot build a client: {e}")))?;
    Ok((client, namespace))
}
