//! In-place vertical scaling (spec §3.2 steps 3 and 4, gate InPlaceWorkloadVerticalScaling;
//! kruise's `inplace_update_vertical.go`): decides which resources ops can be applied to a running
//! pod by a resize, and records them. Accepted: a `replace` on exactly
//! `/spec/containers/<N>/resources/{limits|requests}/{cpu|memory}` (N within the OLD template)
//! whose value parses as a quantity; the quantity is recorded as Go prints it. Adding or removing a
//! resource key is refused before this module is asked (it is not a `replace`). Once all ops are
//! judged, the pod QoS class computed from the old and the new template must be the same
//! ([`qos_change`]).

use super::qos::{QosClass, QosError, pod_qos_class};
use crate::compat::jsondiff::PatchOp;
use crate::compat::quantity::Quantity;
use k8s_openapi::api::core::v1::{Container, PodTemplateSpec, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as WireQuantity;
use serde_json::Value;
use std::collections::BTreeMap;

/// kruise's `containerResourcesPatchRexp`: `^/spec/containers/([0-9]+)/resources/.*$`.
pub fn is_resources_path(path: &str) -> bool {
    path.strip_prefix("/spec/containers/").and_then(|rest| rest.split_once('/')).is_some_and(|(index, tail)| {
        !index.is_empty() && index.bytes().all(|b| b.is_ascii_digit()) && tail.starts_with("resources/")
    })
}

/// New cpu/memory values per container name, accumulated op by op.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResizePlan {
    limits: BTreeMap<String, BTreeMap<String, WireQuantity>>,
    requests: BTreeMap<String, BTreeMap<String, WireQuantity>>,
}

impl ResizePlan {
    pub fn is_empty(&self) -> bool {
        self.limits.is_empty() && self.requests.is_empty()
    }

    /// Kruise's `UpdateInplaceUpdateMetadata` for one `replace` op on a resources path; `Err` says
    /// why the op cannot be done by a resize (checks in kruise's order).
    pub fn record(&mut self, op: &PatchOp, old_containers: &[Container]) -> Result<(), String> {
        let words: Vec<&str> = op.path.split('/').collect();
        let [_, _, _, index, _, kind, resource] = words.as_slice() else {
            return Err(format!("invalid resource path: {}", op.path));
        };
        let Some(container) = index.parse::<usize>().ok().and_then(|i| old_containers.get(i)) else {
            return Err(format!("invalid container index: {}", op.path));
        };
        let value = match &op.value {
            None | Some(Value::Null) => return Err("json patch value is nil".into()),
            Some(Value::String(s)) => s,
            Some(other) => return Err(format!("quantity is not a string: {other}")),
        };
        let quantity = Quantity::parse(value).map_err(|e| format!("parse quantity error: {e}"))?;
        if !matches!(*resource, "cpu" | "memory") {
            return Err(format!("disallowed inplace update resource: {resource}"));
        }
        // Kruise silently records nothing for another word here; the shape rule refuses it.
        let target = match *kind {
            "limits" => &mut self.limits,
            "requests" => &mut self.requests,
            other => return Err(format!("not limits or requests: {other}")),
        };
        let values = target.entry(container.name.clone()).or_default();
        values.insert((*resource).to_owned(), WireQuantity(quantity.canonical()));
        Ok(())
    }

    /// The plan as `containerResources` (only the changed limits/requests are set).
    pub fn into_requirements(self) -> BTreeMap<String, ResourceRequirements> {
        let mut out: BTreeMap<String, ResourceRequirements> = BTreeMap::new();
        for (name, limits) in self.limits {
            out.entry(name).or_default().limits = Some(limits);
        }
        for (name, requests) in self.requests {
            out.entry(name).or_default().requests = Some(requests);
        }
        out
    }
}

