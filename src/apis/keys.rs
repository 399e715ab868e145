//! Well-known label, annotation, condition and finalizer names shared with kruise (spec §1.0).

/// Readiness gate and condition set while a pod is updated in place.
pub const IN_PLACE_UPDATE_READY: &str = "InPlaceUpdateReady";
/// Readiness gate and condition owned by kruise's pod-readiness controller.
pub const KRUISE_POD_READY: &str = "KruisePodReady";
/// Annotation holding the JSON in-place update state of a pod.
pub const IN_PLACE_UPDATE_STATE: &str = "apps.kruise.io/inplace-update-state";
/// Annotation holding the pending in-place update during its grace period.
pub const IN_PLACE_UPDATE_GRACE: &str = "apps.kruise.io/inplace-update-grace";
/// Pod label with the lifecycle state.
pub const LIFECYCLE_STATE: &str = "lifecycle.apps.kruise.io/state";
/// Pod annotation with the time of the last lifecycle state change.
pub const LIFECYCLE_TIMESTAMP: &str = "lifecycle.apps.kruise.io/timestamp";
/// Pod label asking for a pod to be deleted respecting maxUnavailable.
pub const SPECIFIED_DELETE: &str = "apps.kruise.io/specified-delete";
/// Label (workloads, namespaces, CRDs) that protects an object from deletion.
pub const DELETE_PROTECTION: &str = "policy.kruise.io/delete-protection";
/// `policy.kruise.io/delete-protection` value: never delete.
pub const DELETE_PROTECTION_ALWAYS: &str = "Always";
/// `policy.kruise.io/delete-protection` value: only delete when nothing would cascade.
pub const DELETE_PROTECTION_CASCADING: &str = "Cascading";
/// SidecarSet annotation: hash of its containers.
pub const SIDECARSET_HASH: &str = "kruise.io/sidecarset-hash";
/// SidecarSet annotation: hash of its containers with images blanked.
pub const SIDECARSET_HASH_WITHOUT_IMAGE: &str = "kruise.io/sidecarset-hash-without-image";
/// Pod annotation: comma-separated names of the SidecarSets injected.
pub const SIDECARSET_INJECTED_LIST: &str = "kruise.io/sidecarset-injected-list";
/// ImagePullJob finalizer added on CREATE by the v1alpha1 mutating webhook.
pub const DELETION_PROTECTION_FINALIZER: &str = "apps.kruise.io/deletion-protection";
/// Namespace label Kubernetes sets on every namespace.
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";
/// CloneSet v1alpha1 annotation: image pre-download parallelism (a field in v1beta1).
pub const IMAGE_PREDOWNLOAD_PARALLELISM: &str = "apps.kruise.io/image-predownload-parallelism";
/// CloneSet v1alpha1 annotation: image pre-download timeout (a field in v1beta1).
pub const IMAGE_PREDOWNLOAD_TIMEOUT_SECONDS: &str = "apps.kruise.io/image-predownload-timeout-seconds";
/// CloneSet v1alpha1 annotation: updated ready pods before pre-download (a field in v1beta1).
pub const IMAGE_PREDOWNLOAD_MIN_UPDATED_READY_PODS: &str = "apps.kruise.io/image-predownload-min-updated-ready-pods";
/// CloneSet v1alpha1 label: scale arithmetic excludes PreparingDelete pods (a field in v1beta1).
pub const SCALING_EXCLUDE_PREPARING_DELETE: &str = "apps.kruise.io/cloneset-scaling-exclude-preparing-delete";
/// SidecarSet v1alpha1 label: custom version (`spec.customVersion` in v1beta1).
pub const SIDECARSET_CUSTOM_VERSION: &str = "apps.kruise.io/sidecarset-custom-version";
