//! `rollout status`: one progress line per change of the workload until its rollout is complete
//! (exit 0), or until `--timeout` (`error: timed out waiting for the condition`, exit 1); with
//! `--watch=false` one line and exit 0 whatever it says, as kubectl. While a CloneSet or an
//! Advanced StatefulSet waits, the reasons our planner gives (`crate::plan`, the controller's own decision function, run on what
//! the cluster holds now) follow the line, each once until they change.
//!
//! Completeness follows kruise-tools' `CloneSetStatusViewer`/`AdvancedStatefulSetStatusViewer`
//! messages, with two deliberate fixes: kruise-tools calls an in-place CloneSet "complete" before
//! the controller has observed the new spec, and a ReCreate one complete once enough pods are
//! ready, updated or not. Here a rollout is complete when the status has observed the spec's
//! generation, every pod the partition leaves to update is updated and ready, no old or surplus
//! pod is left, and every desired pod is ready — kubectl's Deployment rule, in kruise's terms.
//!
//! kruise-tools follows no Advanced DaemonSet; we judge one as kubectl's `DaemonSetStatusViewer`
//! judges an apps/v1 DaemonSet (`daemon set "agent" successfully rolled out`), with the nodes
//! `rollingUpdate.partition` keeps (scaled on `desiredNumberScheduled`, rounded down, as the
//! controller's `filterDaemonPodsNodeToUpdate`) and, with a `rollingUpdate.selector`, only the
//! nodes it selects (or already updated) expected to update: counted by [`ads_selected`] on the
//! nodes and pods read.

use futures::StreamExt;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::runtime::watcher;

use super::cli::{KubeFlags, StatusArgs};
use super::target::{Target, Workload, parse_one};
use super::{Failure, Object, Outcome, connect, fail, get_target, out};
use crate::apis::CloneSet;
use crate::apis::daemonset::v1beta1::DaemonSet;
use crate::apis::statefulset::v1beta1::StatefulSet;
use crate::compat::intstr::{calculate_partition_replicas, k8s_scaled_value};
use crate::core::features::FeatureGates;

/// What one look at the workload says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Progress {
    /// The line to print (with its newline).
    pub message: String,
    /// Whether the rollout is complete.
    pub done: bool,
}

fn waiting(message: String) -> Result<Progress, String> {
    Ok(Progress { message, done: false })
}

/// The counts both kinds are judged on.
struct Counts<'a> {
    kind: &'a str,
    name: &'a str,
    generation: i64,
    observed: i64,
    replicas: i32,
    /// Pods the partition keeps at the old revision.
    partition: i32,
    status_replicas: i32,
    ready: i32,
    available: i32,
    updated: i32,
    updated_ready: i32,
    update_revision: &'a str,
}

fn judge(c: &Counts) -> Result<Progress, String> {
    let Counts { kind, name, .. } = *c;
    if c.observed == 0 || c.generation > c.observed {
        return waiting(format!("Waiting for {kind} spec update to be observed...\n"));
    }
    let expected = (c.replicas - c.partition).max(0);
    if c.updated < expected {
        return waiting(if c.partition > 0 {
            format!(
                "Waiting for partitioned roll out to finish: {} out of {expected} new pods have been updated...\n",
                c.updated
            )
        } else {
            format!(
                "Waiting for {kind} {name:?} rollout to finish: {} out of {expected} new pods have been updated...\n",
                c.updated
            )
        });
    }
    // Pods beyond the desired ones (old pods of a finished partition-0 rollout, surge pods, a
    // scale-down in progress).
    let old = if c.partition == 0 { c.status_replicas - c.updated } else { 0 };
    let left = old.max(c.status_replicas - c.replicas);
    if left > 0 {
        return waiting(format!(
            "Waiting for {kind} {name:?} rollout to finish: {left} old pods are pending termination...\n"
        ));
    }
    if c.ready < c.replicas {
        return waiting(format!("Waiting for {} pods to be ready...\n", c.replicas - c.ready));
    }
    if c.updated_ready < expected {
        return waiting(format!(
            "Waiting for {kind} {name:?} rollout to finish: {} of {expected} updated pods are ready...\n",
            c.updated_ready
        ));
    }
    Ok(Progress {
        message: if c.partition > 0 {
            format!("partitioned roll out complete: {} new pods have been updated...\n", c.updated)
        } else {
            format!("{kind} rolling update complete {} pods at revision {}...\n", c.available, c.update_revision)
        },
        done: true,
    })
}

