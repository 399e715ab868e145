//! The Go structs of `k8s.io/api` v0.32.10 `core/v1` and `k8s.io/apimachinery` v0.32.10
//! `meta/v1` (the versions kruise vendors) as tables for [`crate::core::sidecar::gojson`]: for
//! every struct, its fields in declaration order with their JSON names, whether each is a pointer
//! and whether its tag says `omitempty`. Encoding a pod template or a PVC through these tables
//! gives the bytes Go's `json.Marshal` gives, which is what ControllerRevision names (spec §5.8,
//! decision §11.6), the volume-claim-template hash (§3.1) and the SidecarSet hashes (§1.3.2)
//! are computed over.
//!
//! The tables were generated from the struct tags of those Go sources (one row per field, no
//! hand edits) and are checked against revision names and hashes computed by Go (see the tests
//! of `core::history` and `core::rollout::cloneset::revision`). Fields Kubernetes added after
//! v0.32 are absent on purpose: Go's decoder drops them too.

#![allow(dead_code)]

use super::sidecar::gojson::{Field, Go, f, inline, np, o, p};

/// `[]string`.
pub(crate) const STRS: Go = Go::List(&Go::Str);

/// `metav1.OwnerReference`.
pub(crate) const OWNER_REFERENCE: &[Field] = &[
    f("apiVersion", Go::Str),
    f("kind", Go::Str),
    f("name", Go::Str),
    f("uid", Go::Str),
    p("controller", Go::Bool),
    p("blockOwnerDeletion", Go::Bool),
];
/// `metav1.FieldsV1`.
pub(crate) const FIELDSV1: &[Field] = &[];
/// `metav1.ManagedFieldsEntry`.
pub(crate) const MANAGED_FIELDS_ENTRY: &[Field] = &[
    o("manager", Go::Str),
    o("operation", Go::Str),
    o("apiVersion", Go::Str),
    p("time", Go::Time),
    o("fieldsType", Go::Str),
    p("fieldsV1", Go::Struct(FIELDSV1)),
    o("subresource", Go::Str),
];
/// `metav1.ObjectMeta`.
pub(crate) const OBJECT_META: &[Field] = &[
    o("name", Go::Str),
    o("generateName", Go::Str),
    o("namespace", Go::Str),
    o("selfLink", Go::Str),
    o("uid", Go::Str),
    o("resourceVersion", Go::Str),
    o("generation", Go::Int),
    o("creationTimestamp", Go::Time),
    p("deletionTimestamp", Go::Time),
    p("deletionGracePeriodSeconds", Go::Int),
    o("labels", Go::StrMap),
    o("annotations", Go::StrMap),
    o("ownerReferences", Go::List(&Go::Struct(OWNER_REFERENCE))),
    o("finalizers", STRS),
    o("managedFields", Go::List(&Go::Struct(MANAGED_FIELDS_ENTRY))),
];
/// `HostPathVolumeSource`.
pub(crate) const HOST_PATH_VOLUME_SOURCE: &[Field] = &[f("path", Go::Str), p("type", Go::Str)];
/// `EmptyDirVolumeSource`.
pub(crate) const EMPTY_DIR_VOLUME_SOURCE: &[Field] = &[o("medium", Go::Str), p("sizeLimit", Go::Quantity)];
/// `GCEPersistentDiskVolumeSource`.
pub(crate) const GCE_PERSISTENT_DISK_VOLUME_SOURCE: &[Field] =
    &[f("pdName", Go::Str), o("fsType", Go::Str), o("partition", Go::Int), o("readOnly", Go::Bool)];
/// `AWSElasticBlockStoreVolumeSource`.
pub(crate) const AWS_ELASTIC_BLOCK_STORE_VOLUME_SOURCE: &[Field] =
    &[f("volumeID", Go::Str), o("fsType", Go::Str), o("partition", Go::Int), o("readOnly", Go::Bool)];
/// `GitRepoVolumeSource`.
pub(crate) const GIT_REPO_VOLUME_SOURCE: &[Field] =
    &[f("repository", Go::Str), o("revision", Go::Str), o("directory", Go::Str)];
/// `KeyToPath`.
pub(crate) const KEY_TO_PATH: &[Field] = &[f("key", Go::Str), f("path", Go::Str), p("mode", Go::Int)];
/// `SecretVolumeSource`.
pub(crate) const SECRET_VOLUME_SOURCE: &[Field] = &[
    o("secretName", Go::Str),
    o("items", Go::List(&Go::Struct(KEY_TO_PATH))),
    p("defaultMode", Go::Int),
    p("optional", Go::Bool),
];
/// `NFSVolumeSource`.
pub(crate) const NFS_VOLUME_SOURCE: &[Field] = &[f("server", Go::Str), f("path", Go::Str), o("readOnly", Go::Bool)];
/// `LocalObjectReference`.
pub(crate) const LOCAL_OBJECT_REFERENCE: &[Field] = &[o("name", Go::Str)];
/// `ISCSIVolumeSource`.
pub(crate) const ISCSI_VOLUME_SOURCE: &[Field] = &[
    f("targetPortal", Go::Str),
    f("iqn", Go::Str),
    f("lun", Go::Int),
    o("iscsiInterface", Go::Str),
    o("fsType", Go::Str),
    o("readOnly", Go::Bool),
    o("portals", STRS),
    o("chapAuthDiscovery", Go::Bool),
    o("chapAuthSession", Go::Bool),
    p("secretRef", Go::Struct(LOCAL_OBJECT_REFERENCE)),
    p("initiatorName", Go::Str),
];
/// `GlusterfsVolumeSource`.
pub(crate) const GLUSTERFS_VOLUME_SOURCE: &[Field] =
    &[f("endpoints", Go::Str), f("path", Go::Str), o("readOnly", Go::Bool)];
