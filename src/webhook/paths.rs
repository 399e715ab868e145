//! Every webhook of spec §8.2: its name, its paths (HEAD and kruise v1.8 spellings), its rules and
//! which handler serves it. The router and the generated `webhook-config/` are both built from
//! this one table, so they cannot disagree. A webhook whose handler does not exist yet is routed
//! (it answers 404) but left out of the generated configuration, as kruise drops configuration
//! entries without a registered handler (spec §8.4 item 4).

/// Which handler serves a webhook.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Handler {
    /// Pod mutation: readiness gate, SidecarSet injection, launch priority (spec §4.1).
    MutatePod,
    /// SidecarSet defaults and hash annotations (spec §4.11).
    MutateSidecarSet,
    /// SidecarSet validation (spec §2.3).
    ValidateSidecarSet,
    /// CloneSet defaults (spec §1.1.3).
    MutateCloneSet,
    /// Advanced StatefulSet defaults (spec §1.2.3).
    MutateStatefulSet,
    /// CloneSet validation (spec §2.1).
    ValidateCloneSet,
    /// Advanced StatefulSet validation (spec §2.2).
    ValidateStatefulSet,
    /// Deletion protection of apps/v1 Deployments, ReplicaSets and StatefulSets (spec §8.2).
    ValidateBuiltinWorkload,
    /// Deletion protection of Namespaces (spec §8.2).
    ValidateNamespace,
    /// Deletion protection of Services (spec §8.2).
    ValidateService,
    /// Deletion protection of Ingresses (spec §8.2).
    ValidateIngress,
    /// Deletion protection of CustomResourceDefinitions (spec §8.2).
    ValidateCustomResourceDefinition,
    /// PodUnavailableBudgets on pod UPDATE, DELETE and eviction (`vpod`, `vpodeviction`).
    ValidatePod,
    /// PodUnavailableBudget validation (spec §2.6).
    ValidatePodUnavailableBudget,
    /// ImagePullJob defaults (spec §1.4).
    MutateImagePullJob,
    /// ImagePullJob validation (spec §2.5).
    ValidateImagePullJob,
    /// ImageListPullJob defaults (kruise `pkg/webhook/imagelistpulljob/mutating`).
    MutateImageListPullJob,
    /// ImageListPullJob validation (kruise `pkg/webhook/imagelistpulljob/validating`).
    ValidateImageListPullJob,
    /// NodeImage defaults and tag order (kruise `pkg/webhook/nodeimage/mutating`).
    MutateNodeImage,
    /// NodeImage validation (kruise `pkg/webhook/nodeimage/validating`).
    ValidateNodeImage,
    /// Advanced DaemonSet defaults (kruise `pkg/webhook/daemonset/mutating`).
    MutateDaemonSet,
    /// Advanced DaemonSet validation (kruise `pkg/webhook/daemonset/validating`).
    ValidateDaemonSet,
    /// BroadcastJob defaults (kruise `pkg/webhook/broadcastjob/mutating`).
    MutateBroadcastJob,
    /// BroadcastJob validation (kruise `pkg/webhook/broadcastjob/validating`).
    ValidateBroadcastJob,
    /// AdvancedCronJob defaults (kruise `pkg/webhook/advancedcronjob/mutating`).
    MutateAdvancedCronJob,
    /// AdvancedCronJob validation (kruise `pkg/webhook/advancedcronjob/validating`).
    ValidateAdvancedCronJob,
    /// ContainerRecreateRequest defaults and checks (kruise
    /// `pkg/webhook/containerrecreaterequest/mutating`).
    MutateContainerRecreateRequest,
    /// PodProbeMarker validation (kruise `pkg/webhook/podprobemarker/validating`).
    ValidatePodProbeMarker,
    /// UnitedDeployment defaults (kruise `pkg/webhook/uniteddeployment/mutating`).
    MutateUnitedDeployment,
    /// UnitedDeployment validation (kruise `pkg/webhook/uniteddeployment/validating`).
    ValidateUnitedDeployment,
    /// WorkloadSpread validation (kruise `pkg/webhook/workloadspread/validating`).
    ValidateWorkloadSpread,
    /// Not implemented yet: the path answers 404.
    Missing,
}

