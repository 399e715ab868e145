//! The leader's pod-readiness task (kruise's `podreadiness` controller): pods are watched
//! cluster-wide and each one [`crate::core::podreadiness::needs_condition`] picks gets
//! `KruisePodReady=True` through `pods/status`, so pods of kruise workloads — which the pod
//! webhook gives that readiness gate — can turn Ready.

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher;
use tokio_util::sync::CancellationToken;

use crate::core::podreadiness::{condition_patch, needs_condition};

/// Watches pods until `token` is cancelled, adding the missing `KruisePodReady` conditions.
pub async fn run(client: kube::Client, token: CancellationToken) {
    let pods: Api<Pod> = Api::all(client.clone());
    let stream = watcher::watcher(pods, watcher::Config::default())
        .default_backoff()
        .take_until(token.clone().cancelled_owned());
    tokio::pin!(stream);
    while let Some(event) = stream.next().await {
        let pod = match event {
            Err(e) => {
                tracing::debug!(error = %e, "pod watch failed; retrying");
                continue;
            }
            Ok(watcher::Event::Apply(pod) | watcher::Event::InitApply(pod)) => pod,
            Ok(_) => continue,
        };
        if !needs_condition(&pod) {
            continue;
        }
        let (namespace, name) =
            (pod.metadata.namespace.clone().unwrap_or_default(), pod.metadata.name.clone().unwrap_or_default());
        let api: Api<Pod> = Api::namespaced(client.clone(), &namespace);
        let now = k8s_openapi::jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
        let patch = condition_patch(&now);
        match api.patch_status(&name, &PatchParams::default(), &Patch::Strategic(&patch)).await {
            Ok(_) => tracing::debug!(pod = %format!("{namespace}/{name}"), "KruisePodReady set"),
            // A pod gone meanwhile needs nothing; other failures come back with the next event.
            Err(e) => tracing::debug!(pod = %format!("{namespace}/{name}"), error = %e, "cannot set KruisePodReady"),
        }
    }
}