/// A CloneSet's progress.
pub fn cloneset_progress(cs: &CloneSet) -> Result<Progress, String> {
    let partition = calculate_partition_replicas(cs.spec.update_strategy.partition.as_ref(), cs.spec.replicas)
        .map_err(|e| {
            format!("failed calculate partition of CloneSet {:?}: {e}", cs.metadata.name.as_deref().unwrap_or(""))
        })?;
    let st = cs.status.clone().unwrap_or_default();
    judge(&Counts {
        kind: "CloneSet",
        name: cs.metadata.name.as_deref().unwrap_or(""),
        generation: cs.metadata.generation.unwrap_or(0),
        observed: st.observed_generation,
        replicas: cs.spec.replicas.unwrap_or(1),
        partition: i32::try_from(partition).unwrap_or(i32::MAX),
        status_replicas: st.replicas,
        ready: st.ready_replicas,
        available: st.available_replicas,
        updated: st.updated_replicas,
        updated_ready: st.updated_ready_replicas,
        update_revision: cs.status.as_ref().map(|s| s.update_revision.as_str()).unwrap_or(""),
    })
}

/// An Advanced StatefulSet's progress; `OnDelete` has no rollout to follow (kubectl's message for
/// a StatefulSet).
pub fn asts_progress(sts: &StatefulSet) -> Result<Progress, String> {
    let strategy = &sts.spec.update_strategy;
    if strategy.type_ == "OnDelete" {
        return Err("rollout status is only available for RollingUpdate strategy type".into());
    }
    let replicas = sts.spec.replicas.unwrap_or(1);
    let partition = strategy.rolling_update.as_ref().and_then(|r| r.partition).unwrap_or(0).clamp(0, replicas.max(0));
    let st = sts.status.as_ref();
    judge(&Counts {
        kind: "Advanced StatefulSet",
        name: sts.metadata.name.as_deref().unwrap_or(""),
        generation: sts.metadata.generation.unwrap_or(0),
        observed: st.map_or(0, |s| s.observed_generation),
        replicas,
        partition,
        status_replicas: st.map_or(0, |s| s.replicas),
        ready: st.map_or(0, |s| s.ready_replicas),
        available: st.map_or(0, |s| s.available_replicas),
        updated: st.map_or(0, |s| s.updated_replicas),
        updated_ready: st.map_or(0, |s| s.updated_ready_replicas),
        update_revision: st.map_or("", |s| s.update_revision.as_str()),
    })
}

/// An Advanced DaemonSet's progress; `selected` is, with a `rollingUpdate.selector`, the number
/// of nodes the rollout may reach ([`ads_selected`]). `OnDelete` has no rollout to follow.
pub fn ads_progress(ds: &DaemonSet, selected: Option<i32>) -> Result<Progress, String> {
    let strategy = &ds.spec.update_strategy;
    if strategy.type_ != crate::apis::daemonset::ROLLING_UPDATE {
        return Err("rollout status is only available for RollingUpdate strategy type".into());
    }
    let name = ds.metadata.name.as_deref().unwrap_or("");
    let st = ds.status.clone().unwrap_or_default();
    if st.observed_generation == 0 || ds.metadata.generation.unwrap_or(0) > st.observed_generation {
        return waiting("Waiting for daemon set spec update to be observed...\n".into());
    }
    let desired = st.desired_number_scheduled.max(0);
    let partition = match strategy.rolling_update.as_ref().and_then(|r| r.partition.as_ref()) {
        Some(p) => k8s_scaled_value(Some(p), i64::from(desired), false)
            .map_err(|e| format!("failed to get partition value of DaemonSet {name:?}: {e}"))?,
        None => 0,
    };
    let partition = i32::try_from(partition.clamp(0, i64::from(desired))).unwrap_or(desired);
    let mut expected = desired - partition;
    if let Some(n) = selected {
        expected = expected.min(n.max(0));
    }
    let partial = expected < desired;
    if st.updated_number_scheduled < expected {
        return waiting(if partial {
            format!(
                "Waiting for partitioned roll out to finish: {} out of {expected} new pods have been updated...\n",
                st.updated_number_scheduled
            )
        } else {
            format!(
                "Waiting for daemon set {name:?} rollout to finish: {} out of {expected} new pods have been updated...\n",
                st.updated_number_scheduled
            )
        });
    }
    if st.number_available < desired {
        return waiting(format!(
            "Waiting for daemon set {name:?} rollout to finish: {} of {desired} updated pods are available...\n",
            st.number_available
        ));
    }
    Ok(Progress {
        message: if partial {
            format!("partitioned roll out complete: {} new pods have been updated...\n", st.updated_number_scheduled)
        } else {
            format!("daemon set {name:?} successfully rolled out\n")
        },
        done: true,
    })
}