/// Mutating or validating.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// MutatingWebhookConfiguration entry.
    Mutating,
    /// ValidatingWebhookConfiguration entry.
    Validating,
}

/// One rule of a webhook (admissionregistration.k8s.io/v1 `RuleWithOperations`).
#[derive(Clone, Copy, Debug)]
pub struct Rule {
    /// API groups.
    pub groups: &'static [&'static str],
    /// API versions.
    pub versions: &'static [&'static str],
    /// Resources (`pods/eviction` for subresources).
    pub resources: &'static [&'static str],
    /// CREATE, UPDATE, DELETE.
    pub operations: &'static [&'static str],
}

/// One webhook.
#[derive(Clone, Copy, Debug)]
pub struct Webhook {
    /// Webhook name as in kruise (`mcloneset.kb.io`).
    pub name: &'static str,
    /// Mutating or validating.
    pub kind: Kind,
    /// Path of kruise HEAD; the one written into the generated configuration.
    pub path: &'static str,
    /// Path of the kruise v1.8 chart, when it differs.
    pub legacy_path: Option<&'static str>,
    /// What it intercepts.
    pub rules: &'static [Rule],
    /// Pod webhooks exclude kruise's own namespace and kube-system (bootstrap deadlock, spec §8.2).
    pub excludes_system_namespaces: bool,
    /// Re-invoked when a later mutating webhook changed the object (idempotent mutations only).
    pub reinvocation_if_needed: bool,
    /// Who answers.
    pub handler: Handler,
}

impl Webhook {
    /// Every path this webhook answers on.
    pub fn paths(&self) -> impl Iterator<Item = &'static str> {
        std::iter::once(self.path).chain(self.legacy_path)
    }

    /// Whether a handler exists (and so whether it goes into `webhook-config/`).
    pub fn implemented(&self) -> bool {
        self.handler != Handler::Missing
    }

    /// Whether the webhook only guards deletions of objects labelled
    /// `policy.kruise.io/delete-protection`: its configuration entry selects only those objects
    /// and fails open (`failurePolicy: Ignore`), as kruise's chart has it (spec §8.2).
    pub fn deletion_protection_only(&self) -> bool {
        matches!(
            self.handler,
            Handler::ValidateBuiltinWorkload
                | Handler::ValidateNamespace
                | Handler::ValidateService
                | Handler::ValidateIngress
                | Handler::ValidateCustomResourceDefinition
        )
    }
}

const KRUISE: &[&str] = &["apps.kruise.io"];
const CREATE_UPDATE: &[&str] = &["CREATE", "UPDATE"];
const CREATE_UPDATE_DELETE: &[&str] = &["CREATE", "UPDATE", "DELETE"];
const DELETE: &[&str] = &["DELETE"];

/// Path of the pod mutating webhook.
pub const MUTATE_POD: &str = "/mutate-pod";
/// Path of the pod validating webhook (pods and pods/eviction).
pub const VALIDATE_POD: &str = "/validate-pod";
/// CloneSet mutating path.
pub const MUTATE_CLONESET: &str = "/mutate-apps-kruise-io-cloneset";
/// CloneSet validating path.
pub const VALIDATE_CLONESET: &str = "/validate-apps-kruise-io-cloneset";
/// Advanced StatefulSet mutating path (both versions).
pub const MUTATE_STATEFULSET: &str = "/mutate-apps-kruise-io-statefulset";
/// Advanced StatefulSet validating path (both versions).
pub const VALIDATE_STATEFULSET: &str = "/validate-apps-kruise-io-statefulset";
/// SidecarSet mutating path.
pub const MUTATE_SIDECARSET: &str = "/mutate-apps-kruise-io-sidecarset";
/// SidecarSet validating path.
pub const VALIDATE_SIDECARSET: &str = "/validate-apps-kruise-io-sidecarset";