/// `Some((old, new))` when the pod QoS class differs between the two templates (kruise's
/// `IsPodQoSChanged`).
pub fn qos_change(old: &PodTemplateSpec, new: &PodTemplateSpec) -> Result<Option<(QosClass, QosClass)>, QosError> {
    let (o, n) = (pod_qos_class(old.spec.as_ref())?, pod_qos_class(new.spec.as_ref())?);
    Ok((o != n).then_some((o, n)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn record_table() {
        let containers: Vec<Container> = serde_json::from_value(json!([{"name": "a"}, {"name": "b"}])).unwrap();
        let op = |path: &str, v: Value| PatchOp::replace(path, v);
        #[rustfmt::skip]
        let cases: Vec<(PatchOp, Result<Value, &str>)> = vec![
            (op("/spec/containers/0/resources/limits/cpu", json!("2")), Ok(json!({"a": {"limits": {"cpu": "2"}}}))),
            (op("/spec/containers/1/resources/requests/memory", json!("1024Mi")),
             Ok(json!({"b": {"requests": {"memory": "1Gi"}}}))),
            (op("/spec/containers/0/resources/limits/cpu", json!("0.5")), Ok(json!({"a": {"limits": {"cpu": "500m"}}}))),
            (op("/spec/containers/0/resources/limits/cpu", json!("1500m")), Ok(json!({"a": {"limits": {"cpu": "1500m"}}}))),
            (op("/spec/containers/2/resources/limits/cpu", json!("2")), Err("invalid container index")),
            (op("/spec/containers/99999999999999999999999/resources/limits/cpu", json!("2")), Err("invalid container index")),
            (op("/spec/containers/0/resources/limits", json!({"cpu": "2"})), Err("invalid resource path")),
            (op("/spec/containers/0/resources/claims/0/name", json!("x")), Err("invalid resource path")),
            (op("/spec/containers/0/resources/limits/cpu", Value::Null), Err("json patch value is nil")),
            (PatchOp::remove("/spec/containers/0/resources/limits/cpu"), Err("json patch value is nil")),
            (op("/spec/containers/0/resources/limits/cpu", json!(2)), Err("quantity is not a string")),
            (op("/spec/containers/0/resources/limits/cpu", json!("lots")), Err("parse quantity error")),
            (op("/spec/containers/0/resources/limits/nvidia.com~1gpu", json!("2")), Err("disallowed inplace update resource")),
            (op("/spec/containers/0/resources/limits/ephemeral-storage", json!("1Gi")), Err("disallowed inplace update resource")),
            (op("/spec/containers/0/resources/other/cpu", json!("2")), Err("not limits or requests")),
        ];
        for (op, want) in cases {
            let mut plan = ResizePlan::default();
            let got = plan.record(&op, &containers).map(|()| serde_json::to_value(plan.into_requirements()).unwrap());
            match (got, want) {
                (Ok(g), Ok(w)) => assert_eq!(g, w, "{op}"),
                (Err(g), Err(w)) => assert!(g.starts_with(w), "{op}: {g}"),
                (g, w) => panic!("{op}: got {g:?}, want {w:?}"),
            }
        }
    }

    #[test]
    fn plan_accumulates_per_container() {
        let containers: Vec<Container> = serde_json::from_value(json!([{"name": "a"}, {"name": "b"}])).unwrap();
        let mut plan = ResizePlan::default();
        assert!(plan.is_empty());
        for (path, v) in
            [("0/resources/limits/cpu", "2"), ("0/resources/requests/cpu", "1"), ("1/resources/limits/memory", "1Gi")]
        {
            plan.record(&PatchOp::replace(format!("/spec/containers/{path}"), json!(v)), &containers).unwrap();
        }
        assert_eq!(
            serde_json::to_value(plan.into_requirements()).unwrap(),
            json!({
            "a": {"limits": {"cpu": "2"}, "requests": {"cpu": "1"}}, "b": {"limits": {"memory": "1Gi"}}})
        );
    }

    #[test]
    fn resources_paths() {
        #[rustfmt::skip]
        let cases = [
            ("/spec/containers/0/resources/limits/cpu", true), ("/spec/containers/10/resources/x", true),
            ("/spec/containers/0/resources", false), ("/spec/initContainers/0/resources/limits/cpu", false),
            ("/spec/containers/x/resources/limits/cpu", false), ("/spec/containers//resources/limits", false),
        ];
        for (path, want) in cases {
            assert_eq!(is_resources_path(path), want, "{path}");
        }
    }

    #[test]
    fn qos_change_table() {
        let t = |limits: Value, requests: Value| -> PodTemplateSpec {
            serde_json::from_value(
                json!({"spec": {"containers": [{"name": "c", "resources": {"limits": limits, "requests": requests}}]}}),
            )
            .unwrap()
        };
        let g = |cpu: &str, mem: &str| json!({"cpu": cpu, "memory": mem});
        use QosClass::{Burstable, Guaranteed};
        #[rustfmt::skip]
        let cases = [
            ("Burstable -> Guaranteed", t(g("1", "1Gi"), g("500m", "1Gi")), t(g("1", "1Gi"), g("1", "1Gi")), Some((Burstable, Guaranteed))),
            ("Guaranteed -> Burstable", t(g("1", "1Gi"), g("1", "1Gi")), t(g("2", "1Gi"), g("1", "1Gi")), Some((Guaranteed, Burstable))),
            ("Guaranteed stays", t(g("1", "1Gi"), g("1", "1Gi")), t(g("2", "2Gi"), g("2000m", "2048Mi")), None),
            ("Burstable stays", t(g("2", "1Gi"), g("1", "1Gi")), t(g("3", "1Gi"), g("1", "1Gi")), None),
        ];
        for (name, old, new, want) in cases {
            assert_eq!(qos_change(&old, &new), Ok(want), "{name}");
        }
    }
}
