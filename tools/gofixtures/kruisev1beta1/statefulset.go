package v1beta1

// kruise v1.9.0 apis/apps/v1beta1/statefulset_types.go: the Advanced StatefulSet spec a
// UnitedDeployment's advancedStatefulSetTemplate embeds (fields, types and JSON tags).

import (
	pub "gofixtures/kruisepub"
	apps "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

type VolumeClaimUpdateStrategyType string

type VolumeClaimUpdateStrategy struct {
	Type VolumeClaimUpdateStrategyType `json:"type,omitempty"`
}

type StatefulSetUpdateStrategy struct {
	Type          apps.StatefulSetUpdateStrategyType `json:"type,omitempty"`
	RollingUpdate *RollingUpdateStatefulSetStrategy  `json:"rollingUpdate,omitempty"`
}

type PodUpdateStrategyType string

type RollingUpdateStatefulSetStrategy struct {
	Partition             *int32                     `json:"partition,omitempty"`
	MaxUnavailable        *intstr.IntOrString        `json:"maxUnavailable,omitempty"`
	PodUpdatePolicy       PodUpdateStrategyType      `json:"podUpdatePolicy,omitempty"`
	Paused                bool                       `json:"paused,omitempty"`
	UnorderedUpdate       *UnorderedUpdateStrategy   `json:"unorderedUpdate,omitempty"`
	InPlaceUpdateStrategy *pub.InPlaceUpdateStrategy `json:"inPlaceUpdateStrategy,omitempty"`
	MinReadySeconds       *int32                     `json:"minReadySeconds,omitempty"`
}

type UnorderedUpdateStrategy struct {
	PriorityStrategy *pub.UpdatePriorityStrategy `json:"priorityStrategy,omitempty"`
}

type PersistentVolumeClaimRetentionPolicyType string

type StatefulSetPersistentVolumeClaimRetentionPolicy struct {
	WhenDeleted PersistentVolumeClaimRetentionPolicyType `json:"whenDeleted,omitempty"`
	WhenScaled  PersistentVolumeClaimRetentionPolicyType `json:"whenScaled,omitempty"`
}

type StatefulSetOrdinals struct {
	Start int32 `json:"start" protobuf:"varint,1,opt,name=start"`
}

type StatefulSetScaleStrategy struct {
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
}

type StatefulSetSpec struct {
	Replicas                             *int32                                           `json:"replicas,omitempty"`
	Selector                             *metav1.LabelSelector                            `json:"selector"`
	Template                             v1.PodTemplateSpec                               `json:"template"`
	VolumeClaimTemplates                 []v1.PersistentVolumeClaim                       `json:"volumeClaimTemplates,omitempty"`
	VolumeClaimUpdateStrategy            VolumeClaimUpdateStrategy                        `json:"volumeClaimUpdateStrategy,omitempty"`
	ServiceName                          string                                           `json:"serviceName,omitempty"`
	PodManagementPolicy                  apps.PodManagementPolicyType                     `json:"podManagementPolicy,omitempty"`
	UpdateStrategy                       StatefulSetUpdateStrategy                        `json:"updateStrategy,omitempty"`
	RevisionHistoryLimit                 *int32                                           `json:"revisionHistoryLimit,omitempty"`
	ReserveOrdinals                      []intstr.IntOrString                             `json:"reserveOrdinals,omitempty"`
	Lifecycle                            *pub.Lifecycle                                   `json:"lifecycle,omitempty"`
	ScaleStrategy                        *StatefulSetScaleStrategy                        `json:"scaleStrategy,omitempty"`
	PersistentVolumeClaimRetentionPolicy *StatefulSetPersistentVolumeClaimRetentionPolicy `json:"persistentVolumeClaimRetentionPolicy,omitempty"`
	Ordinals                             *StatefulSetOrdinals                             `json:"ordinals,omitempty"`
}