/// `PersistentVolumeClaimVolumeSource`.
pub(crate) const PERSISTENT_VOLUME_CLAIM_VOLUME_SOURCE: &[Field] = &[f("claimName", Go::Str), o("readOnly", Go::Bool)];
/// `RBDVolumeSource`.
pub(crate) const RBD_VOLUME_SOURCE: &[Field] = &[
    f("monitors", STRS),
    f("image", Go::Str),
    o("fsType", Go::Str),
    o("pool", Go::Str),
    o("user", Go::Str),
    o("keyring", Go::Str),
    p("secretRef", Go::Struct(LOCAL_OBJECT_REFERENCE)),
    o("readOnly", Go::Bool),
];
/// `FlexVolumeSource`.
pub(crate) const FLEX_VOLUME_SOURCE: &[Field] = &[
    f("driver", Go::Str),
    o("fsType", Go::Str),
    p("secretRef", Go::Struct(LOCAL_OBJECT_REFERENCE)),
    o("readOnly", Go::Bool),
    o("options", Go::StrMap),
];
/// `CinderVolumeSource`.
pub(crate) const CINDER_VOLUME_SOURCE: &[Field] = &[
    f("volumeID", Go::Str),
    o("fsType", Go::Str),
    o("readOnly", Go::Bool),
    p("secretRef", Go::Struct(LOCAL_OBJECT_REFERENCE)),
];
/// `CephFSVolumeSource`.
pub(crate) const CEPHFS_VOLUME_SOURCE: &[Field] = &[
    f("monitors", STRS),
    o("path", Go::Str),
    o("user", Go::Str),
    o("secretFile", Go::Str),
    p("secretRef", Go::Struct(LOCAL_OBJECT_REFERENCE)),
    o("readOnly", Go::Bool),
];
/// `FlockerVolumeSource`.
pub(crate) const FLOCKER_VOLUME_SOURCE: &[Field] = &[o("datasetName", Go::Str), o("datasetUUID", Go::Str)];
/// `ObjectFieldSelector`.
pub(crate) const OBJECT_FIELD_SELECTOR: &[Field] = &[o("apiVersion", Go::Str), f("fieldPath", Go::Str)];
/// `ResourceFieldSelector`.
pub(crate) const RESOURCE_FIELD_SELECTOR: &[Field] =
    &[o("containerName", Go::Str), f("resource", Go::Str), o("divisor", Go::Quantity)];
/// `DownwardAPIVolumeFile`.
pub(crate) const DOWNWARDAPI_VOLUME_FILE: &[Field] = &[
    f("path", Go::Str),
    p("fieldRef", Go::Struct(OBJECT_FIELD_SELECTOR)),
    p("resourceFieldRef", Go::Struct(RESOURCE_FIELD_SELECTOR)),
    p("mode", Go::Int),
];
/// `DownwardAPIVolumeSource`.
pub(crate) const DOWNWARDAPI_VOLUME_SOURCE: &[Field] =
    &[o("items", Go::List(&Go::Struct(DOWNWARDAPI_VOLUME_FILE))), p("defaultMode", Go::Int)];
/// `FCVolumeSource`.
pub(crate) const FC_VOLUME_SOURCE: &[Field] =
    &[o("targetWWNs", STRS), p("lun", Go::Int), o("fsType", Go::Str), o("readOnly", Go::Bool), o("wwids", STRS)];
/// `AzureFileVolumeSource`.
pub(crate) const AZURE_FILE_VOLUME_SOURCE: &[Field] =
    &[f("secretName", Go::Str), f("shareName", Go::Str), o("readOnly", Go::Bool)];
/// `ConfigMapVolumeSource`.
pub(crate) const CONFIG_MAP_VOLUME_SOURCE: &[Field] = &[
    inline(LOCAL_OBJECT_REFERENCE),
    o("items", Go::List(&Go::Struct(KEY_TO_PATH))),
    p("defaultMode", Go::Int),
    p("optional", Go::Bool),
];
/// `VsphereVirtualDiskVolumeSource`.
pub(crate) const VSPHERE_VIRTUAL_DISK_VOLUME_SOURCE: &[Field] =
    &[f("volumePath", Go::Str), o("fsType", Go::Str), o("storagePolicyName", Go::Str), o("storagePolicyID", Go::Str)];
/// `QuobyteVolumeSource`.
pub(crate) const QUOBYTE_VOLUME_SOURCE: &[Field] = &[
    f("registry", Go::Str),
    f("volume", Go::Str),
    o("readOnly", Go::Bool),
    o("user", Go::Str),
    o("group", Go::Str),
    o("tenant", Go::Str),
];
/// `AzureDiskVolumeSource`.
pub(crate) const AZURE_DISK_VOLUME_SOURCE: &[Field] = &[
    f("diskName", Go::Str),
    f("diskURI", Go::Str),
    p("cachingMode", Go::Str),
    p("fsType", Go::Str),
    p("readOnly", Go::Bool),
    p("kind", Go::Str),
];
/// `PhotonPersistentDiskVolumeSource`.
pub(crate) const PHOTON_PERSISTENT_DISK_VOLUME_SOURCE: &[Field] = &[f("pdID", Go::Str), o("fsType", Go::Str)];
/// `SecretProjection`.
pub(crate) const SECRET_PROJECTION: &[Field] =
    &[inline(LOCAL_OBJECT_REFERENCE), o("items", Go::List(&Go::Struct(KEY_TO_PATH))), p("optional", Go::Bool)];
