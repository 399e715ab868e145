// Package pub declares the Go shape of kruise v1.9.0's apis/apps/pub types the UnitedDeployment
// templates embed (lifecycle.go, inplace_update.go, update_priority.go): fields, types and JSON
// tags, copied by hand because kruise's module is not served by the Go proxy.
package pub

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type Lifecycle struct {
	PreDelete     *LifecycleHook `json:"preDelete,omitempty"`
	InPlaceUpdate *LifecycleHook `json:"inPlaceUpdate,omitempty"`
	PreNormal     *LifecycleHook `json:"preNormal,omitempty"`
}

type LifecycleHook struct {
	LabelsHandler     map[string]string `json:"labelsHandler,omitempty"`
	FinalizersHandler []string          `json:"finalizersHandler,omitempty"`
	MarkPodNotReady   bool              `json:"markPodNotReady,omitempty"`
}

type InPlaceUpdateStrategy struct {
	GracePeriodSeconds int32 `json:"gracePeriodSeconds,omitempty"`
}

type UpdatePriorityStrategy struct {
	OrderPriority  []UpdatePriorityOrderTerm  `json:"orderPriority,omitempty"`
	WeightPriority []UpdatePriorityWeightTerm `json:"weightPriority,omitempty"`
}

type UpdatePriorityOrderTerm struct {
	OrderedKey string `json:"orderedKey"`
}

type UpdatePriorityWeightTerm struct {
	Weight        int32                `json:"weight"`
	MatchSelector metav1.LabelSelector `json:"matchSelector"`
}
