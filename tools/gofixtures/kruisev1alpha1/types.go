// Package v1alpha1 declares the Go shape of kruise v1.9.0's apps/v1alpha1 UnitedDeployment
// template (apis/apps/v1alpha1/uniteddeployment_types.go) and the CloneSet spec it embeds
// (cloneset_types.go, scatter_strategy.go): fields, types and JSON tags, copied by hand because
// kruise's module is not served by the Go proxy.
package v1alpha1

import (
	pub "gofixtures/kruisepub"
	v1beta1 "gofixtures/kruisev1beta1"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

type SubsetTemplate struct {
	StatefulSetTemplate         *StatefulSetTemplateSpec         `json:"statefulSetTemplate,omitempty"`
	AdvancedStatefulSetTemplate *AdvancedStatefulSetTemplateSpec `json:"advancedStatefulSetTemplate,omitempty"`
	CloneSetTemplate            *CloneSetTemplateSpec            `json:"cloneSetTemplate,omitempty"`
	DeploymentTemplate          *DeploymentTemplateSpec          `json:"deploymentTemplate,omitempty"`
}

type StatefulSetTemplateSpec struct {
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              appsv1.StatefulSetSpec `json:"spec"`
}

type AdvancedStatefulSetTemplateSpec struct {
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              v1beta1.StatefulSetSpec `json:"spec"`
}

type CloneSetTemplateSpec struct {
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              CloneSetSpec `json:"spec"`
}

type DeploymentTemplateSpec struct {
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              appsv1.DeploymentSpec `json:"spec"`
}

type CloneSetSpec struct {
	Replicas                *int32                     `json:"replicas,omitempty"`
	Selector                *metav1.LabelSelector      `json:"selector"`
	Template                v1.PodTemplateSpec         `json:"template"`
	VolumeClaimTemplates    []v1.PersistentVolumeClaim `json:"volumeClaimTemplates,omitempty"`
	ScaleStrategy           CloneSetScaleStrategy      `json:"scaleStrategy,omitempty"`
	UpdateStrategy          CloneSetUpdateStrategy     `json:"updateStrategy,omitempty"`
	RevisionHistoryLimit    *int32                     `json:"revisionHistoryLimit,omitempty"`
	MinReadySeconds         int32                      `json:"minReadySeconds,omitempty"`
	Lifecycle               *pub.Lifecycle             `json:"lifecycle,omitempty"`
	ProgressDeadlineSeconds *int32                     `json:"progressDeadlineSeconds,omitempty"`
}

type CloneSetScaleStrategy struct {
	PodsToDelete    []string            `json:"podsToDelete,omitempty"`
	MaxUnavailable  *intstr.IntOrString `json:"maxUnavailable,omitempty"`
	DisablePVCReuse bool                `json:"disablePVCReuse,omitempty"`
}

type CloneSetUpdateStrategyType string

type CloneSetUpdateStrategy struct {
	Type                  CloneSetUpdateStrategyType  `json:"type,omitempty"`
	Partition             *intstr.IntOrString         `json:"partition,omitempty"`
	MaxUnavailable        *intstr.IntOrString         `json:"maxUnavailable,omitempty"`
	MaxSurge              *intstr.IntOrString         `json:"maxSurge,omitempty"`
	Paused                bool                        `json:"paused,omitempty"`
	PriorityStrategy      *pub.UpdatePriorityStrategy `json:"priorityStrategy,omitempty"`
	ScatterStrategy       UpdateScatterStrategy       `json:"scatterStrategy,omitempty"`
	InPlaceUpdateStrategy *pub.InPlaceUpdateStrategy  `json:"inPlaceUpdateStrategy,omitempty"`
}

type UpdateScatterStrategy []UpdateScatterTerm

type UpdateScatterTerm struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}
