package sharding

import (
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The sharder's caches keep what it reads of an object and nothing else.
func TestSlimMetadataKeepsWhatTheSharderReads(t *testing.T) {
	now := metav1.Now()
	isController := true
	ctrl := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "rs-uid", Controller: &isController}
	in := &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "web-1", GenerateName: "web-", Namespace: "default", UID: "pod-uid", ResourceVersion: "42",
			Generation: 3, CreationTimestamp: now, DeletionTimestamp: &now, Finalizers: []string{"f"},
			Labels:      map[string]string{"app": "web", Label("pods"): "m-1", DrainLabel("pods"): "true", Label("other"): "m-2"},
			Annotations: map[string]string{"note": "x", HolderAnnotation("pods"): "m-1_abc", barrierAnnotation("pods"): "pods=7"},
			OwnerReferences: []metav1.OwnerReference{
				{APIVersion: "v1", Kind: "ConfigMap", Name: "cfg", UID: "cm-uid"},
				ctrl,
			},
		},
	}
	out, err := slimMetadata("pods")(in)
	require.NoError(t, err)
	require.Equal(t, &metav1.PartialObjectMetadata{
		TypeMeta: in.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name: "web-1", Namespace: "default", UID: "pod-uid", ResourceVersion: "42", DeletionTimestamp: &now,
			Labels:          map[string]string{Label("pods"): "m-1", DrainLabel("pods"): "true"},
			Annotations:     map[string]string{HolderAnnotation("pods"): "m-1_abc", barrierAnnotation("pods"): "pods=7"},
			OwnerReferences: []metav1.OwnerReference{ctrl},
		},
	}, out)

	bare, err := slimMetadata("pods")(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "x", Labels: map[string]string{"app": "web"}}})
	require.NoError(t, err)
	require.Nil(t, bare.Labels, "no ring labels: no map")
	require.Nil(t, bare.Annotations)
	require.Nil(t, bare.OwnerReferences)
}
