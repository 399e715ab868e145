//! The leader's watch for pods admitted without their sidecars (issue 10 item 6): pod metadata is
//! watched cluster-wide; each pod that [`crate::core::sidecar::failopen::missing_sets`] blames is
//! reported once — a Warning Event on the pod (reason `SidecarSetNotInjected`) and the
//! `kruise_sidecarset_uninjected_pods` counter — so that pods created while admission failed open
//! do not go unnoticed.

use std::collections::HashSet;
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use kube::api::{Api, PartialObjectMeta};
use kube::runtime::WatchStreamExt;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::watcher;
use tokio_util::sync::CancellationToken;

use crate::cluster::{ClusterView, namespace_labels};
use crate::core::sidecar::failopen::missing_sets;
use crate::metrics::Metrics;

/// Reason of the Event.
pub const REASON: &str = "SidecarSetNotInjected";

/// Watches pods until `token` is cancelled, reporting those missing a SidecarSet's injection.
pub async fn watch(
    client: kube::Client,
    view: Arc<dyn ClusterView>,
    metrics: Metrics,
    identity: String,
    token: CancellationToken,
) {
    let recorder =
        Recorder::new(client.clone(), Reporter { controller: "kruise-manager".into(), instance: Some(identity) });
    let pods: Api<PartialObjectMeta<Pod>> = Api::all(client);
    let stream = watcher::watcher(pods, watcher::Config::default())
        .default_backoff()
        .take_until(token.clone().cancelled_owned());
    tokio::pin!(stream);
    let mut reported: HashSet<String> = HashSet::new();
    while let Some(event) = stream.next().await {
        match event {
            Err(e) => tracing::debug!(error = %e, "pod watch failed; retrying"),
            Ok(watcher::Event::Delete(meta)) => {
                if let Some(uid) = meta.metadata.uid {
                    reported.remove(&uid);
                }
            }
            Ok(watcher::Event::Apply(meta) | watcher::Event::InitApply(meta)) => {
                let Some(uid) = meta.metadata.uid.clone() else { continue };
                if reported.contains(&uid) {
                    continue;
                }
                let missing = check(view.as_ref(), &meta);
                if missing.is_empty() {
                    continue;
                }
                reported.insert(uid);
                metrics.uninjected_pods.inc();
                report(&recorder, &meta, &missing).await;
            }
            Ok(watcher::Event::Init | watcher::Event::InitDone) => {}
        }
    }
}

fn check(view: &dyn ClusterView, meta: &PartialObjectMeta<Pod>) -> Vec<String> {
    let namespace = meta.metadata.namespace.clone().unwrap_or_default();
    let pod = Pod { metadata: meta.metadata.clone(), ..Pod::default() };
    let empty = std::collections::BTreeMap::new();
    let labels = pod.metadata.labels.as_ref().unwrap_or(&empty);
    let candidates = view.sidecarsets_for_pod(&namespace, labels);
    missing_sets(&pod, &namespace, &namespace_labels(view, &namespace), &candidates)
}

async fn report(recorder: &Recorder, meta: &PartialObjectMeta<Pod>, missing: &[String]) {
    let (namespace, name) =
        (meta.metadata.namespace.clone().unwrap_or_default(), meta.metadata.name.clone().unwrap_or_default());
    let note = format!(
        "pod matches SidecarSet {} but was admitted without its sidecars (no kruise webhook answered and the \
         webhook's failurePolicy let the pod through); recreate the pod to inject them",
        missing.join(", ")
    );
    tracing::warn!(pod = %format!("{namespace}/{name}"), sidecarsets = %missing.join(","), "pod admitted without its sidecars");
    let reference = ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        namespace: Some(namespace),
        name: Some(name),
        uid: meta.metadata.uid.clone(),
        ..ObjectReference::default()
    };
    let event = Event {
        type_: EventType::Warning,
        reason: REASON.into(),
        note: Some(note),
        action: "Inject".into(),
        secondary: None,
    };
    if let Err(e) = recorder.publish(&event, &reference).await {
        tracing::warn!(error = %e, "cannot record the event");
    }
}