/// With a `rollingUpdate.selector`, the nodes an Advanced DaemonSet's rollout may reach: those
/// running a pod of the set (`owner_uid`) that the selector selects or whose pod is already at the
/// update revision (`filterDaemonPodsNodeToUpdate` puts those first). `None` without a selector.
pub fn ads_selected(
    ds: &DaemonSet,
    nodes: &[k8s_openapi::api::core::v1::Node],
    pods: &[k8s_openapi::api::core::v1::Pod],
) -> Result<Option<i32>, String> {
    let Some(sel) = ds.spec.update_strategy.rolling_update.as_ref().and_then(|r| r.selector.as_ref()) else {
        return Ok(None);
    };
    let sel = crate::compat::selector::Selector::from_validated(Some(sel)).map_err(|e| e.to_string())?;
    let uid = ds.metadata.uid.as_deref().unwrap_or("");
    let update = ds.status.as_ref().map_or("", |s| s.update_revision.as_str());
    let empty = Default::default();
    let mut reached = std::collections::BTreeSet::new();
    for p in pods {
        let owned = crate::core::rollout::ownership::controller_of(&p.metadata).is_some_and(|r| r.uid == uid);
        let node = p.spec.as_ref().and_then(|s| s.node_name.as_deref()).unwrap_or("");
        if !owned || node.is_empty() || p.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let updated = !update.is_empty()
            && crate::core::pods::label(p, crate::core::revision::CONTROLLER_REVISION_HASH) == Some(update);
        let selected = nodes
            .iter()
            .find(|n| n.metadata.name.as_deref() == Some(node))
            .is_some_and(|n| sel.matches(n.metadata.labels.as_ref().unwrap_or(&empty)));
        if updated || selected {
            reached.insert(node.to_string());
        }
    }
    Ok(Some(i32::try_from(reached.len()).unwrap_or(i32::MAX)))
}

/// The progress of a workload as read; `selected` as [`ads_progress`] takes it.
pub fn progress(object: &Object, selected: Option<i32>) -> Result<Progress, String> {
    match object {
        Object::CloneSet(cs) => cloneset_progress(cs),
        Object::AdvancedStatefulSet(s) => asts_progress(s),
        Object::AdvancedDaemonSet(d) => ads_progress(d, selected),
    }
}

/// With a `rollingUpdate.selector` on an Advanced DaemonSet, the nodes its rollout may reach, read
/// from the cluster (nodes and the namespace's pods); `None` otherwise or when they cannot be read.
async fn selected(client: &kube::Client, ns: &str, object: &Object) -> Option<i32> {
    let Object::AdvancedDaemonSet(ds) = object else { return None };
    ds.spec.update_strategy.rolling_update.as_ref()?.selector.as_ref()?;
    let lp = kube::api::ListParams::default();
    let nodes = Api::<k8s_openapi::api::core::v1::Node>::all(client.clone()).list(&lp).await.ok()?.items;
    let pods = Api::<k8s_openapi::api::core::v1::Pod>::namespaced(client.clone(), ns).list(&lp).await.ok()?.items;
    ads_selected(ds, &nodes, &pods).ok().flatten()
}

/// The lines that explain a wait: each reason indented under the progress line.
pub fn reason_lines(reasons: &[String]) -> String {
    reasons.iter().map(|r| format!("  waiting: {r}\n")).collect()
}

