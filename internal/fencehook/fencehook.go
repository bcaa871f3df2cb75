package fencehook

import (
	"context"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/internal/object"
)

// Recorder receives the writes made with a Reconcile's context.
type Recorder interface {
	// Written is called after a successful create, update, patch or apply with the object the
	// API server returned.
	Written(obj metav1.Object)
	// Deleted is called after a successful delete of the object of Go type t (the client's
	// object type) named namespace/name.
	Deleted(t reflect.Type, namespace, name string)
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

// Written tells ctx's Recorder, if any, that obj was written.
func Written(ctx context.Context, obj metav1.Object) {
	if r := From(ctx); r != nil && !object.IsNil(obj) {
		r.Written(obj)
	}
}

// Deleted tells ctx's Recorder, if any, that the object of type t named namespace/name was
// deleted.
func Deleted(ctx context.Context, t reflect.Type, namespace, name string) {
	if r := From(ctx); r != nil {
		r.Deleted(t, namespace, name)
	}
}
