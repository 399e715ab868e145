// Package v1beta1 declares the Go shape of kruise v1.9.0's apps/v1beta1 ImagePullJobTemplate
// (apis/apps/v1beta1/imagepulljob_types.go, broadcastjob_types.go): the fields, their order,
// types and JSON tags, which is all spew prints. kruise's module is not served by the Go proxy,
// so the shape is declared here, by hand, from those files; the package name is kruise's, so
// reflection prints the same type names (`v1beta1.ImagePullJobTemplate`).
package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

type ImagePullPolicy string

type CompletionPolicyType string

type SandboxConfig struct {
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type PullPolicy struct {
	TimeoutSeconds *int32 `json:"timeoutSeconds,omitempty"`
	BackoffLimit   *int32 `json:"backoffLimit,omitempty"`
}

type CompletionPolicy struct {
	Type                    CompletionPolicyType `json:"type,omitempty"`
	ActiveDeadlineSeconds   *int64               `json:"activeDeadlineSeconds,omitempty"`
	TTLSecondsAfterFinished *int32               `json:"ttlSecondsAfterFinished,omitempty"`
}

type ImagePullJobPodSelector struct {
	metav1.LabelSelector `json:",inline"`
}

type ImagePullJobNodeSelector struct {
	Names                []string `json:"names,omitempty"`
	metav1.LabelSelector `json:",inline"`
}

type ImagePullJobTemplate struct {
	PullSecrets      []string                  `json:"pullSecrets,omitempty"`
	Selector         *ImagePullJobNodeSelector `json:"selector,omitempty"`
	PodSelector      *ImagePullJobPodSelector  `json:"podSelector,omitempty"`
	Parallelism      *intstr.IntOrString       `json:"parallelism,omitempty"`
	PullPolicy       *PullPolicy               `json:"pullPolicy,omitempty"`
	CompletionPolicy CompletionPolicy          `json:"completionPolicy"`
	SandboxConfig    *SandboxConfig            `json:"sandboxConfig,omitempty"`
	ImagePullPolicy  ImagePullPolicy           `json:"imagePullPolicy,omitempty"`
}
