package sharding

import (
	"context"
	"encoding/json"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
)

// writer patches the metadata of one object. Every patch the protocol makes
// carries the resourceVersion it was decided on, so a decision made on a
// stale view fails with a Conflict instead of overwriting a newer one.
type writer interface {
	patch(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string, data []byte) (*metav1.PartialObjectMetadata, error)
}

type metadataWriter struct{ c metadata.Interface }

func (w metadataWriter) patch(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string, data []byte) (*metav1.PartialObjectMetadata, error) {
	r := w.c.Resource(gvr)
	if namespace != "" {
		return r.Namespace(namespace).Patch(ctx, name, types.MergePatchType, data, metav1.PatchOptions{})
	}
	return r.Patch(ctx, name, types.MergePatchType, data, metav1.PatchOptions{})
}

// metaPatch is a JSON merge patch of labels and annotations preconditioned
// on resourceVersion; a nil value removes the key.
func metaPatch(resourceVersion string, labels, annotations map[string]*string) []byte {
	md := map[string]any{"resourceVersion": resourceVersion}
	if len(labels) > 0 {
		md["labels"] = labels
	}
	if len(annotations) > 0 {
		md["annotations"] = annotations
	}
	// Marshalling maps of strings cannot fail.
	b, _ := json.Marshal(map[string]any{"metadata": md})
	return b
}

func ptr(s string) *string { return &s }

// ignoreNotFound treats a patch of an owner that is gone as done: its
// delete event queues it again, and there is nothing left to label.
func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