/// `DownwardAPIProjection`.
pub(crate) const DOWNWARDAPI_PROJECTION: &[Field] = &[o("items", Go::List(&Go::Struct(DOWNWARDAPI_VOLUME_FILE)))];
/// `ConfigMapProjection`.
pub(crate) const CONFIG_MAP_PROJECTION: &[Field] =
    &[inline(LOCAL_OBJECT_REFERENCE), o("items", Go::List(&Go::Struct(KEY_TO_PATH))), p("optional", Go::Bool)];
/// `ServiceAccountTokenProjection`.
pub(crate) const SERVICE_ACCOUNT_TOKEN_PROJECTION: &[Field] =
    &[o("audience", Go::Str), p("expirationSeconds", Go::Int), f("path", Go::Str)];
/// `metav1.LabelSelectorRequirement`.
pub(crate) const LABEL_SELECTOR_REQUIREMENT: &[Field] = &[f("key", Go::Str), f("operator", Go::Str), o("values", STRS)];
/// `metav1.LabelSelector`.
pub(crate) const LABEL_SELECTOR: &[Field] =
    &[o("matchLabels", Go::StrMap), o("matchExpressions", Go::List(&Go::Struct(LABEL_SELECTOR_REQUIREMENT)))];
/// `ClusterTrustBundleProjection`.
pub(crate) const CLUSTER_TRUST_BUNDLE_PROJECTION: &[Field] = &[
    p("name", Go::Str),
    p("signerName", Go::Str),
    p("labelSelector", Go::Struct(LABEL_SELECTOR)),
    p("optional", Go::Bool),
    f("path", Go::Str),
];
/// `VolumeProjection`.
pub(crate) const VOLUME_PROJECTION: &[Field] = &[
    p("secret", Go::Struct(SECRET_PROJECTION)),
    p("downwardAPI", Go::Struct(DOWNWARDAPI_PROJECTION)),
    p("configMap", Go::Struct(CONFIG_MAP_PROJECTION)),
    p("serviceAccountToken", Go::Struct(SERVICE_ACCOUNT_TOKEN_PROJECTION)),
    p("clusterTrustBundle", Go::Struct(CLUSTER_TRUST_BUNDLE_PROJECTION)),
];
/// `ProjectedVolumeSource`.
pub(crate) const PROJECTED_VOLUME_SOURCE: &[Field] =
    &[f("sources", Go::List(&Go::Struct(VOLUME_PROJECTION))), p("defaultMode", Go::Int)];
/// `PortworxVolumeSource`.
pub(crate) const PORTWORX_VOLUME_SOURCE: &[Field] =
    &[f("volumeID", Go::Str), o("fsType", Go::Str), o("readOnly", Go::Bool)];
/// `ScaleIOVolumeSource`.
pub(crate) const SCALEIO_VOLUME_SOURCE: &[Field] = &[
    f("gateway", Go::Str),
    f("system", Go::Str),
    np("secretRef", Go::Struct(LOCAL_OBJECT_REFERENCE)),
    o("sslEnabled", Go::Bool),
    o("protectionDomain", Go::Str),
    o("storagePool", Go::Str),
    o("storageMode", Go::Str),
    o("volumeName", Go::Str),
    o("fsType", Go::Str),
    o("readOnly", Go::Bool),
];
/// `StorageOSVolumeSource`.
pub(crate) const STORAGEOS_VOLUME_SOURCE: &[Field] = &[
    o("volumeName", Go::Str),
    o("volumeNamespace", Go::Str),
    o("fsType", Go::Str),
    o("readOnly", Go::Bool),
    p("secretRef", Go::Struct(LOCAL_OBJECT_REFERENCE)),
];
/// `CSIVolumeSource`.
pub(crate) const CSI_VOLUME_SOURCE: &[Field] = &[
    f("driver", Go::Str),
    p("readOnly", Go::Bool),
    p("fsType", Go::Str),
    o("volumeAttributes", Go::StrMap),
    p("nodePublishSecretRef", Go::Struct(LOCAL_OBJECT_REFERENCE)),
];
/// `VolumeResourceRequirements`.
pub(crate) const VOLUME_RESOURCE_REQUIREMENTS: &[Field] =
    &[o("limits", Go::QuantityMap), o("requests", Go::QuantityMap)];
/// `TypedLocalObjectReference`.
pub(crate) const TYPED_LOCAL_OBJECT_REFERENCE: &[Field] =
    &[np("apiGroup", Go::Str), f("kind", Go::Str), f("name", Go::Str)];
/// `TypedObjectReference`.
pub(crate) const TYPED_OBJECT_REFERENCE: &[Field] =
    &[np("apiGroup", Go::Str), f("kind", Go::Str), f("name", Go::Str), p("namespace", Go::Str)];
