package fencehook

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ctrlkit/ctrlkit/internal/object"
)

// Recorder receives the writes made with a Reconcile's context. A write is named by the
// resource it went to, not by its Go type: an unstructured or metadata-only client writes many
// resources with one type, and a typed write shows in a metadata-only informer of the same
// resource.
type Recorder interface {
	// Written is called after a successful create, update, patch or apply of resource gr with
	// the object the API server returned.
	Written(gr schema.GroupResource, obj metav1.Object)
	// Deleted is called after a successful delete of the object of resource gr named
	// namespace/name.
	Deleted(gr schema.GroupResource, namespace, name string)
}

type key struct{}

// With returns ctx carrying r.
func With(ctx context.Context, r Recorder) context.Context {
	return context.WithValue(ctx, key{}, r)
}

// From returns the Recorder in ctx, or nil.
func From(ctx context.Context) Recorder {
	r, _ := ctx.Value(key{}).(Recorder)
	return r
}

// Written tells ctx's Recorder, if any, that obj of resource gr was written.
func Written(ctx context.Context, gr schema.GroupResource, obj metav1.Object) {
	if r := From(ctx); r != nil && !object.IsNil(obj) {
		r.Written(gr, obj)
	}
}

// Deleted tells ctx's Recorder, if any, that the object of resource gr named namespace/name was
// deleted.
func Deleted(ctx context.Context, gr schema.GroupResource, namespace, name string) {
	if r := From(ctx); r != nil {
		r.Deleted(gr, namespace, name)
	}
}
