package client

import (
	"cmp"
	"context"
	"fmt"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ctrlkit/ctrlkit/internal/object"
)

// WithFieldOwner returns a Client that writes through c as field manager owner: Create,
// Update, UpdateStatus, Patch and Apply (and so ApplyConfig and every helper of this package)
// send owner as their FieldManager unless the call names one. Server-side apply requires a
// field manager; the other writes record theirs in managedFields, so `kubectl get -o yaml
// --show-managed-fields` tells this controller's fields from a person's. It is
// controller-runtime's client.WithFieldOwner. owner must not be empty.
func WithFieldOwner[T Object](c Client[T], owner string) (Client[T], error) {
	switch {
	case object.IsNil(c):
		return nil, fmt.Errorf("client: field owner %q for %s: nil client: %w", owner, reflect.TypeFor[T](), ErrInvalidInput)
	case owner == "":
		return nil, fmt.Errorf("client: field owner for %s: empty owner: %w", resourceName(c.Resource()), ErrInvalidInput)
	}
	return &fieldOwned[T]{Client: c, owner: owner}, nil
}

// fieldOwned is WithFieldOwner's client: reads pass through, writes get the owner.
type fieldOwned[T Object] struct {
	Client[T]
	owner string
}

// fieldOwner lets ApplyConfig take the owner of a client that has one.
func (c *fieldOwned[T]) fieldOwner() string { return c.owner }

func (c *fieldOwned[T]) Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error) {
	opts.FieldManager = cmp.Or(opts.FieldManager, c.owner)
	return c.Client.Create(ctx, obj, opts)
}

func (c *fieldOwned[T]) Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error) {
	opts.FieldManager = cmp.Or(opts.FieldManager, c.owner)
	return c.Client.Update(ctx, obj, opts)
}

func (c *fieldOwned[T]) UpdateStatus(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error) {
	opts.FieldManager = cmp.Or(opts.FieldManager, c.owner)
	return c.Client.UpdateStatus(ctx, obj, opts)
}

func (c *fieldOwned[T]) Patch(ctx context.Context, namespace, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error) {
	opts.FieldManager = cmp.Or(opts.FieldManager, c.owner)
	return c.Client.Patch(ctx, namespace, name, pt, data, opts, subresources...)
}

func (c *fieldOwned[T]) Apply(ctx context.Context, obj T, opts metav1.ApplyOptions, subresources ...string) (T, error) {
	opts.FieldManager = cmp.Or(opts.FieldManager, c.owner)
	return c.Client.Apply(ctx, obj, opts, subresources...)
}