/// `PersistentVolumeClaimSpec`.
pub(crate) const PERSISTENT_VOLUME_CLAIM_SPEC: &[Field] = &[
    o("accessModes", STRS),
    p("selector", Go::Struct(LABEL_SELECTOR)),
    o("resources", Go::Struct(VOLUME_RESOURCE_REQUIREMENTS)),
    o("volumeName", Go::Str),
    p("storageClassName", Go::Str),
    p("volumeMode", Go::Str),
    p("dataSource", Go::Struct(TYPED_LOCAL_OBJECT_REFERENCE)),
    p("dataSourceRef", Go::Struct(TYPED_OBJECT_REFERENCE)),
    p("volumeAttributesClassName", Go::Str),
];
/// `PersistentVolumeClaimTemplate`.
pub(crate) const PERSISTENT_VOLUME_CLAIM_TEMPLATE: &[Field] =
    &[o("metadata", Go::Struct(OBJECT_META)), f("spec", Go::Struct(PERSISTENT_VOLUME_CLAIM_SPEC))];
/// `EphemeralVolumeSource`.
pub(crate) const EPHEMERAL_VOLUME_SOURCE: &[Field] =
    &[p("volumeClaimTemplate", Go::Struct(PERSISTENT_VOLUME_CLAIM_TEMPLATE))];
/// `ImageVolumeSource`.
pub(crate) const IMAGE_VOLUME_SOURCE: &[Field] = &[o("reference", Go::Str), o("pullPolicy", Go::Str)];
/// `VolumeSource`.
pub(crate) const VOLUME_SOURCE: &[Field] = &[
    p("hostPath", Go::Struct(HOST_PATH_VOLUME_SOURCE)),
    p("emptyDir", Go::Struct(EMPTY_DIR_VOLUME_SOURCE)),
    p("gcePersistentDisk", Go::Struct(GCE_PERSISTENT_DISK_VOLUME_SOURCE)),
    p("awsElasticBlockStore", Go::Struct(AWS_ELASTIC_BLOCK_STORE_VOLUME_SOURCE)),
    p("gitRepo", Go::Struct(GIT_REPO_VOLUME_SOURCE)),
    p("secret", Go::Struct(SECRET_VOLUME_SOURCE)),
    p("nfs", Go::Struct(NFS_VOLUME_SOURCE)),
    p("iscsi", Go::Struct(ISCSI_VOLUME_SOURCE)),
    p("glusterfs", Go::Struct(GLUSTERFS_VOLUME_SOURCE)),
    p("persistentVolumeClaim", Go::Struct(PERSISTENT_VOLUME_CLAIM_VOLUME_SOURCE)),
    p("rbd", Go::Struct(RBD_VOLUME_SOURCE)),
    p("flexVolume", Go::Struct(FLEX_VOLUME_SOURCE)),
    p("cinder", Go::Struct(CINDER_VOLUME_SOURCE)),
    p("cephfs", Go::Struct(CEPHFS_VOLUME_SOURCE)),
    p("flocker", Go::Struct(FLOCKER_VOLUME_SOURCE)),
    p("downwardAPI", Go::Struct(DOWNWARDAPI_VOLUME_SOURCE)),
    p("fc", Go::Struct(FC_VOLUME_SOURCE)),
    p("azureFile", Go::Struct(AZURE_FILE_VOLUME_SOURCE)),
    p("configMap", Go::Struct(CONFIG_MAP_VOLUME_SOURCE)),
    p("vsphereVolume", Go::Struct(VSPHERE_VIRTUAL_DISK_VOLUME_SOURCE)),
    p("quobyte", Go::Struct(QUOBYTE_VOLUME_SOURCE)),
    p("azureDisk", Go::Struct(AZURE_DISK_VOLUME_SOURCE)),
    p("photonPersistentDisk", Go::Struct(PHOTON_PERSISTENT_DISK_VOLUME_SOURCE)),
    p("projected", Go::Struct(PROJECTED_VOLUME_SOURCE)),
    p("portworxVolume", Go::Struct(PORTWORX_VOLUME_SOURCE)),
    p("scaleIO", Go::Struct(SCALEIO_VOLUME_SOURCE)),
    p("storageos", Go::Struct(STORAGEOS_VOLUME_SOURCE)),
    p("csi", Go::Struct(CSI_VOLUME_SOURCE)),
    p("ephemeral", Go::Struct(EPHEMERAL_VOLUME_SOURCE)),
    p("image", Go::Struct(IMAGE_VOLUME_SOURCE)),
];
/// `Volume`.
pub(crate) const VOLUME: &[Field] = &[f("name", Go::Str), inline(VOLUME_SOURCE)];
/// `ContainerPort`.
pub(crate) const CONTAINER_PORT: &[Field] = &[
    o("name", Go::Str),
    o("hostPort", Go::Int),
    f("containerPort", Go::Int),
    o("protocol", Go::Str),
    o("hostIP", Go::Str),
];
/// `ConfigMapEnvSource`.
pub(crate) const CONFIG_MAP_ENV_SOURCE: &[Field] = &[inline(LOCAL_OBJECT_REFERENCE), p("optional", Go::Bool)];
/// `SecretEnvSource`.
pub(crate) const SECRET_ENV_SOURCE: &[Field] = &[inline(LOCAL_OBJECT_REFERENCE), p("optional", Go::Bool)];
/// `EnvFromSource`.
pub(crate) const ENV_FROM_SOURCE: &[Field] = &[
    o("prefix", Go::Str),
    p("configMapRef", Go::Struct(CONFIG_MAP_ENV_SOURCE)),
    p("secretRef", Go::Struct(SECRET_ENV_SOURCE)),
];
/// `ConfigMapKeySelector`.
pub(crate) const CONFIG_MAP_KEY_SELECTOR: &[Field] =
    &[inline(LOCAL_OBJECT_REFERENCE), f("key", Go::Str), p("optional", Go::Bool)];
