//! Feature gates with kruise's registered names and defaults (spec §11.9, kruise
//! `pkg/features/kruise_features.go`), parsed from `--feature-gates Name=bool,...` as
//! `k8s.io/component-base/featuregate` does (Go's `strconv.ParseBool` values, `AllAlpha`/`AllBeta`,
//! "unrecognized feature gate"), including kruise's dependent gates (`SetDefaultFeatureGates`):
//! turning `PodWebhook` or `KruiseDaemon` off turns the gates that need them off too.
//!
//! The names are the registered strings, which kruise's Helm chart passes: two differ from their
//! Go constant names (`EnhancedLivenessProbeGate` registers `EnhancedLivenessProbe`,
//! `ForceDeleteTimeoutExpectationFeatureGate` registers `ForceDeleteTimeoutExpectationGate`). The
//! constant names, which earlier builds of this project took, are still accepted as aliases.

use std::collections::BTreeMap;
use std::fmt;

/// How mature kruise declares a gate (`featuregate.Alpha` / `featuregate.Beta`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Off by default unless stated; turned on by `AllAlpha=true`.
    Alpha,
    /// Turned on by `AllBeta=true`.
    Beta,
}

/// One gate kruise registers: its name, default and stage (kruise HEAD, a superset of v1.8).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GateSpec {
    /// The registered name (what `--feature-gates` takes).
    pub name: &'static str,
    /// The default value.
    pub default: bool,
    /// The stage.
    pub stage: Stage,
}

const fn alpha(name: &'static str) -> GateSpec {
    GateSpec { name, default: false, stage: Stage::Alpha }
}

const fn beta(name: &'static str, default: bool) -> GateSpec {
    GateSpec { name, default, stage: Stage::Beta }
}

/// Every gate kruise registers, in `defaultFeatureGates` order.
pub const GATES: &[GateSpec] = &[
    beta("PodWebhook", true),
    beta("KruiseDaemon", true),
    beta("DaemonWatchingPod", true),
    alpha("CloneSetShortHash"),
    alpha("KruisePodReadinessGate"),
    alpha("PreDownloadImageForInPlaceUpdate"),
    alpha("CloneSetPartitionRollback"),
    beta("ResourcesDeletionProtection", false),
    beta("WorkloadSpread", true),
    beta("PodUnavailableBudgetDeleteGate", true),
    alpha("PodUnavailableBudgetUpdateGate"),
    alpha("TemplateNoDefaults"),
    beta("InPlaceUpdateEnvFromMetadata", true),
    beta("StatefulSetAutoDeletePVC", true),
    alpha("SidecarSetPatchPodMetadataDefaultsAllowed"),
    alpha("SidecarTerminator"),
    beta("PodProbeMarkerGate", true),
    alpha("PreDownloadImageForDaemonSetUpdate"),
    alpha("CloneSetEventHandlerOptimization"),
    alpha("PreparingUpdateAsUpdate"),
    alpha("ImagePullJobGate"),
    beta("ResourceDistributionGate", false),
    alpha("DeletionProtectionForCRDCascadingGate"),
    alpha("EnhancedLivenessProbe"),
    alpha("RecreatePodWhenChangeVCTInCloneSetGate"),
    alpha("StatefulSetStartOrdinal"),
    beta("PodIndexLabel", true),
    alpha("EnableExternalCerts"),
    alpha("StatefulSetAutoResizePVCGate"),
    alpha("ForceDeleteTimeoutExpectationGate"),
    alpha("InPlaceWorkloadVerticalScaling"),
    alpha("EnablePodProbeMarkerOnServerless"),
    alpha("EnableSortSidecarContainerByName"),
    alpha("InPlacePodVerticalScaling"),
    alpha("DefaultHostNetworkHostPortsInPodTemplates"),
    alpha("DaemonSetPruneIneligibleNodes"),
];

/// Go constant names accepted for the registered name they stand for.
const ALIASES: &[(&str, &str)] = &[
    ("EnhancedLivenessProbeGate", "EnhancedLivenessProbe"),
    ("ForceDeleteTimeoutExpectationFeatureGate", "ForceDeleteTimeoutExpectationGate"),
];

