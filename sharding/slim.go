package sharding

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// slimMetadata returns the transform of the sharder's metadata informers:
// it keeps of each object what the sharder reads (name, namespace, UID,
// resourceVersion, deletion timestamp, the ring's labels and annotations,
// the controller reference) and drops the rest. The sharder caches every
// object of the ring, the sharded resource and its children alike, so this
// is the one cache that does not shrink as members join; the ring's labels
// and annotations take few distinct values, which the informer's sharing of
// equal sub-objects then stores once for all objects.
func slimMetadata(ring string) func(*metav1.PartialObjectMetadata) (*metav1.PartialObjectMetadata, error) {
	labels := []string{Label(ring), DrainLabel(ring)}
	annotations := []string{HolderAnnotation(ring), barrierAnnotation(ring)}
	return func(m *metav1.PartialObjectMetadata) (*metav1.PartialObjectMetadata, error) {
		out := &metav1.PartialObjectMetadata{
			TypeMeta: m.TypeMeta,
			ObjectMeta: metav1.ObjectMeta{
				Name:              m.Name,
				Namespace:         m.Namespace,
				UID:               m.UID,
				ResourceVersion:   m.ResourceVersion,
				DeletionTimestamp: m.DeletionTimestamp,
				Labels:            only(m.Labels, labels),
				Annotations:       only(m.Annotations, annotations),
			},
		}
		if ref := metav1.GetControllerOfNoCopy(m); ref != nil {
			out.OwnerReferences = []metav1.OwnerReference{*ref}
		}
		return out, nil
	}
}

// only returns the entries of m under keys, nil when there are none.
func only(m map[string]string, keys []string) map[string]string {
	var out map[string]string
	for _, k := range keys {
		if v, ok := m[k]; ok {
			if out == nil {
				out = make(map[string]string, len(keys))
			}
			out[k] = v
		}
	}
	return out
}