/// `SecretKeySelector`.
pub(crate) const SECRET_KEY_SELECTOR: &[Field] =
    &[inline(LOCAL_OBJECT_REFERENCE), f("key", Go::Str), p("optional", Go::Bool)];
/// `EnvVarSource`.
pub(crate) const ENV_VAR_SOURCE: &[Field] = &[
    p("fieldRef", Go::Struct(OBJECT_FIELD_SELECTOR)),
    p("resourceFieldRef", Go::Struct(RESOURCE_FIELD_SELECTOR)),
    p("configMapKeyRef", Go::Struct(CONFIG_MAP_KEY_SELECTOR)),
    p("secretKeyRef", Go::Struct(SECRET_KEY_SELECTOR)),
];
/// `EnvVar`.
pub(crate) const ENV_VAR: &[Field] =
    &[f("name", Go::Str), o("value", Go::Str), p("valueFrom", Go::Struct(ENV_VAR_SOURCE))];
/// `ResourceClaim`.
pub(crate) const RESOURCE_CLAIM: &[Field] = &[f("name", Go::Str), o("request", Go::Str)];
/// `ResourceRequirements`.
pub(crate) const RESOURCE_REQUIREMENTS: &[Field] =
    &[o("limits", Go::QuantityMap), o("requests", Go::QuantityMap), o("claims", Go::List(&Go::Struct(RESOURCE_CLAIM)))];
/// `ContainerResizePolicy`.
pub(crate) const CONTAINER_RESIZE_POLICY: &[Field] = &[f("resourceName", Go::Str), f("restartPolicy", Go::Str)];
/// `VolumeMount`.
pub(crate) const VOLUME_MOUNT: &[Field] = &[
    f("name", Go::Str),
    o("readOnly", Go::Bool),
    p("recursiveReadOnly", Go::Str),
    f("mountPath", Go::Str),
    o("subPath", Go::Str),
    p("mountPropagation", Go::Str),
    o("subPathExpr", Go::Str),
];
/// `VolumeDevice`.
pub(crate) const VOLUME_DEVICE: &[Field] = &[f("name", Go::Str), f("devicePath", Go::Str)];
/// `ExecAction`.
pub(crate) const EXEC_ACTION: &[Field] = &[o("command", STRS)];
/// `HTTPHeader`.
pub(crate) const HTTP_HEADER: &[Field] = &[f("name", Go::Str), f("value", Go::Str)];
/// `HTTPGetAction`.
pub(crate) const HTTP_GET_ACTION: &[Field] = &[
    o("path", Go::Str),
    f("port", Go::IntOrStr),
    o("host", Go::Str),
    o("scheme", Go::Str),
    o("httpHeaders", Go::List(&Go::Struct(HTTP_HEADER))),
];
/// `TCPSocketAction`.
pub(crate) const TCP_SOCKET_ACTION: &[Field] = &[f("port", Go::IntOrStr), o("host", Go::Str)];
/// `GRPCAction`.
pub(crate) const GRPC_ACTION: &[Field] = &[f("port", Go::Int), np("service", Go::Str)];
/// `ProbeHandler`.
pub(crate) const PROBE_HANDLER: &[Field] = &[
    p("exec", Go::Struct(EXEC_ACTION)),
    p("httpGet", Go::Struct(HTTP_GET_ACTION)),
    p("tcpSocket", Go::Struct(TCP_SOCKET_ACTION)),
    p("grpc", Go::Struct(GRPC_ACTION)),
];
/// `Probe`.
pub(crate) const PROBE: &[Field] = &[
    inline(PROBE_HANDLER),
    o("initialDelaySeconds", Go::Int),
    o("timeoutSeconds", Go::Int),
    o("periodSeconds", Go::Int),
    o("successThreshold", Go::Int),
    o("failureThreshold", Go::Int),
    p("terminationGracePeriodSeconds", Go::Int),
];
/// `SleepAction`.
pub(crate) const SLEEP_ACTION: &[Field] = &[f("seconds", Go::Int)];
/// `LifecycleHandler`.
pub(crate) const LIFECYCLE_HANDLER: &[Field] = &[
    p("exec", Go::Struct(EXEC_ACTION)),
    p("httpGet", Go::Struct(HTTP_GET_ACTION)),
    p("tcpSocket", Go::Struct(TCP_SOCKET_ACTION)),
    p("sleep", Go::Struct(SLEEP_ACTION)),
];
/// `Lifecycle`.
pub(crate) const LIFECYCLE: &[Field] =
    &[p("postStart", Go::Struct(LIFECYCLE_HANDLER)), p("preStop", Go::Struct(LIFECYCLE_HANDLER))];
