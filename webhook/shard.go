package webhook

import (
	"context"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/sharding"
)

// NewShardAssigning returns the mutating webhook handler that assigns each new object of kind
// gvk, the sharded resource of a's ring, to its member at creation (sharding.Assigner), so the
// ring's sharder writes only when the membership changes. It acts on CREATE only: an update
// (a drain acknowledgement that removes the label among them) is the sharder's to follow, and is
// admitted untouched. A dry run is assigned as a creation would be. It decodes only the object's metadata, so it serves any resource, custom
// or built in; the patch it answers touches only the ring's label and annotations. Configure
// the webhook with failurePolicy Ignore and operations [CREATE]: an object created while no
// replica answers is assigned by the sharder instead. Errors match ErrInvalidHandler.
func NewShardAssigning(gvk schema.GroupVersionKind, a *sharding.Assigner) (*Admission[*metav1.PartialObjectMetadata], error) {
	if a == nil {
		return nil, fmt.Errorf("%w: nil sharding.Assigner for %s", ErrInvalidHandler, gvk)
	}
	return NewDefaulting[*metav1.PartialObjectMetadata](gvk, shardAssigning{a})
}

type shardAssigning struct{ a *sharding.Assigner }

func (s shardAssigning) Default(ctx context.Context, obj *metav1.PartialObjectMetadata) error {
	if req := RequestFrom(ctx); req == nil || req.Operation != admissionv1.Create {
		return nil
	}
	if member := s.a.Assign(obj); member != "" {
		klog.FromContext(ctx).V(4).Info("Assigned at admission", "member", member)
	}
	return nil
}