/// The CRD conversion webhook (every kruise CRD with more than one version).
pub const CONVERT: &str = "/convert";

/// The webhooks of spec §8.2.
pub const WEBHOOKS: &[Webhook] = &[
    Webhook {
        name: "mpod.kb.io",
        kind: Kind::Mutating,
        path: MUTATE_POD,
        legacy_path: None,
        rules: &[Rule { groups: &[""], versions: &["v1"], resources: &["pods"], operations: &["CREATE"] }],
        excludes_system_namespaces: true,
        reinvocation_if_needed: true,
        handler: Handler::MutatePod,
    },
    Webhook {
        name: "vpod.kb.io",
        kind: Kind::Validating,
        path: VALIDATE_POD,
        legacy_path: None,
        rules: &[Rule { groups: &[""], versions: &["v1"], resources: &["pods"], operations: &["UPDATE", "DELETE"] }],
        excludes_system_namespaces: true,
        reinvocation_if_needed: false,
        handler: Handler::ValidatePod,
    },
    Webhook {
        name: "vpodeviction.kb.io",
        kind: Kind::Validating,
        path: VALIDATE_POD,
        legacy_path: None,
        rules: &[Rule { groups: &[""], versions: &["v1"], resources: &["pods/eviction"], operations: &["CREATE"] }],
        excludes_system_namespaces: true,
        reinvocation_if_needed: false,
        handler: Handler::ValidatePod,
    },
    Webhook {
        name: "mcloneset.kb.io",
        kind: Kind::Mutating,
        path: MUTATE_CLONESET,
        legacy_path: Some("/mutate-apps-kruise-io-v1alpha1-cloneset"),
        rules: &[Rule {
            groups: KRUISE,
            versions: &["v1alpha1", "v1beta1"],
            resources: &["clonesets"],
            operations: CREATE_UPDATE,
        }],
        excludes_system_namespaces: false,
        reinvocation_if_needed: false,
        handler: Handler::MutateCloneSet,
    },
    Webhook {
        name: "vcloneset.kb.io",
        kind: Kind::Validating,
        path: VALIDATE_CLONESET,
        legacy_path: Some("/validate-apps-kruise-io-v1alpha1-cloneset"),
        rules: &[Rule {
            groups: KRUISE,
            versions: &["v1alpha1", "v1beta1"],
            resources: &["clonesets"],
            operations: CREATE_UPDATE_DELETE,
        }],
        excludes_system_namespaces: false,
        reinvocation_if_needed: false,
        handler: Handler::ValidateCloneSet,
    },
    Webhook {
        name: "mstatefulset.kb.io",
        kind: Kind::Mutating,
        path: MUTATE_STATEFULSET,
        legacy_path: None,
        rules: &[Rule {
            groups: KRUISE,
            versions: &["v1alpha1", "v1beta1"],
            resources: &["statefulsets"],
            operations: CREATE_UPDATE,
        }],
        excludes_system_namespaces: false,
        reinvocation_if_needed: false,
        handler: Handler::MutateStatefulSet,
    },
    Webhook {
        name: "vstatefulset.kb.io",
        kind: Kind::Validating,
        path: VALIDATE_STATEFULSET,
        legacy_path: None,
        rules: &[Rule {
            groups: KRUISE,
            versions: &["v1alpha1", "v1beta1"],
            resources: &["statefulsets"],
            operations: CREATE_UPDATE_DELETE,
        }],
        excludes_system_namespaces: false,
        reinvocation_if_needed: false,
        handler: Handler::ValidateStatefulSet,
    },
    Webhook {
        name: "msidecarset.kb.io",
        kind: Kind::Mutating,
        path: MUTATE_SIDECARSET,
        legacy_path: Some("/mutate-apps-kruise-io-v1alpha1-sidecarset"),
        rules: &[Rule {
            groups: KRUISE,
            versions: &["v1alpha1", "v1beta1"],
            resources: &["sidecarsets"],
            operations: CREATE_UPDATE,
        }],
        excludes_system_namespaces: false,
        reinvocation_if_needed: false,
        handler: Handler::MutateSidecarSet,
    },
    Webhook {
        name: "vsidecarset.kb.io",
        kind: Kind::Validating,
        path: VALIDATE_SIDECARSET,
        legacy_path: Some("/validate-apps-kruise-io-v1alpha1-sidecarset"),
        rules: &[Rule {
            groups: KRUISE,
            versions: &["v1alpha1", "v1beta1"],
            resources: &["sidecarsets"],
            operations: CREATE_UPDATE,
        }],
        excludes_system_namespaces: false,
        reinvocation_if_needed: false,
        handler: Handler::ValidateSidecarSet,
    },
    Webhook {
        name: "mdaemonset.kb.io",
        kind: Kind::Mutating,
        path: "/mutate-apps-kruise-io-daemonset",
        legacy_path: Some("/mutate-apps-kruise-io-v1alpha1-daemonset"),
        rules: &[Rule {
            groups: KRUISE,
            versions: &["v1alpha1", "v1beta1"],
            resources: &["daemonsets"],
            operations: CREATE_UPDATE,
        }],
        excludes_system_namespaces: false,
        reinvocation_if_needed: false,
        handler: Handler::MutateDaemonSet,
    },
    Webhook {
        name: "vdaemonset.kb.io",
        kind: Kind::Validating,
        path: "/validate-apps-kruise-io-daemonset",
        legacy_path: Some("/validate-apps-kruise-io-v1alpha1-daemonset"),
        rules: &[Rule {
            groups: KRUISE,
            versions: &["v1alpha1", "v1beta1"],
            resources: &["daemonsets"],
            operations: CREATE_UPDATE,
        }],
        excludes_system_namespaces: false,
        reinvocation_if_needed: false,
        handler: Handler::ValidateDaemonSet,
    },
    Webhook {
        name: "mbroadcastjob.kb.io",
        kind: Kind::Mutating,
        path: "/mutate-apps-kruise-io-broadcastjob",
        legacy_path: Some("/mutate-apps-kruise-io-v1alpha1-broadcastjob"),
        rules: &[Rule {
            groups: KRUISE,
            versions: &["v1alpha1", "v1beta1"],
            resources: &["broadcastjobs"],
            operations: CREATE_UPDATE,
        }],
        excludes_system_namespaces: false,
        reinvocation_if_needed: false,
        handler: Handler::MutateBroadcastJob,
    },
    Webhook {
        name: "vbroadcastjob.kb.io",
        kind: Kind::Validating,
        path: "/validate-apps-kruise-io-broadcastjob",
        legacy_path: Some("/validate-apps-kruise-io-v1alpha1-broadcastjob"),
        rules: &[Rule {
            groups: KRUISE,
            versions: &["v1alpha1", "v1beta1"],
            resources: &["broadcastjobs"],
            operations: CREATE_UPDATE,
        }],
        excludes_system_namespaces: false,
        reinvocation_if_needed: false,
        handler: Handler::ValidateBroadcastJob,
    },
    Webhook {
        name: "mimagepulljob.kb.io",
        kind: Kind::Mutating,
        path: "/mutate-apps-kruise-io-imagepulljob",
        legacy_path: Some("/mutate-apps-kruise-io-v1alpha1-imagepulljob"),
        rules: &[Rule {
            groups: KRUISE,
            versions: &["v1alpha1", "v1beta1"],
            resources: &["imagepulljobs"],
            operations: CREATE_UPDATE,
        }],
        excludes_system_namespaces: false,
        reinvocation_if_needed: false,
        handler: Handler::MutateImagePullJob,
    },
    Webhook {
        name: "vimagepulljob.kb.io",
        kind: Kind::Validating,
        path: "/validate-apps-kruise-io-imagepulljob",
        legacy_path: Some("/validate-apps-kruise-io-v1alpha1-imagepulljob"),
        rules: &[Rule {
            groups: KRUISE,
            versions: &["v1alpha1", "v1beta1"],
            resources: &["imagepulljobs"],
            operations: CREATE_UPDATE,
        }],
        excludes_system_namespaces: false,
        reinvocation_if_needed: false,
        handler: Handler::ValidateImagePullJob,
    },
    Webhook {
        name: "mimagelistpulljob.kb.io",
        kind: Kind::Mutating,
        path: "/mutate-apps-kruise-io-imagelistpulljob",
        legacy_path: Some("/mutate-apps-kruise-io-v1alpha1-imagelistpulljob"),
        rules: &[Rule {
            groups: KRUISE,
            versions: &["v1alpha1", "v1beta1"],
            resources: &["imagelistpulljobs"],
            operations: CREATE_UPDATE,
        }],
        excludes_system_namespaces: false,
        reinvocation_if_needed: false,
        handler: Handler::MutateImageListPullJob,
    },
    Webhook {
        name: "vimagelistpulljob.kb.io",
        kind: Kind::Validating,
        path: "/validate-apps-kruise-io-imagelistpulljob",
        legacy_path: Some("/validate-apps-kruise-io-v1alpha1-imagelistpulljob"),
        rules: &[Rule {
            groups: KRUISE,
            versions: &["v1alpha1", "v1beta1"],
            resources: &["imagelistpulljobs"],
            operations: CREATE_UPDATE,
        }],
        excludes_system_namespaces: false,
        reinvocation_if_needed: false,
        handler: Handler::ValidateImageListPullJob,
    },
    Webhook {
        name: "mnodeimage.kb.io",
        kind: Kind::Mutating,
        path: "/mutate-apps-kruise-io-nodeimage",
        legacy_path: Some("/mutate-apps-kruise-io-v1alpha1-nodeimage"),
        rules: &[Rule {
            groups: KRUISE,
            versions: &["v1alpha1", "v1beta1"],
            resources: &["nodeimages"],
            operations: CREATE_UPDATE,
        }],
        excludes_system_namespaces: false,
        reinvocation_if_needed: false,
        handler: Handler::MutateNodeImage,
    },
    Webhook {
        name: "vnodeimage.kb.io",
        kind: Kind::Validating,
        path: "/validate-apps-kruise-io-nodeimage",
        legacy_path: Some("/validate-apps-kruise-io-v1alpha1-nodeimage"),
        rules: &[Rule {
            groups: KRUISE,
            versions: &["v1alpha1", "v1beta1"],
            resources: &["nodeimages"],
            operations: CREATE_UPDATE,
        }],
        excludes_system_namespaces: false,
        reinvocation_if_needed: false,
        handler: Handler::ValidateNodeImage,
    },
    Webhook {
        name: "madvancedcronjob.kb.io",
        kind: Kind::Mutating,
        path: "/mutate-apps-kruise-io-advancedcronjob",
        legacy_path: Some("/mutate-apps-kruise-io-v1alpha1-advancedcronjob"),
        rules: &[Rule {
            groups: KRUISE,
            versions: &["v1alpha1", "v1beta1"],
            resources: &["advancedcronjobs"],
            operations: CREATE_UPDATE,
        }],
        excludes_system_namespaces: false,
        reinvocation_if_needed: false,
        handler: Handler::MutateAdvancedCronJob,
    },
    Webhook {
        name: "vadvancedcronjob.kb.io",
        kind: Kind::Validating,
        path: "/validate-apps-kruise-io-advancedcronjob",
        legacy_path: Some("/validate-apps-kruise-io-v1alpha1-advancedcronjob"),
        rules: &[Rule {
            groups: KRUISE,
            versions: &["v1alpha1", "v1beta1"],
            resources: &["advancedcronjobs"],
            operations: CREATE_UPDATE,
        }],
        excludes_system_namespaces: false,
        reinvocation_if_needed: false,
        handler: Handler::ValidateAdvancedCronJob,
    },
    Webhook {
        name: "mcontainerrecreaterequest.kb.io",
        kind: Kind::Mutating,
        path: "/mutate-apps-kruise-io-containerrecreaterequest",
        legacy_path: Some("/mutate-apps-kruise-io-v1alpha1-containerrecreaterequest"),
        rules: &[Rule {
            groups: KRUISE,
            versions: &["v1alpha1", "v1beta1"],
            resources: &["containerrecreaterequests"],
            operations: CREATE_UPDATE,
        }],
        excludes_system_namespaces: false,
        reinvocation_if_needed: false,
        handler: Handler::MutateContainerRecreateRequest,
    },
    Webhook {
        name: "vworkloadspread.kb.io",
        kind: Kind::Validating,
        path: "/validate-apps-kruise-io-workloadspread",
        legacy_path: Some("/validate-apps-kruise-io-v1alpha1-workloadspread"),
        rules: &[Rule {
            groups: KRUISE,
            versions: &["v1alpha1"],
            resources: &["workloadspreads"],
            operations: CREATE_UPDATE,
        }],
        excludes_system_namespaces: false,
        reinvocation_if_needed: false,
        handler: Handler::ValidateWorkloadSpread,
    },
    Webhook {
        name: "vpodunavailablebudget.kb.io",
        kind: Kind::Validating,
        path: "/validate-policy-kruise-io-podunavailablebudget",
        legacy_path: None,
        rules: &[Rule {
            groups: &["policy.kruise.io"],
            versions: &["v1alpha1", "v1beta1"],
            resources: &["podunavailablebudgets"],
            operations: CREATE_UPDATE,
        }],
        excludes_system_namespaces: false,
        reinvocation_if_needed: false,
        handler: Handler::ValidatePodUnavailableBudget,
    },
    Webhook {
        name: "vbuiltindeployment.kb.io",
        kind: Kind::Validating,
        path: "/validate-apps-deployment",
        legacy_path: None,
        rules: &[Rule { groups: &["apps"], versions: &["v1"], resources: &["deployments"], operations: DELETE }],
        excludes_system_namespaces: false,
        reinvocation_if_needed: false,
        handler: Handler::ValidateBuiltinWorkload,
    },
    Webhook {
        name: "vbuiltinreplicaset.kb.io",
        kind: Kind::Validating,
        path: "/validate-apps-replicaset",
        legacy_path: None,
        rules: &[Rule { groups: &["apps"], versions: &["v1"], resources: &["replicasets"], operations: DELETE }],
        excludes_system_namespaces: false,
        reinvocation_if_needed: false,
        handler: Handler::ValidateBuiltinWorkload,
    },
    Webhook {
        name: "vbuiltinstatefulset.kb.io",
        kind: Kind::Validating,
        path: "/validate-apps-statefulset",
        legacy_path: None,
        rules: &[Rule { groups: &["apps"], versions: &["v1"], resources: &["statefulsets"], operations: DELETE }],
        excludes_system_namespaces: false,
        reinvocation_if_needed: false,
        handler: Handler::ValidateBuiltinWorkload,
    },
    Webhook {
        name: "vnamespace.kb.io",
        kind: Kind::Validating,
        path: "/validate-namespace",
        legacy_path: None,
        rules: &[Rule { groups: &[""], versions: &["v1"], resources: &["namespaces"], operations: DELETE }],
        excludes_system_namespaces: false,
        reinvocation_if_needed: false,
        handler: Handler::ValidateNamespace,
    },
    Webhook {
        name: "vservice.kb.io",
        kind: Kind::Validating,
        path: "/validate-service",
        legacy_path: None,
        rules: &[Rule { groups: &[""], versions: &["v1"], resources: &["services"], operations: DELETE }],
        excludes_system_namespaces: false,
        reinvocation_if_needed: false,
        handler: Handler::ValidateService,
    },
    Webhook {
        name: "vingress.kb.io",
        kind: Kind::Validating,
        path: "/validate-ingress",
        legacy_path: None,
        rules: &[Rule {
            groups: &["networking.k8s.io"],
            versions: &["v1", "v1beta1"],
            resources: &["ingresses"],
            operations: DELETE,
        }],
        excludes_system_namespaces: false,
        reinvocation_if_needed: false,
        handler: Handler::ValidateIngress,
    },
    Webhook {
        name: "vcustomresourcedefinition.kb.io",
        kind: Kind::Validating,
        path: "/validate-customresourcedefinition",
        legacy_path: None,
        rules: &[Rule {
            groups: &["apiextensions.k8s.io"],
            versions: &["v1", "v1beta1"],
            resources: &["customresourcedefinitions"],
            operations: DELETE,
        }],
        excludes_system_namespaces: false,
        reinvocation_if_needed: false,
        handler: Handler::ValidateCustomResourceDefinition,
    },
    Webhook {
        name: "vpodprobemarker.kb.io",
        kind: Kind::Validating,
        path: "/validate-apps-kruise-io-podprobemarker",
        legacy_path: None,
        rules: &[Rule {
            groups: KRUISE,
            versions: &["v1alpha1"],
            resources: &["podprobemarkers"],
            operations: CREATE_UPDATE,
        }],
        excludes_system_namespaces: false,
        reinvocation_if_needed: false,
        handler: Handler::ValidatePodProbeMarker,
    },
    Webhook {
        name: "muniteddeployment.kb.io",
        kind: Kind::Mutating,
        path: "/mutate-apps-kruise-io-uniteddeployment",
        legacy_path: Some("/mutate-apps-kruise-io-v1alpha1-uniteddeployment"),
        rules: &[Rule {
            groups: KRUISE,
            versions: &["v1alpha1"],
            resources: &["uniteddeployments"],
            operations: CREATE_UPDATE,
        }],
        excludes_system_namespaces: false,
        reinvocation_if_needed: false,
        handler: Handler::MutateUnitedDeployment,
    },
    Webhook {
        name: "vuniteddeployment.kb.io",
        kind: Kind::Validating,
        path: "/validate-apps-kruise-io-uniteddeployment",
        legacy_path: Some("/validate-apps-kruise-io-v1alpha1-uniteddeployment"),
        rules: &[Rule {
            groups: KRUISE,
            versions: &["v1alpha1"],
            resources: &["uniteddeployments"],
            operations: CREATE_UPDATE_DELETE,
        }],
        excludes_system_namespaces: false,
        reinvocation_if_needed: false,
        handler: Handler::ValidateUnitedDeployment,
    },
];

