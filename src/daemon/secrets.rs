//! The pull secrets a NodeImage names, read from the API server with a short cache (kruise
//! `cacheBasedSecretManager`, `pkg/daemon/util/secret_manager.go`: a read is kept 5 to 10
//! minutes, so a retried pull does not read again). Kruise's manager copies each ImagePullJob's
//! secrets into `kruise-daemon-config` and names the copies in the NodeImage; the daemon reads
//! only what it is pointed at (`get`, served from the API server's watch cache, as kruise's
//! `resourceVersion: "0"`). A secret that cannot be read is skipped and named, so an auth failure
//! that follows can say why.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, GetParams};

use crate::apis::nodeimage::v1beta1::ReferenceObject;

/// Cached secret reads.
pub struct SecretCache {
    client: kube::Client,
    cache: Mutex<HashMap<(String, String), (Instant, Secret)>>,
}

/// The secrets read, and the ones that could not be (`namespace/name: why`).
#[derive(Debug, Default)]
pub struct Secrets {
    /// Read.
    pub found: Vec<Secret>,
    /// Not read.
    pub problems: Vec<String>,
}

impl SecretCache {
    /// An empty cache reading through `client`.
    pub fn new(client: kube::Client) -> Self {
        SecretCache { client, cache: Mutex::new(HashMap::new()) }
    }

    /// The secrets of `refs`, in order.
    pub async fn get(&self, refs: &[ReferenceObject]) -> Secrets {
        let mut out = Secrets::default();
        for r in refs {
            let key = (r.namespace.clone(), r.name.clone());
            let cached =
                self.cache.lock().ok().and_then(|c| {
                    c.get(&key).filter(|(deadline, _)| *deadline > Instant::now()).map(|(_, s)| s.clone())
                });
            if let Some(s) = cached {
                out.found.push(s);
                continue;
            }
            let api: Api<Secret> = Api::namespaced(self.client.clone(), &r.namespace);
            match api.get_with(&r.name, &GetParams::any()).await {
                Ok(s) => {
                    // 5 to 10 minutes, spread so the secrets of many pulls do not expire together.
                    let ttl = Duration::from_secs(300 + fastrand::u64(0..=300));
                    if let Ok(mut c) = self.cache.lock() {
                        c.insert(key, (Instant::now() + ttl, s.clone()));
                    }
                    out.found.push(s);
                }
                Err(e) => {
                    tracing::warn!(secret = %format!("{}/{}", r.namespace, r.name), error = %e, "cannot read pull secret");
                    out.problems.push(format!("{}/{}: {e}", r.namespace, r.name));
                }
            }
        }
        out
    }
}
