// Harness: runs KAI v0.17.0's real ValidateGpuRequests (binder/plugins/gpusharing/gpu-request)
// and RequestsGPUFraction (common/resources) on annotation/limit cases, with the admission
// plugin's gpuSharing gate (admission/webhook/v1alpha2/gpusharing/gpu_sharing.go:40-48) re-stated.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"

	gpurequest "github.com/kai-scheduler/KAI-scheduler/pkg/binder/plugins/gpusharing/gpu-request"
	"github.com/kai-scheduler/KAI-scheduler/pkg/common/resources"
	"k8s.io/apimachinery/pkg/api/resource"
	v1 "k8s.io/api/core/v1"
)

type tc struct {
	Name        string            `json:"name"`
	GpuSharing  bool              `json:"gpuSharing"`
	Ann         map[string]string `json:"annotations"`
	Limit       string            `json:"gpuLimit,omitempty"`     // nvidia.com/gpu limit on containers[0]
	InitLimit   string            `json:"initGpuLimit,omitempty"` // nvidia.com/gpu limit on initContainers[0]
	ReqOnly     string            `json:"gpuRequestOnly,omitempty"`
}

func validate(c tc) error {
	pod := &v1.Pod{ObjectMeta: v1.ObjectMeta{Name: c.Name, Namespace: "ns", Annotations: c.Ann}}
	ctr := v1.Container{Name: "main", Resources: v1.ResourceRequirements{Limits: v1.ResourceList{}, Requests: v1.ResourceList{}}}
	if c.Limit != "" {
		ctr.Resources.Limits["nvidia.com/gpu"] = resource.MustParse(c.Limit)
	}
	if c.ReqOnly != "" {
		ctr.Resources.Requests["nvidia.com/gpu"] = resource.MustParse(c.ReqOnly)
	}
	pod.Spec.Containers = []v1.Container{ctr}
	if c.InitLimit != "" {
		pod.Spec.InitContainers = []v1.Container{{Name: "init", Resources: v1.ResourceRequirements{Limits: v1.ResourceList{"nvidia.com/gpu": resource.MustParse(c.InitLimit)}}}}
	}
	if !c.GpuSharing && resources.RequestsGPUFraction(pod) {
		return fmt.Errorf("attempting to create a pod %s/%s with gpu sharing request, while GPU sharing is disabled", pod.Namespace, pod.Name)
	}
	return gpurequest.ValidateGpuRequests(pod)
}

func main() {
	var cases []tc
	if err := json.NewDecoder(os.Stdin).Decode(&cases); err != nil {
		panic(err)
	}
	type out struct {
		tc
		Accepted   bool   `json:"accepted"`
		Error      string `json:"error,omitempty"`
		ParseFloat string `json:"parseFloat,omitempty"`
		ParseQty   string `json:"parseQuantity,omitempty"`
	}
	var res []out
	for _, c := range cases {
		o := out{tc: c}
		if err := validate(c); err != nil {
			o.Error = err.Error()
		} else {
			o.Accepted = true
		}
		if f, ok := c.Ann["gpu-fraction"]; ok {
			v, err := strconv.ParseFloat(f, 64)
			if err != nil {
				o.ParseFloat = "error"
			} else {
				o.ParseFloat = strconv.FormatFloat(v, 'g', -1, 64)
			}
			q, err := resource.ParseQuantity(f)
			if err != nil {
				o.ParseQty = "error: " + err.Error()
			} else {
				o.ParseQty = q.String()
			}
		}
		res = append(res, o)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	enc.Encode(res)
}
