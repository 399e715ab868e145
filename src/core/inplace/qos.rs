//! The QoS class a pod built from a pod spec would get — Kubernetes' `qos.GetPodQOS` as vendored by
//! kruise (k8s v1.32, pod-level resources gate off). In-place vertical scaling is refused when the
//! resources change would move a pod to another QoS class (spec §3.2 step 4), because the kubelet
//! cannot change a running pod's QoS class.
//!
//! Rule: only cpu and memory count, and only quantities > 0. Requests and limits are summed over
//! containers and init containers. No request and no limit anywhere → BestEffort. Guaranteed needs
//! every container to have cpu AND memory limits, and the summed requests to equal the summed
//! limits for every resource (with the same set of resources on both sides). Everything else is
//! Burstable.

use crate::compat::quantity::Quantity;
use k8s_openapi::api::core::v1::{Container, PodSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as WireQuantity;
use std::collections::BTreeMap;
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QosClass {
    Guaranteed,
    Burstable,
    BestEffort,
}

impl QosClass {
    /// The `status.qosClass` spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            QosClass::Guaranteed => "Guaranteed",
            QosClass::Burstable => "Burstable",
            QosClass::BestEffort => "BestEffort",
        }
    }
}

impl fmt::Display for QosClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A template quantity that does not parse (or is too large to sum).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QosError {
    pub container: String,
    pub resource: String,
    pub value: String,
}

impl fmt::Display for QosError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "container {}: {} quantity {:?} does not parse or is out of range",
            self.container, self.resource, self.value
        )
    }
}

impl std::error::Error for QosError {}

/// Sums of positive cpu/memory quantities in nano-units. Parsing already rounds to nano precision,
/// so these sums are exact, like Go's `Quantity.Add`.
type Totals = BTreeMap<String, i128>;

fn add_positive(
    totals: &mut Totals,
    container: &Container,
    list: Option<&BTreeMap<String, WireQuantity>>,
) -> Result<Vec<String>, QosError> {
    let mut found = Vec::new();
    for (name, raw) in list.into_iter().flatten() {
        if !matches!(name.as_str(), "cpu" | "memory") {
            continue;
        }
        let error = || QosError { container: container.name.clone(), resource: name.clone(), value: raw.0.clone() };
        let q = Quantity::parse(&raw.0).map_err(|_| error())?;
        if q.sign() > 0 {
            let nanos = q.scaled_value(-9).ok_or_else(error)?;
            let total = totals.entry(name.clone()).or_insert(0);
            *total = total.checked_add(nanos).ok_or_else(error)?;
            found.push(name.clone());
        }
    }
    Ok(found)
}

/// The QoS class of a pod with this spec (`None` = empty spec → BestEffort).
pub fn pod_qos_class(spec: Option<&PodSpec>) -> Result<QosClass, QosError> {
    let Some(spec) = spec else {
        return Ok(QosClass::BestEffort);
    };
    let mut requests = Totals::new();
    let mut limits = Totals::new();
    let mut guaranteed = true;
    for c in spec.containers.iter().chain(spec.init_containers.iter().flatten()) {
        let resources = c.resources.as_ref();
        add_positive(&mut requests, c, resources.and_then(|r| r.requests.as_ref()))?;
        let found = add_positive(&mut limits, c, resources.and_then(|r| r.limits.as_ref()))?;
        if !(found.iter().any(|n| n == "cpu") && found.iter().any(|n| n == "memory")) {
            guaranteed = false;
        }
    }
    if requests.is_empty() && limits.is_empty() {
        return Ok(QosClass::BestEffort);
    }
    if guaranteed && requests.iter().any(|(name, req)| limits.get(name) != Some(req)) {
        guaranteed = false;
    }
    Ok(if guaranteed && requests.len() == limits.len() { QosClass::Guaranteed } else { QosClass::Burstable })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(v: serde_json::Value) -> PodSpec {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn qos_table() {
        let cases: Vec<(&str, serde_json::Value, QosClass)> = vec![
            ("no resources", json!({"containers": [{"name": "a"}]}), QosClass::BestEffort),
            (
                "zero quantities only",
                json!({"containers": [{"name": "a", "resources": {"requests": {"cpu": "0"}}}]}),
                QosClass::BestEffort,
            ),
            (
                "other resources ignored",
                json!({"containers": [{"name": "a", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}),
                QosClass::BestEffort,
            ),
            (
                "equal requests and limits",
                json!({"containers": [{"name": "a", "resources": {
                "limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1000m", "memory": "1024Mi"}}}]}),
                QosClass::Guaranteed,
            ),
            // requests are not defaulted from limits here: the request set is empty, so not Guaranteed
            (
                "limits only",
                json!({"containers": [{"name": "a", "resources": {
                "limits": {"cpu": "1", "memory": "1Gi"}}}]}),
                QosClass::Burstable,
            ),
            (
                "cpu request below limit",
                json!({"containers": [{"name": "a", "resources": {
                "limits": {"cpu": "2", "memory": "1Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}}}]}),
                QosClass::Burstable,
            ),
            (
                "memory limit missing",
                json!({"containers": [{"name": "a", "resources": {
                "limits": {"cpu": "1"}, "requests": {"cpu": "1"}}}]}),
                QosClass::Burstable,
            ),
            (
                "second container without limits",
                json!({"containers": [
                {"name": "a", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}},
                {"name": "b"}]}),
                QosClass::Burstable,
            ),
            (
                "init container counts",
                json!({"containers": [
                {"name": "a", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}],
                "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "100m"}}}]}),
                QosClass::Burstable,
            ),
            (
                "sums across containers",
                json!({"containers": [
                {"name": "a", "resources": {"limits": {"cpu": "500m", "memory": "1Gi"}, "requests": {"cpu": "500m", "memory": "1Gi"}}},
                {"name": "b", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}}}]}),
                QosClass::Guaranteed,
            ),
        ];
        for (name, s, want) in cases {
            assert_eq!(pod_qos_class(Some(&spec(s))), Ok(want), "{name}");
        }
        assert_eq!(pod_qos_class(None), Ok(QosClass::BestEffort));
    }

    #[test]
    fn bad_quantity_is_an_error() {
        let s = spec(json!({"containers": [{"name": "a", "resources": {"limits": {"cpu": "lots"}}}]}));
        assert_eq!(pod_qos_class(Some(&s)).map_err(|e| e.resource), Err("cpu".to_owned()));
    }
}
