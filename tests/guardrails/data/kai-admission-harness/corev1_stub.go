// Minimal stand-in for k8s.io/api/core/v1 (only the fields the KAI validator touches).
package v1

import "k8s.io/apimachinery/pkg/api/resource"

type ResourceName string
type ResourceList map[ResourceName]resource.Quantity
type ResourceRequirements struct{ Limits, Requests ResourceList }
type Container struct {
	Name      string
	Resources ResourceRequirements
}
type ObjectMeta struct {
	Name, Namespace     string
	Annotations, Labels map[string]string
}
type PodSpec struct{ Containers, InitContainers []Container }
type Pod struct {
	ObjectMeta
	Spec PodSpec
}
