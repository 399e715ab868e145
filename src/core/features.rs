//! Feature gates with kruise's names and defaults (spec §11.9, kruise `pkg/features`), parsed from
//! `--feature-gates Name=bool,...`, including kruise's dependent gates (`SetDefaultFeatureGates`):
//! turning `PodWebhook` or `KruiseDaemon` off turns the gates that need them off too.

use std::collections::BTreeMap;
use std::fmt;

/// Every gate kruise knows, with its default.
const DEFAULTS: &[(&str, bool)] = &[
    ("PodWebhook", true),
    ("KruiseDaemon", true),
    ("DaemonWatchingPod", true),
    ("CloneSetShortHash", false),
    ("KruisePodReadinessGate", false),
    ("PreDownloadImageForInPlaceUpdate", false),
    ("CloneSetPartitionRollback", false),
    ("ResourcesDeletionProtection", false),
    ("WorkloadSpread", true),
    ("PodUnavailableBudgetDeleteGate", true),
    ("PodUnavailableBudgetUpdateGate", false),
    ("TemplateNoDefaults", false),
    ("InPlaceUpdateEnvFromMetadata", true),
    ("StatefulSetAutoDeletePVC", true),
    ("SidecarSetPatchPodMetadataDefaultsAllowed", false),
    ("SidecarTerminator", false),
    ("PodProbeMarkerGate", true),
    ("PreDownloadImageForDaemonSetUpdate", false),
    ("CloneSetEventHandlerOptimization", false),
    ("PreparingUpdateAsUpdate", false),
    ("ImagePullJobGate", false),
    ("ResourceDistributionGate", false),
    ("DeletionProtectionForCRDCascadingGate", false),
    ("EnhancedLivenessProbeGate", false),
    ("RecreatePodWhenChangeVCTInCloneSetGate", false),
    ("StatefulSetStartOrdinal", false),
    ("PodIndexLabel", true),
    ("EnableExternalCerts", false),
    ("StatefulSetAutoResizePVCGate", false),
    ("ForceDeleteTimeoutExpectationFeatureGate", false),
    ("InPlaceWorkloadVerticalScaling", false),
    ("EnablePodProbeMarkerOnServerless", false),
    ("EnableSortSidecarContainerByName", false),
    ("InPlacePodVerticalScaling", false),
    ("DefaultHostNetworkHostPortsInPodTemplates", false),
    ("DaemonSetPruneIneligibleNodes", false),
];

/// Gates forced off when `PodWebhook` is off.
const NEED_POD_WEBHOOK: &[&str] = &[
    "KruisePodReadinessGate",
    "PodUnavailableBudgetDeleteGate",
    "PodUnavailableBudgetUpdateGate",
    "WorkloadSpread",
    "SidecarSetPatchPodMetadataDefaultsAllowed",
    "EnhancedLivenessProbeGate",
    "EnablePodProbeMarkerOnServerless",
];

/// Gates forced off when `KruiseDaemon` is off.
const NEED_KRUISE_DAEMON: &[&str] = &[
    "PreDownloadImageForInPlaceUpdate",
    "DaemonWatchingPod",
    "InPlaceUpdateEnvFromMetadata",
    "PreDownloadImageForDaemonSetUpdate",
    "PodProbeMarkerGate",
    "SidecarTerminator",
    "ImagePullJobGate",
    "EnhancedLivenessProbeGate",
];

/// A gate name this build knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Gate {
    /// Pod webhooks (SidecarSet injection) are served.
    PodWebhook,
    /// kruise-daemon runs on the nodes.
    KruiseDaemon,
    /// Deletion protection of workloads, namespaces and CRDs.
    ResourcesDeletionProtection,
    /// Workload templates are not defaulted by the mutating webhooks.
    TemplateNoDefaults,
    /// Env vars reading labels/annotations are updated in place.
    InPlaceUpdateEnvFromMetadata,
    /// PVC retention policy of Advanced StatefulSets is defaulted.
    StatefulSetAutoDeletePVC,
    /// `volumeClaimUpdateStrategy` of Advanced StatefulSets is defaulted and enforced.
    StatefulSetAutoResizePVCGate,
    /// Hosts ports default to container ports with hostNetwork.
    DefaultHostNetworkHostPortsInPodTemplates,
    /// cpu/memory changes are applied in place.
    InPlaceWorkloadVerticalScaling,
    /// VCT changes recreate CloneSet pods.
    RecreatePodWhenChangeVCTInCloneSetGate,
    /// `KruisePodReady` readiness gate on every pod, not only kruise-owned ones.
    KruisePodReadinessGate,
    /// Patching pod metadata is allowed without a whitelist.
    SidecarSetPatchPodMetadataDefaultsAllowed,
    /// Sidecars are sorted by name before injection.
    EnableSortSidecarContainerByName,
    /// ImagePullJob is served.
    ImagePullJobGate,
    /// Images are pre-downloaded before in-place updates.
    PreDownloadImageForInPlaceUpdate,
    /// `spec.ordinals` of Advanced StatefulSets is honoured.
    StatefulSetStartOrdinal,
    /// CloneSet revision labels carry the short hash.
    CloneSetShortHash,
    /// CloneSet pods above the partition roll back to the current revision.
    CloneSetPartitionRollback,
    /// Pods in PreparingUpdate count as updated when the CloneSet scales.
    PreparingUpdateAsUpdate,
    /// A scale expectation that timed out is dropped instead of waited for.
    ForceDeleteTimeoutExpectationFeatureGate,
}