/// `Capabilities`.
pub(crate) const CAPABILITIES: &[Field] = &[o("add", STRS), o("drop", STRS)];
/// `SELinuxOptions`.
pub(crate) const SE_LINUX_OPTIONS: &[Field] =
    &[o("user", Go::Str), o("role", Go::Str), o("type", Go::Str), o("level", Go::Str)];
/// `WindowsSecurityContextOptions`.
pub(crate) const WINDOWS_SECURITY_CONTEXT_OPTIONS: &[Field] = &[
    p("gmsaCredentialSpecName", Go::Str),
    p("gmsaCredentialSpec", Go::Str),
    p("runAsUserName", Go::Str),
    p("hostProcess", Go::Bool),
];
/// `SeccompProfile`.
pub(crate) const SECCOMP_PROFILE: &[Field] = &[f("type", Go::Str), p("localhostProfile", Go::Str)];
/// `AppArmorProfile`.
pub(crate) const APP_ARMOR_PROFILE: &[Field] = &[f("type", Go::Str), p("localhostProfile", Go::Str)];
/// `SecurityContext`.
pub(crate) const SECURITY_CONTEXT: &[Field] = &[
    p("capabilities", Go::Struct(CAPABILITIES)),
    p("privileged", Go::Bool),
    p("seLinuxOptions", Go::Struct(SE_LINUX_OPTIONS)),
    p("windowsOptions", Go::Struct(WINDOWS_SECURITY_CONTEXT_OPTIONS)),
    p("runAsUser", Go::Int),
    p("runAsGroup", Go::Int),
    p("runAsNonRoot", Go::Bool),
    p("readOnlyRootFilesystem", Go::Bool),
    p("allowPrivilegeEscalation", Go::Bool),
    p("procMount", Go::Str),
    p("seccompProfile", Go::Struct(SECCOMP_PROFILE)),
    p("appArmorProfile", Go::Struct(APP_ARMOR_PROFILE)),
];
/// `Container`.
pub(crate) const CONTAINER: &[Field] = &[
    f("name", Go::Str),
    o("image", Go::Str),
    o("command", STRS),
    o("args", STRS),
    o("workingDir", Go::Str),
    o("ports", Go::List(&Go::Struct(CONTAINER_PORT))),
    o("envFrom", Go::List(&Go::Struct(ENV_FROM_SOURCE))),
    o("env", Go::List(&Go::Struct(ENV_VAR))),
    o("resources", Go::Struct(RESOURCE_REQUIREMENTS)),
    o("resizePolicy", Go::List(&Go::Struct(CONTAINER_RESIZE_POLICY))),
    p("restartPolicy", Go::Str),
    o("volumeMounts", Go::List(&Go::Struct(VOLUME_MOUNT))),
    o("volumeDevices", Go::List(&Go::Struct(VOLUME_DEVICE))),
    p("livenessProbe", Go::Struct(PROBE)),
    p("readinessProbe", Go::Struct(PROBE)),
    p("startupProbe", Go::Struct(PROBE)),
    p("lifecycle", Go::Struct(LIFECYCLE)),
    o("terminationMessagePath", Go::Str),
    o("terminationMessagePolicy", Go::Str),
    o("imagePullPolicy", Go::Str),
    p("securityContext", Go::Struct(SECURITY_CONTEXT)),
    o("stdin", Go::Bool),
    o("stdinOnce", Go::Bool),
    o("tty", Go::Bool),
];
/// `EphemeralContainerCommon`.
pub(crate) const EPHEMERAL_CONTAINER_COMMON: &[Field] = &[
    f("name", Go::Str),
    o("image", Go::Str),
    o("command", STRS),
    o("args", STRS),
    o("workingDir", Go::Str),
    o("ports", Go::List(&Go::Struct(CONTAINER_PORT))),
    o("envFrom", Go::List(&Go::Struct(ENV_FROM_SOURCE))),
    o("env", Go::List(&Go::Struct(ENV_VAR))),
    o("resources", Go::Struct(RESOURCE_REQUIREMENTS)),
    o("resizePolicy", Go::List(&Go::Struct(CONTAINER_RESIZE_POLICY))),
    p("restartPolicy", Go::Str),
    o("volumeMounts", Go::List(&Go::Struct(VOLUME_MOUNT))),
    o("volumeDevices", Go::List(&Go::Struct(VOLUME_DEVICE))),
    p("livenessProbe", Go::Struct(PROBE)),
    p("readinessProbe", Go::Struct(PROBE)),
    p("startupProbe", Go::Struct(PROBE)),
    p("lifecycle", Go::Struct(LIFECYCLE)),
    o("terminationMessagePath", Go::Str),
    o("terminationMessagePolicy", Go::Str),
    o("imagePullPolicy", Go::Str),
    p("securityContext", Go::Struct(SECURITY_CONTEXT)),
    o("stdin", Go::Bool),
    o("stdinOnce", Go::Bool),
    o("tty", Go::Bool),
];
/// `EphemeralContainer`.
pub(crate) const EPHEMERAL_CONTAINER: &[Field] =
    &[inline(EPHEMERAL_CONTAINER_COMMON), o("targetContainerName", Go::Str)];
