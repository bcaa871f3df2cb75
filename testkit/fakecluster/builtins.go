package fakecluster

import (
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
)

// generationKinds are the built-in kinds whose API-server strategy sets metadata.generation (1 on
// create, +1 when the desired state changes); every other built-in kind keeps generation 0, as
// ConfigMaps and Secrets do on kube-apiserver. Custom resources always track it.
var generationKinds = map[schema.GroupKind]bool{
	{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicy"}:          true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicyBinding"}:   true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}:     true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"}:        true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicyBinding"}: true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}:   true,
	{Group: "apps", Kind: "DaemonSet"}:                                                true,
	{Group: "apps", Kind: "Deployment"}:                                               true,
	{Group: "apps", Kind: "ReplicaSet"}:                                               true,
	{Group: "apps", Kind: "StatefulSet"}:                                              true,
	{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"}:                           true,
	{Group: "batch", Kind: "CronJob"}:                                                 true,
	{Group: "batch", Kind: "Job"}:                                                     true,
	{Kind: "Pod"}:                                                                     true,
	{Kind: "PodTemplate"}:                                                             true,
	{Kind: "ReplicationController"}:                                                   true,
	{Group: "discovery.k8s.io", Kind: "EndpointSlice"}:                                true,
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "FlowSchema"}:                       true,
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "PriorityLevelConfiguration"}:       true,
	{Group: "networking.k8s.io", Kind: "Ingress"}:                                     true,
	{Group: "networking.k8s.io", Kind: "IngressClass"}:                                true,
	{Group: "networking.k8s.io", Kind: "NetworkPolicy"}:                               true,
	{Group: "policy", Kind: "PodDisruptionBudget"}:                                    true,
	{Group: "resource.k8s.io", Kind: "DeviceClass"}:                                   true,
	{Group: "resource.k8s.io", Kind: "DeviceTaintRule"}:                               true,
	{Group: "resource.k8s.io", Kind: "ResourceSlice"}:                                 true,
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"}:                               true,
}

// conditionalUpdateKinds are the built-in kinds whose strategy refuses an update without a
// resourceVersion (AllowUnconditionalUpdate false), as every custom resource's does.
var conditionalUpdateKinds = map[schema.GroupKind]bool{
	{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicy"}:          true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicyBinding"}:   true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}:     true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"}:        true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicyBinding"}: true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}:   true,
	{Group: "certificates.k8s.io", Kind: "ClusterTrustBundle"}:                        true,
	{Group: "certificates.k8s.io", Kind: "PodCertificateRequest"}:                     true,
	{Group: "coordination.k8s.io", Kind: "Lease"}:                                     true,
	{Group: "coordination.k8s.io", Kind: "LeaseCandidate"}:                            true,
	{Group: "node.k8s.io", Kind: "RuntimeClass"}:                                      true,
	{Group: "policy", Kind: "PodDisruptionBudget"}:                                    true,
	{Group: "storage.k8s.io", Kind: "CSIDriver"}:                                      true,
	{Group: "storage.k8s.io", Kind: "CSINode"}:                                        true,
	{Group: "storage.k8s.io", Kind: "CSIStorageCapacity"}:                             true,
	{Group: "storage.k8s.io", Kind: "VolumeAttachment"}:                               true,
}

// builtinInfo is what the cluster knows of a kind of client-go's scheme: a status subresource
// when its Go type has a Status field (ConfigMaps and Secrets have none, so their "status" is
// a 404 as on an API server), generation as its strategy keeps it.
func builtinInfo(gvk schema.GroupVersionKind, namespaced bool) kindInfo {
	ki := kindInfo{gvk: gvk, namespaced: namespaced, typed: true, generation: generationKinds[gvk.GroupKind()],
		conditionalUpdate: conditionalUpdateKinds[gvk.GroupKind()]}
	if t, ok := scheme.Scheme.AllKnownTypes()[gvk]; ok && t.Kind() == reflect.Struct {
		_, ki.status = t.FieldByName("Status")
	}
	// Deployment's strategy counts annotations as desired state: they are copied to its
	// ReplicaSets.
	ki.annotationsInGeneration = gvk.GroupKind() == schema.GroupKind{Group: "apps", Kind: "Deployment"}
	return ki
}

// convertOnWrite does what the API server's conversion and defaulting do to a built-in object
// on every write, for the kinds where a controller sees it: a Secret's stringData is merged into
// data (and not stored), and its type defaults to Opaque.
func convertOnWrite(obj runtime.Object) {
	if s, ok := obj.(*corev1.Secret); ok {
		if len(s.StringData) > 0 {
			if s.Data == nil {
				s.Data = make(map[string][]byte, len(s.StringData))
			}
			for k, v := range s.StringData {
				s.Data[k] = []byte(v)
			}
			s.StringData = nil
		}
		if s.Type == "" {
			s.Type = corev1.SecretTypeOpaque
		}
	}
}