/// Why the controller holds the rollout back now, by the planner of the workload's kind.
async fn reasons(client: &kube::Client, ns: &str, target: &Target) -> Vec<String> {
    use crate::plan::live::Kind;
    let kind = match target.workload {
        Workload::CloneSet => Kind::CloneSet,
        Workload::AdvancedStatefulSet => Kind::StatefulSet,
        Workload::AdvancedDaemonSet => Kind::DaemonSet,
    };
    let manager_namespace = crate::config::DEFAULT_NAMESPACE;
    let Ok(manifests) = crate::plan::live::read(client, kind, ns, &target.name, manager_namespace).await else {
        return Vec::new();
    };
    let gates = FeatureGates::default();
    let settings = crate::plan::Settings { gates: &gates, now: Timestamp::now(), manager_namespace };
    match crate::plan::plan_workloads(&manifests, &settings) {
        Ok(planned) => {
            let clonesets = planned.clonesets.into_iter().map(|p| (p.plan.waiting, p.plan.errors));
            let sets = planned.statefulsets.into_iter().map(|p| (p.plan.waiting, p.plan.errors));
            let daemons = planned.daemonsets.into_iter().map(|p| (p.plan.waiting, p.plan.errors));
            clonesets
                .chain(sets)
                .chain(daemons)
                .flat_map(|(waiting, errors)| waiting.into_iter().chain(errors))
                .collect()
        }
        Err(_) => Vec::new(),
    }
}

/// Prints one look; says whether to stop.
struct Printer {
    last_reasons: Vec<String>,
}

impl Printer {
    async fn show(
        &mut self,
        client: &kube::Client,
        ns: &str,
        target: &Target,
        object: &Object,
    ) -> Result<bool, Failure> {
        let p = progress(object, selected(client, ns, object).await)?;
        out(&p.message);
        if !p.done {
            let now = reasons(client, ns, target).await;
            if !now.is_empty() && now != self.last_reasons {
                out(&reason_lines(&now));
            }
            self.last_reasons = now;
        }
        Ok(p.done)
    }
}

async fn follow_kind<K>(
    client: &kube::Client,
    ns: &str,
    target: &Target,
    printer: &mut Printer,
    wrap: impl Fn(K) -> Object,
) -> Result<(), Failure>
where
    K: kube::Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + 'static,
{
    let config = watcher::Config::default().fields(&format!("metadata.name={}", target.name));
    let api: Api<K> = Api::namespaced(client.clone(), ns);
    let mut events = std::pin::pin!(crate::cluster::watch_backoff::with_backoff(watcher(api, config)));
    let mut seen = false;
    while let Some(event) = events.next().await {
        match event {
            Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => {
                seen = true;
                if printer.show(client, ns, target, &wrap(o)).await? {
                    return Ok(());
                }
            }
            // kubectl stops rather than follow a new object of the same name.
            Ok(watcher::Event::Delete(_)) => return Err(Failure::Other("object has been deleted".into())),
            Ok(watcher::Event::InitDone) if !seen => {
                return Err(Failure::Other(format!("{} {:?} not found", target.workload.resource(), target.name)));
            }
            Ok(_) => {}
            // Refused outright: retrying will not help.
            Err(watcher::Error::WatchError(e)) if e.code == 401 || e.code == 403 => return Err(Failure::Api(e)),
            // Anything else the watcher retries with backoff, as client-go's reflector does.
            Err(_) => {}
        }
    }
    Err(Failure::Other("the watch ended".into()))
}

async fn follow(client: &kube::Client, ns: &str, target: &Target, printer: &mut Printer) -> Result<(), Failure> {
    match target.workload {
        Workload::CloneSet => {
            follow_kind(client, ns, target, printer, |o: CloneSet| Object::CloneSet(Box::new(o))).await
        }
        Workload::AdvancedStatefulSet => {
            follow_kind(client, ns, target, printer, |o: StatefulSet| Object::AdvancedStatefulSet(Box::new(o))).await
        }
        Workload::AdvancedDaemonSet => {
            follow_kind(client, ns, target, printer, |o: DaemonSet| Object::AdvancedDaemonSet(Box::new(o))).await
        }
    }
}