/// `Sysctl`.
pub(crate) const SYSCTL: &[Field] = &[f("name", Go::Str), f("value", Go::Str)];
/// `PodSecurityContext`.
pub(crate) const POD_SECURITY_CONTEXT: &[Field] = &[
    p("seLinuxOptions", Go::Struct(SE_LINUX_OPTIONS)),
    p("windowsOptions", Go::Struct(WINDOWS_SECURITY_CONTEXT_OPTIONS)),
    p("runAsUser", Go::Int),
    p("runAsGroup", Go::Int),
    p("runAsNonRoot", Go::Bool),
    o("supplementalGroups", Go::List(&Go::Int)),
    p("supplementalGroupsPolicy", Go::Str),
    p("fsGroup", Go::Int),
    o("sysctls", Go::List(&Go::Struct(SYSCTL))),
    p("fsGroupChangePolicy", Go::Str),
    p("seccompProfile", Go::Struct(SECCOMP_PROFILE)),
    p("appArmorProfile", Go::Struct(APP_ARMOR_PROFILE)),
    p("seLinuxChangePolicy", Go::Str),
];
/// `NodeSelectorRequirement`.
pub(crate) const NODE_SELECTOR_REQUIREMENT: &[Field] = &[f("key", Go::Str), f("operator", Go::Str), o("values", STRS)];
/// `NodeSelectorTerm`.
pub(crate) const NODE_SELECTOR_TERM: &[Field] = &[
    o("matchExpressions", Go::List(&Go::Struct(NODE_SELECTOR_REQUIREMENT))),
    o("matchFields", Go::List(&Go::Struct(NODE_SELECTOR_REQUIREMENT))),
];
/// `NodeSelector`.
pub(crate) const NODE_SELECTOR: &[Field] = &[f("nodeSelectorTerms", Go::List(&Go::Struct(NODE_SELECTOR_TERM)))];
/// `PreferredSchedulingTerm`.
pub(crate) const PREFERRED_SCHEDULING_TERM: &[Field] =
    &[f("weight", Go::Int), f("preference", Go::Struct(NODE_SELECTOR_TERM))];
/// `NodeAffinity`.
pub(crate) const NODE_AFFINITY: &[Field] = &[
    p("requiredDuringSchedulingIgnoredDuringExecution", Go::Struct(NODE_SELECTOR)),
    o("preferredDuringSchedulingIgnoredDuringExecution", Go::List(&Go::Struct(PREFERRED_SCHEDULING_TERM))),
];
/// `PodAffinityTerm`.
pub(crate) const POD_AFFINITY_TERM: &[Field] = &[
    p("labelSelector", Go::Struct(LABEL_SELECTOR)),
    o("namespaces", STRS),
    f("topologyKey", Go::Str),
    p("namespaceSelector", Go::Struct(LABEL_SELECTOR)),
    o("matchLabelKeys", STRS),
    o("mismatchLabelKeys", STRS),
];
/// `WeightedPodAffinityTerm`.
pub(crate) const WEIGHTED_POD_AFFINITY_TERM: &[Field] =
    &[f("weight", Go::Int), f("podAffinityTerm", Go::Struct(POD_AFFINITY_TERM))];
/// `PodAffinity`.
pub(crate) const POD_AFFINITY: &[Field] = &[
    o("requiredDuringSchedulingIgnoredDuringExecution", Go::List(&Go::Struct(POD_AFFINITY_TERM))),
    o("preferredDuringSchedulingIgnoredDuringExecution", Go::List(&Go::Struct(WEIGHTED_POD_AFFINITY_TERM))),
];
/// `PodAntiAffinity`.
pub(crate) const POD_ANTI_AFFINITY: &[Field] = &[
    o("requiredDuringSchedulingIgnoredDuringExecution", Go::List(&Go::Struct(POD_AFFINITY_TERM))),
    o("preferredDuringSchedulingIgnoredDuringExecution", Go::List(&Go::Struct(WEIGHTED_POD_AFFINITY_TERM))),
];
/// `Affinity`.
pub(crate) const AFFINITY: &[Field] = &[
    p("nodeAffinity", Go::Struct(NODE_AFFINITY)),
    p("podAffinity", Go::Struct(POD_AFFINITY)),
    p("podAntiAffinity", Go::Struct(POD_ANTI_AFFINITY)),
];
/// `Toleration`.
pub(crate) const TOLERATION: &[Field] = &[
    o("key", Go::Str),
    o("operator", Go::Str),
    o("value", Go::Str),
    o("effect", Go::Str),
    p("tolerationSeconds", Go::Int),
];
/// `HostAlias`.
pub(crate) const HOST_ALIAS: &[Field] = &[f("ip", Go::Str), o("hostnames", STRS)];
/// `PodDNSConfigOption`.
pub(crate) const PODDNS_CONFIG_OPTION: &[Field] = &[o("name", Go::Str), p("value", Go::Str)];
/// `PodDNSConfig`.
pub(crate) const PODDNS_CONFIG: &[Field] =
    &[o("nameservers", STRS), o("searches", STRS), o("options", Go::List(&Go::Struct(PODDNS_CONFIG_OPTION)))];