impl Gate {
    /// Kruise's name of the gate.
    pub fn name(self) -> &'static str {
        match self {
            Gate::PodWebhook => "PodWebhook",
            Gate::KruiseDaemon => "KruiseDaemon",
            Gate::ResourcesDeletionProtection => "ResourcesDeletionProtection",
            Gate::TemplateNoDefaults => "TemplateNoDefaults",
            Gate::InPlaceUpdateEnvFromMetadata => "InPlaceUpdateEnvFromMetadata",
            Gate::StatefulSetAutoDeletePVC => "StatefulSetAutoDeletePVC",
            Gate::StatefulSetAutoResizePVCGate => "StatefulSetAutoResizePVCGate",
            Gate::DefaultHostNetworkHostPortsInPodTemplates => "DefaultHostNetworkHostPortsInPodTemplates",
            Gate::InPlaceWorkloadVerticalScaling => "InPlaceWorkloadVerticalScaling",
            Gate::RecreatePodWhenChangeVCTInCloneSetGate => "RecreatePodWhenChangeVCTInCloneSetGate",
            Gate::KruisePodReadinessGate => "KruisePodReadinessGate",
            Gate::SidecarSetPatchPodMetadataDefaultsAllowed => "SidecarSetPatchPodMetadataDefaultsAllowed",
            Gate::EnableSortSidecarContainerByName => "EnableSortSidecarContainerByName",
            Gate::ImagePullJobGate => "ImagePullJobGate",
            Gate::PreDownloadImageForInPlaceUpdate => "PreDownloadImageForInPlaceUpdate",
            Gate::StatefulSetStartOrdinal => "StatefulSetStartOrdinal",
            Gate::CloneSetShortHash => "CloneSetShortHash",
            Gate::CloneSetPartitionRollback => "CloneSetPartitionRollback",
            Gate::PreparingUpdateAsUpdate => "PreparingUpdateAsUpdate",
            Gate::ForceDeleteTimeoutExpectationFeatureGate => "ForceDeleteTimeoutExpectationFeatureGate",
        }
    }
}

/// Why a `--feature-gates` value was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FeatureGateError {
    /// An item is not `Name=bool`.
    #[error("feature gate {0:?} must be Name=true or Name=false")]
    Malformed(String),
    /// A name kruise does not know.
    #[error("unrecognized feature gate: {0}")]
    Unknown(String),
    /// The value is not a boolean.
    #[error("invalid value of {name}: {value:?}, must be true or false")]
    NotBool {
        /// Gate name.
        name: String,
        /// Value given.
        value: String,
    },
}

/// The effective value of every gate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FeatureGates {
    values: BTreeMap<&'static str, bool>,
}

impl Default for FeatureGates {
    fn default() -> Self {
        let mut gates = FeatureGates { values: DEFAULTS.iter().copied().collect() };
        gates.apply_dependencies();
        gates
    }
}