/// `rollout status TYPE/NAME [-w] [--timeout D]`.
pub async fn run(flags: &KubeFlags, args: &StatusArgs) -> Outcome {
    let target = match parse_one(&args.resources, "rollout status") {
        Ok(t) => t,
        Err(e) => return fail(e),
    };
    let (client, ns) = connect::connect(flags).await.map_err(|e| vec![e])?;
    // Read once first: a missing object is kubectl's NotFound error, not a wait.
    let object = get_target(&client, &ns, &target).await.map_err(|e| vec![e])?;
    let mut printer = Printer { last_reasons: Vec::new() };
    if !args.watch {
        printer.show(&client, &ns, &target, &object).await.map_err(|e| vec![e])?;
        return Ok(());
    }
    let watch = follow(&client, &ns, &target, &mut printer);
    let result = if args.timeout.is_zero() {
        watch.await
    } else {
        match tokio::time::timeout(args.timeout, watch).await {
            Ok(r) => r,
            Err(_) => Err(Failure::Other("timed out waiting for the condition".into())),
        }
    };
    result.map_err(|e| vec![e])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn cs(generation: i64, replicas: i32, partition: Value, strategy: &str, status: Value) -> CloneSet {
        serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
            "metadata": {"name": "web", "generation": generation},
            "spec": {"replicas": replicas, "updateStrategy": {"type": strategy, "partition": partition}},
            "status": status,
        }))
        .unwrap()
    }

    fn st(observed: i64, replicas: i32, ready: i32, updated: i32, updated_ready: i32) -> Value {
        json!({"observedGeneration": observed, "replicas": replicas, "readyReplicas": ready,
               "availableReplicas": ready, "updatedReplicas": updated, "updatedReadyReplicas": updated_ready,
               "updateRevision": "web-7c9f", "currentRevision": "web-5d8b"})
    }

    #[test]
    fn cloneset_rollout_completeness() {
        let table: &[(&str, CloneSet, bool, &str)] = &[
            (
                "spec not observed",
                cs(2, 3, json!(0), "ReCreate", st(1, 3, 3, 3, 3)),
                false,
                "Waiting for CloneSet spec update to be observed...\n",
            ),
            (
                "no status yet",
                cs(1, 3, json!(null), "ReCreate", json!(null)),
                false,
                "Waiting for CloneSet spec update to be observed...\n",
            ),
            // kruise-tools says complete here (enough ready pods); none is updated yet.
            (
                "recreate, old pods ready",
                cs(2, 3, json!(0), "ReCreate", st(2, 3, 3, 0, 0)),
                false,
                "Waiting for CloneSet \"web\" rollout to finish: 0 out of 3 new pods have been updated...\n",
            ),
            // kruise-tools says complete for in-place before the spec is even observed.
            (
                "in place, not observed",
                cs(3, 3, json!(0), "InPlaceIfPossible", st(2, 3, 3, 3, 3)),
                false,
                "Waiting for CloneSet spec update to be observed...\n",
            ),
            (
                "in place, midway",
                cs(2, 4, json!(0), "InPlaceIfPossible", st(2, 4, 3, 2, 1)),
                false,
                "Waiting for CloneSet \"web\" rollout to finish: 2 out of 4 new pods have been updated...\n",
            ),
            (
                "surge pod left",
                cs(2, 3, json!(0), "ReCreate", st(2, 4, 4, 3, 3)),
                false,
                "Waiting for CloneSet \"web\" rollout to finish: 1 old pods are pending termination...\n",
            ),
            (
                "updated, one not ready",
                cs(2, 3, json!(0), "ReCreate", st(2, 3, 2, 3, 2)),
                false,
                "Waiting for 1 pods to be ready...\n",
            ),
            (
                "complete",
                cs(2, 3, json!(0), "ReCreate", st(2, 3, 3, 3, 3)),
                true,
                "CloneSet rolling update complete 3 pods at revision web-7c9f...\n",
            ),
            (
                "partition 2 of 5, waiting",
                cs(2, 5, json!(2), "InPlaceIfPossible", st(2, 5, 5, 2, 2)),
                false,
                "Waiting for partitioned roll out to finish: 2 out of 3 new pods have been updated...\n",
            ),
            (
                "partition 40% of 5, done",
                cs(2, 5, json!("40%"), "ReCreate", st(2, 5, 5, 3, 3)),
                true,
                "partitioned roll out complete: 3 new pods have been updated...\n",
            ),
            (
                "partition, updated pod not ready",
                cs(2, 5, json!(2), "ReCreate", st(2, 5, 5, 3, 2)),
                false,
                "Waiting for CloneSet \"web\" rollout to finish: 2 of 3 updated pods are ready...\n",
            ),
            (
                "scale to 0",
                cs(2, 0, json!(0), "ReCreate", st(2, 0, 0, 0, 0)),
                true,
                "CloneSet rolling update complete 0 pods at revision web-7c9f...\n",
            ),
            (
                "scaling down",
                cs(2, 1, json!(0), "ReCreate", st(2, 3, 3, 3, 3)),
                false,
                "Waiting for CloneSet \"web\" rollout to finish: 2 old pods are pending termination...\n",
            ),
        ];
        for (what, cs, done, message) in table {
            let p = cloneset_progress(cs).unwrap();
            assert_eq!((p.done, p.message.as_str()), (*done, *message), "{what}");
        }
        let bad = cs(1, 3, json!("x%"), "ReCreate", st(1, 3, 3, 3, 3));
        assert!(cloneset_progress(&bad).unwrap_err().contains("failed calculate partition"));
    }

    #[test]
    fn asts_rollout_completeness() {
        let asts = |partition: Value, strategy: &str, status: Value| -> StatefulSet {
            serde_json::from_value(json!({
                "apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet",
                "metadata": {"name": "db", "generation": 2},
                "spec": {"replicas": 3, "updateStrategy": {"type": strategy, "rollingUpdate": {"partition": partition}}},
                "status": status,
            }))
            .unwrap()
        };
        let p = asts_progress(&asts(json!(0), "RollingUpdate", st(2, 3, 3, 3, 3))).unwrap();
        assert_eq!(
            p,
            Progress {
                message: "Advanced StatefulSet rolling update complete 3 pods at revision web-7c9f...\n".into(),
                done: true
            }
        );
        let p = asts_progress(&asts(json!(1), "RollingUpdate", st(2, 3, 3, 1, 1))).unwrap();
        assert_eq!(p.message, "Waiting for partitioned roll out to finish: 1 out of 2 new pods have been updated...\n");
        let p = asts_progress(&asts(json!(1), "RollingUpdate", st(2, 3, 3, 2, 2))).unwrap();
        assert!(p.done, "{p:?}");
        let p = asts_progress(&asts(json!(5), "RollingUpdate", st(2, 3, 3, 0, 0))).unwrap();
        assert!(p.done, "a partition above replicas leaves nothing to update: {p:?}");
        let p = asts_progress(&asts(json!(0), "RollingUpdate", st(1, 3, 3, 3, 3))).unwrap();
        assert_eq!(p.message, "Waiting for Advanced StatefulSet spec update to be observed...\n");
        assert!(asts_progress(&asts(json!(0), "OnDelete", st(2, 3, 3, 3, 3))).unwrap_err().contains("RollingUpdate"));
    }

    fn ads(generation: i64, rolling: Value, status: Value) -> DaemonSet {
        serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1beta1", "kind": "DaemonSet",
            "metadata": {"name": "agent", "generation": generation, "uid": "u-agent"},
            "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": {},
                     "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": rolling}},
            "status": status,
        }))
        .unwrap()
    }

    fn ds_st(observed: i64, desired: i32, updated: i32, available: i32) -> Value {
        json!({"observedGeneration": observed, "desiredNumberScheduled": desired,
               "currentNumberScheduled": desired, "numberMisscheduled": 0, "numberReady": available,
               "numberAvailable": available, "updatedNumberScheduled": updated, "updateRevision": "7c9f"})
    }

    #[test]
    fn ads_rollout_completeness() {
        let table: &[(&str, DaemonSet, Option<i32>, bool, &str)] = &[
            (
                "not observed",
                ads(2, json!({}), ds_st(1, 3, 3, 3)),
                None,
                false,
                "Waiting for daemon set spec update to be observed...\n",
            ),
            (
                "no status",
                ads(1, json!({}), json!(null)),
                None,
                false,
                "Waiting for daemon set spec update to be observed...\n",
            ),
            (
                "midway",
                ads(2, json!({"maxUnavailable": 1}), ds_st(2, 3, 1, 2)),
                None,
                false,
                "Waiting for daemon set \"agent\" rollout to finish: 1 out of 3 new pods have been updated...\n",
            ),
            (
                "updated, one not available",
                ads(2, json!({}), ds_st(2, 3, 3, 2)),
                None,
                false,
                "Waiting for daemon set \"agent\" rollout to finish: 2 of 3 updated pods are available...\n",
            ),
            (
                "complete",
                ads(2, json!({}), ds_st(2, 3, 3, 3)),
                None,
                true,
                "daemon set \"agent\" successfully rolled out\n",
            ),
            (
                "partition 1 of 3, waiting",
                ads(2, json!({"partition": 1}), ds_st(2, 3, 1, 3)),
                None,
                false,
                "Waiting for partitioned roll out to finish: 1 out of 2 new pods have been updated...\n",
            ),
            (
                "partition 1 of 3, done",
                ads(2, json!({"partition": 1}), ds_st(2, 3, 2, 3)),
                None,
                true,
                "partitioned roll out complete: 2 new pods have been updated...\n",
            ),
            // 50% of 3 is 1 (rounded down, as the controller scales it).
            (
                "partition 50% of 3",
                ads(2, json!({"partition": "50%"}), ds_st(2, 3, 2, 3)),
                None,
                true,
                "partitioned roll out complete: 2 new pods have been updated...\n",
            ),
            (
                "partition above desired",
                ads(2, json!({"partition": 5}), ds_st(2, 3, 0, 3)),
                None,
                true,
                "partitioned roll out complete: 0 new pods have been updated...\n",
            ),
            (
                "a selector reaching 1 node, done",
                ads(2, json!({"selector": {"matchLabels": {"pool": "canary"}}}), ds_st(2, 3, 1, 3)),
                Some(1),
                true,
                "partitioned roll out complete: 1 new pods have been updated...\n",
            ),
            (
                "a selector reaching 1 node, waiting",
                ads(2, json!({"selector": {"matchLabels": {"pool": "canary"}}}), ds_st(2, 3, 0, 3)),
                Some(1),
                false,
                "Waiting for partitioned roll out to finish: 0 out of 1 new pods have been updated...\n",
            ),
            (
                "no nodes",
                ads(2, json!({}), ds_st(2, 0, 0, 0)),
                None,
                true,
                "daemon set \"agent\" successfully rolled out\n",
            ),
        ];
        for (what, ds, selected, done, message) in table {
            let p = ads_progress(ds, *selected).unwrap();
            assert_eq!((p.done, p.message.as_str()), (*done, *message), "{what}");
        }
        let mut on_delete = ads(2, json!(null), ds_st(2, 3, 3, 3));
        on_delete.spec.update_strategy.type_ = "OnDelete".into();
        assert!(ads_progress(&on_delete, None).unwrap_err().contains("RollingUpdate"));
        let bad = ads(2, json!({"partition": "x%"}), ds_st(2, 3, 3, 3));
        assert!(ads_progress(&bad, None).unwrap_err().contains("failed to get partition value"));
    }

    #[test]
    fn the_nodes_an_ads_selector_reaches() {
        use k8s_openapi::api::core::v1::{Node, Pod};
        let node = |name: &str, pool: &str| -> Node {
            serde_json::from_value(json!({"metadata": {"name": name, "labels": {"pool": pool}}})).unwrap()
        };
        let pod = |name: &str, node: &str, hash: &str, owner: &str| -> Pod {
            serde_json::from_value(json!({"metadata": {"name": name, "labels": {"controller-revision-hash": hash},
                "ownerReferences": [{"apiVersion": "apps.kruise.io/v1beta1", "kind": "DaemonSet", "name": "agent",
                                     "uid": owner, "controller": true}]},
                "spec": {"nodeName": node, "containers": []}}))
            .unwrap()
        };
        let nodes = [node("a", "canary"), node("b", "main"), node("c", "main"), node("d", "canary")];
        let pods = [
            pod("agent-a", "a", "old", "u-agent"),
            pod("agent-b", "b", "7c9f", "u-agent"),
            pod("agent-c", "c", "old", "u-agent"),
            pod("other-d", "d", "old", "u-other"),
        ];
        let ds = ads(2, json!({"selector": {"matchLabels": {"pool": "canary"}}}), ds_st(2, 3, 1, 3));
        // a (selected) and b (already updated); d runs no pod of this set.
        assert_eq!(ads_selected(&ds, &nodes, &pods), Ok(Some(2)));
        let plain = ads(2, json!({}), ds_st(2, 3, 1, 3));
        assert_eq!(ads_selected(&plain, &nodes, &pods), Ok(None));
    }

    #[test]
    fn reasons_are_indented_under_the_line() {
        assert_eq!(
            reason_lines(&["paused".into(), "maxUnavailable reached".into()]),
            "  waiting: paused\n  waiting: maxUnavailable reached\n"
        );
        assert_eq!(reason_lines(&[]), "");
    }
}