/// `PodReadinessGate`.
pub(crate) const POD_READINESS_GATE: &[Field] = &[f("conditionType", Go::Str)];
/// `TopologySpreadConstraint`.
pub(crate) const TOPOLOGY_SPREAD_CONSTRAINT: &[Field] = &[
    f("maxSkew", Go::Int),
    f("topologyKey", Go::Str),
    f("whenUnsatisfiable", Go::Str),
    p("labelSelector", Go::Struct(LABEL_SELECTOR)),
    p("minDomains", Go::Int),
    p("nodeAffinityPolicy", Go::Str),
    p("nodeTaintsPolicy", Go::Str),
    o("matchLabelKeys", STRS),
];
/// `PodOS`.
pub(crate) const PODOS: &[Field] = &[f("name", Go::Str)];
/// `PodSchedulingGate`.
pub(crate) const POD_SCHEDULING_GATE: &[Field] = &[f("name", Go::Str)];
/// `PodResourceClaim`.
pub(crate) const POD_RESOURCE_CLAIM: &[Field] =
    &[f("name", Go::Str), p("resourceClaimName", Go::Str), p("resourceClaimTemplateName", Go::Str)];
/// `PodSpec`.
pub(crate) const POD_SPEC: &[Field] = &[
    o("volumes", Go::List(&Go::Struct(VOLUME))),
    o("initContainers", Go::List(&Go::Struct(CONTAINER))),
    f("containers", Go::List(&Go::Struct(CONTAINER))),
    o("ephemeralContainers", Go::List(&Go::Struct(EPHEMERAL_CONTAINER))),
    o("restartPolicy", Go::Str),
    p("terminationGracePeriodSeconds", Go::Int),
    p("activeDeadlineSeconds", Go::Int),
    o("dnsPolicy", Go::Str),
    o("nodeSelector", Go::StrMap),
    o("serviceAccountName", Go::Str),
    o("serviceAccount", Go::Str),
    p("automountServiceAccountToken", Go::Bool),
    o("nodeName", Go::Str),
    o("hostNetwork", Go::Bool),
    o("hostPID", Go::Bool),
    o("hostIPC", Go::Bool),
    p("shareProcessNamespace", Go::Bool),
    p("securityContext", Go::Struct(POD_SECURITY_CONTEXT)),
    o("imagePullSecrets", Go::List(&Go::Struct(LOCAL_OBJECT_REFERENCE))),
    o("hostname", Go::Str),
    o("subdomain", Go::Str),
    p("affinity", Go::Struct(AFFINITY)),
    o("schedulerName", Go::Str),
    o("tolerations", Go::List(&Go::Struct(TOLERATION))),
    o("hostAliases", Go::List(&Go::Struct(HOST_ALIAS))),
    o("priorityClassName", Go::Str),
    p("priority", Go::Int),
    p("dnsConfig", Go::Struct(PODDNS_CONFIG)),
    o("readinessGates", Go::List(&Go::Struct(POD_READINESS_GATE))),
    p("runtimeClassName", Go::Str),
    p("enableServiceLinks", Go::Bool),
    p("preemptionPolicy", Go::Str),
    o("overhead", Go::QuantityMap),
    o("topologySpreadConstraints", Go::List(&Go::Struct(TOPOLOGY_SPREAD_CONSTRAINT))),
    p("setHostnameAsFQDN", Go::Bool),
    p("os", Go::Struct(PODOS)),
    p("hostUsers", Go::Bool),
    o("schedulingGates", Go::List(&Go::Struct(POD_SCHEDULING_GATE))),
    o("resourceClaims", Go::List(&Go::Struct(POD_RESOURCE_CLAIM))),
    p("resources", Go::Struct(RESOURCE_REQUIREMENTS)),
];
/// `PodTemplateSpec`.
pub(crate) const POD_TEMPLATE_SPEC: &[Field] =
    &[o("metadata", Go::Struct(OBJECT_META)), o("spec", Go::Struct(POD_SPEC))];
/// `metav1.TypeMeta`.
pub(crate) const TYPE_META: &[Field] = &[o("kind", Go::Str), o("apiVersion", Go::Str)];
/// `PersistentVolumeClaimCondition`.
pub(crate) const PERSISTENT_VOLUME_CLAIM_CONDITION: &[Field] = &[
    f("type", Go::Str),
    f("status", Go::Str),
    o("lastProbeTime", Go::Time),
    o("lastTransitionTime", Go::Time),
    o("reason", Go::Str),
    o("message", Go::Str),
];
/// `ModifyVolumeStatus`.
pub(crate) const MODIFY_VOLUME_STATUS: &[Field] =
    &[o("targetVolumeAttributesClassName", Go::Str), f("status", Go::Str)];
/// `PersistentVolumeClaimStatus`.
pub(crate) const PERSISTENT_VOLUME_CLAIM_STATUS: &[Field] = &[
    o("phase", Go::Str),
    o("accessModes", STRS),
    o("capacity", Go::QuantityMap),
    o("conditions", Go::List(&Go::Struct(PERSISTENT_VOLUME_CLAIM_CONDITION))),
    o("allocatedResources", Go::QuantityMap),
    o("allocatedResourceStatuses", Go::StrMap),
    p("currentVolumeAttributesClassName", Go::Str),
    p("modifyVolumeStatus", Go::Struct(MODIFY_VOLUME_STATUS)),
];
/// `PersistentVolumeClaim`.
pub(crate) const PERSISTENT_VOLUME_CLAIM: &[Field] = &[
    inline(TYPE_META),
    o("metadata", Go::Struct(OBJECT_META)),
    o("spec", Go::Struct(PERSISTENT_VOLUME_CLAIM_SPEC)),
    o("status", Go::Struct(PERSISTENT_VOLUME_CLAIM_STATUS)),
];
