//! The leader's watch for pods admitted without their sidecars (issue 10 item 6), on the shared
//! pod informer: each pod that [`crate::core::sidecar::failopen::missing_sets`] blames is reported
//! once — a Warning Event on the pod (reason `SidecarSetNotInjected`) and the
//! `kruise_sidecarset_uninjected_pods` counter — so that pods created while admission failed open
//! do not go unnoticed. The handler only decides (from memory: the pod and the admission view);
//! a task of its own publishes the Events.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::Settings;
use super::informers::{Change, Informers};
use crate::cluster::{ClusterView, namespace_labels};
use crate::core::sidecar::failopen::missing_sets;
use crate::metrics::Metrics;

/// Reason of the Event.
pub const REASON: &str = "SidecarSetNotInjected";

/// Registers the check on the shared pod informer and starts the task that reports.
pub fn start(
    informers: &Informers,
    client: &kube::Client,
    view: Arc<dyn ClusterView>,
    settings: &Settings,
    metrics: &Metrics,
    token: &CancellationToken,
) -> JoinHandle<()> {
    let (tx, mut rx) = mpsc::unbounded_channel::<(ObjectMeta, Vec<String>)>();
    let reported: Mutex<HashSet<String>> = Mutex::default();
    let counter = metrics.uninjected_pods.clone();
    informers.pods.on_change(move |c| {
        let mut reported = reported.lock().unwrap_or_else(|e| e.into_inner());
        match c {
            Change::Deleted(meta) => {
                if let Some(uid) = &meta.uid {
                    reported.remove(uid);
                }
            }
            Change::Applied(pod) => {
                let Some(uid) = pod.metadata.uid.clone() else { return };
                if reported.contains(&uid) {
                    return;
                }
                let missing = check(view.as_ref(), pod);
                if missing.is_empty() {
                    return;
                }
                reported.insert(uid);
                counter.inc();
                let _ = tx.send((pod.metadata.clone(), missing));
            }
        }
    });
    let recorder = Recorder::new(
        client.clone(),
        Reporter { controller: "kruise-manager".into(), instance: settings.instance.clone() },
    );
    let token = token.clone();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = token.cancelled() => return,
                next = rx.recv() => match next {
                    Some((meta, missing)) => report(&recorder, &meta, &missing).await,
                    None => return,
                },
            }
        }
    })
}

fn check(view: &dyn ClusterView, pod: &Pod) -> Vec<String> {
    let namespace = pod.metadata.namespace.clone().unwrap_or_default();
    let empty = std::collections::BTreeMap::new();
    let labels = pod.metadata.labels.as_ref().unwrap_or(&empty);
    let candidates = view.sidecarsets_for_pod(&namespace, labels);
    missing_sets(pod, &namespace, &namespace_labels(view, &namespace), &candidates)
}

async fn report(recorder: &Recorder, meta: &ObjectMeta, missing: &[String]) {
    let (namespace, name) = (meta.namespace.clone().unwrap_or_default(), meta.name.clone().unwrap_or_default());
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
        uid: meta.uid.clone(),
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