/// component-base's special gates: set every Alpha (Beta) gate not named explicitly.
const ALL_ALPHA: &str = "AllAlpha";
const ALL_BETA: &str = "AllBeta";

/// Gates forced off when `PodWebhook` is off.
const NEED_POD_WEBHOOK: &[&str] = &[
    "KruisePodReadinessGate",
    "PodUnavailableBudgetDeleteGate",
    "PodUnavailableBudgetUpdateGate",
    "WorkloadSpread",
    "SidecarSetPatchPodMetadataDefaultsAllowed",
    "EnhancedLivenessProbe",
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
    "EnhancedLivenessProbe",
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
    /// Cascading deletion protection of CRDs (needs ResourcesDeletionProtection).
    DeletionProtectionForCRDCascadingGate,
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
    /// Advanced StatefulSet pods carry the `apps.kubernetes.io/pod-index` label.
    PodIndexLabel,
    /// CloneSet revision labels carry the short hash.
    CloneSetShortHash,
    /// CloneSet pods above the partition roll back to the current revision.
    CloneSetPartitionRollback,
    /// Pods in PreparingUpdate count as updated when the CloneSet scales.
    PreparingUpdateAsUpdate,
    /// A scale expectation that timed out is dropped instead of waited for.
    ForceDeleteTimeoutExpectationFeatureGate,
    /// The webhook certificate is someone else's (cert-manager): read and checked, never written.
    EnableExternalCerts,
    /// PodUnavailableBudgets guard pod deletions and evictions.
    PodUnavailableBudgetDeleteGate,
    /// PodUnavailableBudgets guard in-place pod updates.
    PodUnavailableBudgetUpdateGate,
    /// A pod resize is its own PodUnavailableBudget operation (RESIZE), not an UPDATE.
    InPlacePodVerticalScaling,
    /// PodProbeMarkers are served and probed by kruise-daemon.
    PodProbeMarkerGate,
    /// Job pods' sidecars are stopped once their main containers finished.
    SidecarTerminator,
    /// kruise-daemon watches its node's pods (container meta, env-from-metadata restarts).
    DaemonWatchingPod,
    /// WorkloadSpreads are admitted and spread pods (pod webhooks and controller).
    WorkloadSpread,
    /// Images are pre-downloaded before Advanced DaemonSet updates.
    PreDownloadImageForDaemonSetUpdate,
}

impl Gate {
    /// Kruise's name of the gate.
    pub fn name(self) -> &'static str {
        match self {
            Gate::PodWebhook => "PodWebhook",
            Gate::KruiseDaemon => "KruiseDaemon",
            Gate::ResourcesDeletionProtection => "ResourcesDeletionProtection",
            Gate::DeletionProtectionForCRDCascadingGate => "DeletionProtectionForCRDCascadingGate",
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
            Gate::PodIndexLabel => "PodIndexLabel",
            Gate::CloneSetShortHash => "CloneSetShortHash",
            Gate::CloneSetPartitionRollback => "CloneSetPartitionRollback",
            Gate::PreparingUpdateAsUpdate => "PreparingUpdateAsUpdate",
            Gate::ForceDeleteTimeoutExpectationFeatureGate => "ForceDeleteTimeoutExpectationGate",
            Gate::EnableExternalCerts => "EnableExternalCerts",
            Gate::PodUnavailableBudgetDeleteGate => "PodUnavailableBudgetDeleteGate",
            Gate::PodUnavailableBudgetUpdateGate => "PodUnavailableBudgetUpdateGate",
            Gate::InPlacePodVerticalScaling => "InPlacePodVerticalScaling",
            Gate::PodProbeMarkerGate => "PodProbeMarkerGate",
            Gate::SidecarTerminator => "SidecarTerminator",
            Gate::DaemonWatchingPod => "DaemonWatchingPod",
            Gate::WorkloadSpread => "WorkloadSpread",
            Gate::PreDownloadImageForDaemonSetUpdate => "PreDownloadImageForDaemonSetUpdate",
        }
    }
}