impl FeatureGates {
    /// Parses `Name=bool,Name=bool` over the defaults, as Go's `--feature-gates` flag does.
    pub fn parse(spec: &str) -> Result<Self, FeatureGateError> {
        let mut gates = FeatureGates { values: DEFAULTS.iter().copied().collect() };
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (name, value) = item.split_once('=').ok_or_else(|| FeatureGateError::Malformed(item.to_string()))?;
            let (name, value) = (name.trim(), value.trim());
            let key = DEFAULTS
                .iter()
                .map(|(k, _)| *k)
                .find(|k| *k == name)
                .ok_or_else(|| FeatureGateError::Unknown(name.to_string()))?;
            let on = match value.to_ascii_lowercase().as_str() {
                "true" => true,
                "false" => false,
                _ => {
                    return Err(FeatureGateError::NotBool { name: name.to_string(), value: value.to_string() });
                }
            };
            gates.values.insert(key, on);
        }
        gates.apply_dependencies();
        Ok(gates)
    }

    /// Whether a gate is on.
    pub fn enabled(&self, gate: Gate) -> bool {
        self.values.get(gate.name()).copied().unwrap_or(false)
    }

    /// Returns a copy with one gate set (tests and `kruise check`).
    #[must_use]
    pub fn with(mut self, gate: Gate, on: bool) -> Self {
        self.values.insert(gate.name(), on);
        self.apply_dependencies();
        self
    }

    fn apply_dependencies(&mut self) {
        let off = |values: &mut BTreeMap<&'static str, bool>, names: &[&'static str]| {
            for name in names {
                values.insert(name, false);
            }
        };
        if !self.values.get("PodWebhook").copied().unwrap_or(false) {
            off(&mut self.values, NEED_POD_WEBHOOK);
        }
        if !self.values.get("KruiseDaemon").copied().unwrap_or(false) {
            off(&mut self.values, NEED_KRUISE_DAEMON);
        }
        let predownload = ["PreDownloadImageForInPlaceUpdate", "PreDownloadImageForDaemonSetUpdate"];
        if predownload.iter().any(|g| self.values.get(g).copied().unwrap_or(false)) {
            self.values.insert("ImagePullJobGate", true);
        }
        if !self.values.get("ResourcesDeletionProtection").copied().unwrap_or(false) {
            self.values.insert("DeletionProtectionForCRDCascadingGate", false);
        }
    }
}

impl fmt::Display for FeatureGates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let items: Vec<String> = self.values.iter().map(|(k, v)| format!("{k}={v}")).collect();
        f.write_str(&items.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_kruise() {
        let g = FeatureGates::default();
        let table = [
            (Gate::PodWebhook, true),
            (Gate::KruiseDaemon, true),
            (Gate::ResourcesDeletionProtection, false),
            (Gate::TemplateNoDefaults, false),
            (Gate::InPlaceUpdateEnvFromMetadata, true),
            (Gate::StatefulSetAutoDeletePVC, true),
            (Gate::StatefulSetAutoResizePVCGate, false),
            (Gate::InPlaceWorkloadVerticalScaling, false),
            (Gate::ImagePullJobGate, false),
        ];
        for (gate, want) in table {
            assert_eq!(g.enabled(gate), want, "{}", gate.name());
        }
        for gate in [
            Gate::PodWebhook,
            Gate::CloneSetShortHash,
            Gate::StatefulSetStartOrdinal,
            Gate::CloneSetPartitionRollback,
            Gate::PreparingUpdateAsUpdate,
            Gate::ForceDeleteTimeoutExpectationFeatureGate,
        ] {
            assert!(DEFAULTS.iter().any(|(n, _)| *n == gate.name()), "{} has a default", gate.name());
        }
    }

    #[test]
    fn parse_sets_values_and_dependencies() {
        let g = FeatureGates::parse("ResourcesDeletionProtection=true, TemplateNoDefaults=TRUE").unwrap();
        assert!(g.enabled(Gate::ResourcesDeletionProtection));
        assert!(g.enabled(Gate::TemplateNoDefaults));

        let g = FeatureGates::parse("KruiseDaemon=false").unwrap();
        assert!(!g.enabled(Gate::InPlaceUpdateEnvFromMetadata), "needs KruiseDaemon");

        let g = FeatureGates::parse("PodWebhook=false,KruisePodReadinessGate=true").unwrap();
        assert!(!g.enabled(Gate::KruisePodReadinessGate), "needs PodWebhook");

        let g = FeatureGates::parse("PreDownloadImageForInPlaceUpdate=true").unwrap();
        assert!(g.enabled(Gate::ImagePullJobGate), "forced on by pre-download");
        assert_eq!(FeatureGates::parse("").unwrap(), FeatureGates::default());
    }

    #[test]
    fn parse_rejects_bad_input() {
        let cases = [
            ("Nope=true", FeatureGateError::Unknown("Nope".into())),
            ("PodWebhook", FeatureGateError::Malformed("PodWebhook".into())),
            ("PodWebhook=yes", FeatureGateError::NotBool { name: "PodWebhook".into(), value: "yes".into() }),
        ];
        for (input, want) in cases {
            assert_eq!(FeatureGates::parse(input).unwrap_err(), want, "{input}");
        }
    }
}