/// The handler serving a path; `None` for a path no webhook has.
pub fn handler_for(path: &str) -> Option<Handler> {
    let mut found = None;
    for w in WEBHOOKS {
        if w.paths().any(|p| p == path) {
            // Several webhooks may share a path (vpod and vpodeviction): any implemented one wins.
            if found.is_none() || w.implemented() {
                found = Some(w.handler);
            }
        }
    }
    found
}

/// Every distinct routed path.
pub fn routed_paths() -> Vec<&'static str> {
    let mut paths: Vec<&'static str> = WEBHOOKS.iter().flat_map(|w| w.paths()).collect();
    paths.sort_unstable();
    paths.dedup();
    paths
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn names_are_unique_and_every_path_is_absolute() {
        let mut names = HashSet::new();
        for w in WEBHOOKS {
            assert!(names.insert(w.name), "duplicate {}", w.name);
            for p in w.paths() {
                assert!(p.starts_with('/'), "{p}");
            }
        }
    }

    #[test]
    fn lookup() {
        assert_eq!(handler_for(MUTATE_CLONESET), Some(Handler::MutateCloneSet));
        assert_eq!(handler_for("/mutate-apps-kruise-io-v1alpha1-cloneset"), Some(Handler::MutateCloneSet));
        assert_eq!(handler_for(MUTATE_STATEFULSET), Some(Handler::MutateStatefulSet));
        assert_eq!(handler_for(MUTATE_POD), Some(Handler::MutatePod));
        assert_eq!(handler_for("/validate-apps-kruise-io-v1alpha1-sidecarset"), Some(Handler::ValidateSidecarSet));
        assert_eq!(handler_for(VALIDATE_POD), Some(Handler::ValidatePod));
        assert_eq!(handler_for("/nope"), None);
        assert!(routed_paths().len() >= 20);
    }
}