/// Why a `--feature-gates` value was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FeatureGateError {
    /// An item is not `Name=bool`.
    #[error("missing bool value for {0}")]
    Malformed(String),
    /// A name kruise does not register.
    #[error("unrecognized feature gate: {0}")]
    Unknown(String),
    /// The value is not one Go's `strconv.ParseBool` accepts.
    #[error("invalid value of {name}={value}, err: strconv.ParseBool: parsing {value:?}: invalid syntax")]
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
        let mut gates = FeatureGates::defaults();
        gates.apply_dependencies();
        gates
    }
}

/// The registered name for `name` (itself, or the name an alias stands for).
fn registered(name: &str) -> Option<&'static GateSpec> {
    let name = ALIASES.iter().find(|(alias, _)| *alias == name).map_or(name, |(_, n)| n);
    GATES.iter().find(|g| g.name == name)
}

/// Go's `strconv.ParseBool`.
fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

impl FeatureGates {
    fn defaults() -> Self {
        FeatureGates { values: GATES.iter().map(|g| (g.name, g.default)).collect() }
    }

    /// Parses `Name=bool,Name=bool` over the defaults, as component-base's `--feature-gates`
    /// flag does: explicit names win over `AllAlpha`/`AllBeta` whatever their order.
    pub fn parse(spec: &str) -> Result<Self, FeatureGateError> {
        let mut explicit: BTreeMap<&'static str, bool> = BTreeMap::new();
        let mut all: Vec<(Stage, bool)> = Vec::new();
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (name, value) = item.split_once('=').ok_or_else(|| FeatureGateError::Malformed(item.to_string()))?;
            let (name, value) = (name.trim(), value.trim());
            let on = parse_bool(value)
                .ok_or_else(|| FeatureGateError::NotBool { name: name.to_string(), value: value.to_string() })?;
            match name {
                ALL_ALPHA => all.push((Stage::Alpha, on)),
                ALL_BETA => all.push((Stage::Beta, on)),
                _ => {
                    let gate = registered(name).ok_or_else(|| FeatureGateError::Unknown(name.to_string()))?;
                    explicit.insert(gate.name, on);
                }
            }
        }
        let mut gates = FeatureGates::defaults();
        for (stage, on) in all {
            for g in GATES.iter().filter(|g| g.stage == stage && !explicit.contains_key(g.name)) {
                gates.values.insert(g.name, on);
            }
        }
        gates.values.extend(explicit);
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

/// The `--feature-gates` help: every registered gate with its default and stage, as
/// component-base's `KnownFeatures()` lists them.
pub fn help() -> String {
    let mut lines = vec![
        "Feature gates, `Name=bool,...` (kruise's registered names and defaults; also AllAlpha=bool, AllBeta=bool):"
            .to_string(),
    ];
    let mut gates: Vec<&GateSpec> = GATES.iter().collect();
    gates.sort_by_key(|g| g.name);
    for g in gates {
        let stage = match g.stage {
            Stage::Alpha => "ALPHA",
            Stage::Beta => "BETA",
        };
        lines.push(format!("  {}=true|false ({stage} - default={})", g.name, g.default));
    }
    lines.join("\n")
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
            (Gate::PodUnavailableBudgetDeleteGate, true),
            (Gate::PodUnavailableBudgetUpdateGate, false),
            (Gate::InPlacePodVerticalScaling, false),
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
            Gate::EnableExternalCerts,
        ] {
            assert!(registered(gate.name()).is_some(), "{} is registered", gate.name());
        }
        let mut names: Vec<&str> = GATES.iter().map(|g| g.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), GATES.len(), "no gate registered twice");
    }

    /// The registered strings of kruise's `pkg/features` (HEAD; v1.8 registers the first 32), as
    /// its Helm chart passes them.
    #[test]
    fn registered_names_of_kruise_parse() {
        let kruise = [
            "KruiseDaemon",
            "PodWebhook",
            "CloneSetShortHash",
            "KruisePodReadinessGate",
            "PreDownloadImageForInPlaceUpdate",
            "CloneSetPartitionRollback",
            "ResourcesDeletionProtection",
            "PodUnavailableBudgetDeleteGate",
            "PodUnavailableBudgetUpdateGate",
            "WorkloadSpread",
            "DaemonWatchingPod",
            "TemplateNoDefaults",
            "InPlaceUpdateEnvFromMetadata",
            "StatefulSetAutoDeletePVC",
            "SidecarSetPatchPodMetadataDefaultsAllowed",
            "SidecarTerminator",
            "PodProbeMarkerGate",
            "PreDownloadImageForDaemonSetUpdate",
            "CloneSetEventHandlerOptimization",
            "PreparingUpdateAsUpdate",
            "ImagePullJobGate",
            "ResourceDistributionGate",
            "DeletionProtectionForCRDCascadingGate",
            "EnhancedLivenessProbe",
            "RecreatePodWhenChangeVCTInCloneSetGate",
            "StatefulSetStartOrdinal",
            "PodIndexLabel",
            "EnableExternalCerts",
            "StatefulSetAutoResizePVCGate",
            "ForceDeleteTimeoutExpectationGate",
            "InPlaceWorkloadVerticalScaling",
            "EnablePodProbeMarkerOnServerless",
            "EnableSortSidecarContainerByName",
            "InPlacePodVerticalScaling",
            "DefaultHostNetworkHostPortsInPodTemplates",
            "DaemonSetPruneIneligibleNodes",
        ];
        assert_eq!(kruise.len(), GATES.len());
        for name in kruise {
            let g = FeatureGates::parse(&format!("{name}=true")).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(g.values.contains_key(name), "{name}");
        }
        // The Go constant names are aliases of the registered names.
        let g = FeatureGates::parse("EnhancedLivenessProbeGate=true,ForceDeleteTimeoutExpectationFeatureGate=true")
            .unwrap();
        assert_eq!(
            g,
            FeatureGates::parse("EnhancedLivenessProbe=true,ForceDeleteTimeoutExpectationGate=true").unwrap()
        );
        assert_eq!(g.values.get("EnhancedLivenessProbe"), Some(&true));
        assert!(!g.to_string().contains("EnhancedLivenessProbeGate"), "{g}");
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
        // strconv.ParseBool spellings.
        for (v, want) in [("1", true), ("t", true), ("True", true), ("0", false), ("F", false), ("FALSE", false)] {
            let g = FeatureGates::parse(&format!("TemplateNoDefaults={v}")).unwrap();
            assert_eq!(g.enabled(Gate::TemplateNoDefaults), want, "{v}");
        }
    }

    #[test]
    fn all_alpha_and_all_beta_yield_to_explicit_names() {
        let g = FeatureGates::parse("AllAlpha=true").unwrap();
        assert!(g.enabled(Gate::TemplateNoDefaults) && g.enabled(Gate::CloneSetShortHash));
        assert!(!g.enabled(Gate::ResourcesDeletionProtection), "a beta gate");
        let a = FeatureGates::parse("TemplateNoDefaults=false,AllAlpha=true").unwrap();
        let b = FeatureGates::parse("AllAlpha=true,TemplateNoDefaults=false").unwrap();
        assert_eq!(a, b);
        assert!(!a.enabled(Gate::TemplateNoDefaults));
        let g = FeatureGates::parse("AllBeta=false").unwrap();
        assert!(!g.enabled(Gate::PodWebhook) && !g.enabled(Gate::KruisePodReadinessGate));
    }

    #[test]
    fn parse_rejects_bad_input() {
        let cases = [
            ("Nope=true", FeatureGateError::Unknown("Nope".into())),
            ("PodWebhook", FeatureGateError::Malformed("PodWebhook".into())),
            ("PodWebhook=yes", FeatureGateError::NotBool { name: "PodWebhook".into(), value: "yes".into() }),
            ("PodWebhook=tRuE", FeatureGateError::NotBool { name: "PodWebhook".into(), value: "tRuE".into() }),
        ];
        for (input, want) in cases {
            assert_eq!(FeatureGates::parse(input).unwrap_err(), want, "{input}");
        }
        assert_eq!(FeatureGates::parse("Nope=true").unwrap_err().to_string(), "unrecognized feature gate: Nope");
    }

    #[test]
    fn help_lists_every_gate_with_its_default() {
        let h = help();
        for g in GATES {
            assert!(h.contains(&format!("  {}=true|false (", g.name)), "{}", g.name);
        }
        assert!(h.contains("PodWebhook=true|false (BETA - default=true)"), "{h}");
        assert!(h.contains("EnhancedLivenessProbe=true|false (ALPHA - default=false)"), "{h}");
    }
}
