//! `rollout pause` / `rollout resume`: kruise-tools' `defaultObjectPauser`/`defaultObjectResumer`
//! for a CloneSet (`spec.updateStrategy.paused`), extended to the Advanced StatefulSet
//! (`spec.updateStrategy.rollingUpdate.paused`, which kruise-tools does not pause) and the Advanced
//! DaemonSet (the same field, an optional bool there; kruise-tools does not pause it either). Pausing a
//! paused workload is an error (`error: clonesets.apps.kruise.io "web" is already paused`, exit
//! 1), as is resuming one that is not paused. The patch is a JSON merge patch of that one field;
//! resuming removes it (`null`), as kubectl's computed merge patch does for a false `omitempty`.

use serde_json::{Value, json};

use super::cli::{KubeFlags, TargetArgs};
use super::target::{Target, Workload, parse_targets};
use super::{Failure, Object, Outcome, connect, get_target, name_line, out, patch_target};

/// Whether the workload's updates are paused.
pub fn is_paused(o: &Object) -> bool {
    match o {
        Object::CloneSet(cs) => cs.spec.update_strategy.paused,
        Object::AdvancedStatefulSet(s) => s.spec.update_strategy.rolling_update.as_ref().is_some_and(|r| r.paused),
        Object::AdvancedDaemonSet(d) => {
            d.spec.update_strategy.rolling_update.as_ref().and_then(|r| r.paused).unwrap_or(false)
        }
    }
}

/// The merge patch that pauses (`pause`) or resumes the workload, or why there is none.
pub fn pause_patch(workload: Workload, paused_now: bool, pause: bool) -> Result<Value, &'static str> {
    match (paused_now, pause) {
        (true, true) => return Err("is already paused"),
        (false, false) => return Err("is not paused"),
        _ => {}
    }
    let value = if pause { json!(true) } else { Value::Null };
    Ok(match workload {
        Workload::CloneSet => json!({"spec": {"updateStrategy": {"paused": value}}}),
        Workload::AdvancedStatefulSet | Workload::AdvancedDaemonSet => {
            json!({"spec": {"updateStrategy": {"rollingUpdate": {"paused": value}}}})
        }
    })
}

async fn one(client: &kube::Client, ns: &str, target: &Target, pause: bool) -> Result<(), Failure> {
    let object = get_target(client, ns, target).await?;
    let patch = pause_patch(target.workload, is_paused(&object), pause)
        .map_err(|why| Failure::Other(format!("{} {:?} {why}", target.workload.resource(), target.name)))?;
    patch_target(client, ns, target, &kube::api::Patch::Merge(patch)).await?;
    out(&name_line(target, if pause { "paused" } else { "resumed" }));
    Ok(())
}

/// `rollout pause|resume TYPE/NAME...`.
pub async fn run(flags: &KubeFlags, args: &TargetArgs, pause: bool) -> Outcome {
    let targets = parse_targets(&args.resources).map_err(|e| vec![Failure::Other(e)])?;
    let (client, ns) = connect::connect(flags).await.map_err(|e| vec![e])?;
    let mut failures = Vec::new();
    for t in &targets {
        if let Err(f) = one(&client, &ns, t, pause).await {
            failures.push(f);
        }
    }
    if failures.is_empty() { Ok(()) } else { Err(failures) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apis::CloneSet;
    use crate::apis::daemonset::v1beta1::DaemonSet;
    use crate::apis::statefulset::v1beta1::StatefulSet;

    fn cloneset(strategy: Value) -> Value {
        json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "metadata": {"name": "web"},
               "spec": {"replicas": 3, "updateStrategy": strategy}})
    }

    fn asts(strategy: Value) -> Value {
        json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet", "metadata": {"name": "db"},
               "spec": {"replicas": 3, "updateStrategy": strategy}})
    }

    fn ads(strategy: Value) -> Value {
        json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "DaemonSet", "metadata": {"name": "agent"},
               "spec": {"updateStrategy": strategy}})
    }

    fn object(v: &Value) -> Object {
        match v["kind"].as_str() {
            Some("CloneSet") => Object::CloneSet(Box::new(serde_json::from_value::<CloneSet>(v.clone()).unwrap())),
            Some("DaemonSet") => {
                Object::AdvancedDaemonSet(Box::new(serde_json::from_value::<DaemonSet>(v.clone()).unwrap()))
            }
            _ => Object::AdvancedStatefulSet(Box::new(serde_json::from_value::<StatefulSet>(v.clone()).unwrap())),
        }
    }

    /// Pauses or resumes `doc` by applying the patch, as the API server does.
    fn apply(doc: &Value, workload: Workload, pause: bool) -> Result<Value, &'static str> {
        let patch = pause_patch(workload, is_paused(&object(doc)), pause)?;
        let mut patched = doc.clone();
        json_patch::merge(&mut patched, &patch);
        Ok(patched)
    }

    #[test]
    fn pause_and_resume_round_trip_keeping_every_other_field() {
        let cases = [
            (cloneset(json!({"type": "InPlaceIfPossible", "partition": 1})), Workload::CloneSet),
            (cloneset(json!({})), Workload::CloneSet),
            (
                asts(
                    json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 2, "podUpdatePolicy": "InPlaceIfPossible"}}),
                ),
                Workload::AdvancedStatefulSet,
            ),
            (asts(json!({"type": "RollingUpdate"})), Workload::AdvancedStatefulSet),
            (
                ads(json!({"type": "RollingUpdate", "rollingUpdate": {"rollingUpdateType": "InPlaceIfPossible",
                    "partition": 1, "maxUnavailable": 1}})),
                Workload::AdvancedDaemonSet,
            ),
            (ads(json!({"type": "RollingUpdate"})), Workload::AdvancedDaemonSet),
        ];
        for (doc, workload) in cases {
            let paused = apply(&doc, workload, true).unwrap();
            assert!(is_paused(&object(&paused)), "{paused}");
            let mut without = paused.clone();
            let strategy = &mut without["spec"]["updateStrategy"];
            let holder = if workload == Workload::CloneSet { strategy } else { &mut strategy["rollingUpdate"] };
            assert_eq!(holder.as_object_mut().unwrap().remove("paused"), Some(json!(true)));
            // Nothing but `paused` changed (an empty rollingUpdate may appear for a set without one).
            let mut expected = doc.clone();
            if workload != Workload::CloneSet && expected["spec"]["updateStrategy"]["rollingUpdate"].is_null() {
                expected["spec"]["updateStrategy"]["rollingUpdate"] = json!({});
            }
            assert_eq!(without, expected);

            assert_eq!(apply(&paused, workload, true), Err("is already paused"));
            let resumed = apply(&paused, workload, false).unwrap();
            assert!(!is_paused(&object(&resumed)));
            assert_eq!(resumed, expected, "resume removes the field");
            assert_eq!(apply(&resumed, workload, false), Err("is not paused"));
        }
    }

    #[test]
    fn the_patches_name_the_kind_s_field() {
        assert_eq!(
            pause_patch(Workload::CloneSet, false, true),
            Ok(json!({"spec": {"updateStrategy": {"paused": true}}}))
        );
        assert_eq!(
            pause_patch(Workload::AdvancedStatefulSet, true, false),
            Ok(json!({"spec": {"updateStrategy": {"rollingUpdate": {"paused": null}}}}))
        );
        assert_eq!(
            pause_patch(Workload::AdvancedDaemonSet, false, true),
            Ok(json!({"spec": {"updateStrategy": {"rollingUpdate": {"paused": true}}}}))
        );
    }
}
