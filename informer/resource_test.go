package informer

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/tools/record"
)

// widget is a custom resource type as a user would write it (deepcopy by
// hand here).
type widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              widgetSpec `json:"spec"`
}

type widgetSpec struct {
	Size int `json:"size"`
}

func (w *widget) DeepCopyObject() runtime.Object {
	c := *w
	w.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

var widgetsGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

func unstructuredWidget(ns, name string, size any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1",
		"kind":       "Widget",
		"metadata": map[string]any{
			"namespace": ns, "name": name, "resourceVersion": "1",
			"managedFields": []any{map[string]any{"manager": "kubectl", "operation": "Apply"}},
		},
		"spec": map[string]any{"size": size},
	}}
}

func newDynamic(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{widgetsGVR: "WidgetList"}, objs...)
}

func TestForResourceConvertsOnceOnEntry(t *testing.T) {
	ctx := context.Background()
	sink := &errorSink{}
	dyn := newDynamic(unstructuredWidget("a", "small", int64(1)), unstructuredWidget("a", "broken", "not a number"))
	f := NewFactory(newClient(), Options{
		DynamicClient: dyn,
		ErrorHandler:  sink.handle,
		ByObject: []ObjectOverride{ByObject(ObjectOptions[*widget]{Transform: func(w *widget) (*widget, error) {
			w.Annotations = map[string]string{"seen-by": "transform"}
			return w, nil
		}})},
	})
	widgets, err := ForResource[*widget](f, widgetsGVR)
	require.NoError(t, err)
	again, err := ForResource[*widget](f, widgetsGVR)
	require.NoError(t, err)
	assert.Same(t, widgets.(*sharedInformer[*widget]), again.(*sharedInformer[*widget]))
	assert.Equal(t, "widgets.example.com", widgets.Name())
	log := newEventLog[*widget]()
	_, err = widgets.AddHandler(log)
	require.NoError(t, err)
	startFactory(t, f)

	// The broken one is reported with its key and skipped everywhere.
	assert.Equal(t, event{op: "add", key: "a/small", initial: true}, log.next(t))
	w, err := widgets.Lister().Get("a", "small")
	require.NoError(t, err)
	assert.Equal(t, 1, w.Spec.Size)
	assert.Nil(t, w.ManagedFields)
	assert.Equal(t, "transform", w.Annotations["seen-by"], "per-type transforms run after conversion")
	all, err := widgets.Lister().List(nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"a/small"}, names(all))
	_, err = widgets.Lister().Get("a", "broken")
	require.ErrorIs(t, err, ErrUnexpectedType)
	errs := sink.all()
	require.NotEmpty(t, errs)
	assert.ErrorContains(t, errs[0], "informer widgets.example.com: convert a/broken to *github.com/ctrlkit/ctrlkit/informer.widget")
	assert.ErrorContains(t, errs[0], `spec.size: expected int, got string "not a number"`, "the converter names the field")

	// Live events arrive typed.
	_, err = dyn.Resource(widgetsGVR).Namespace("a").Create(ctx, unstructuredWidget("a", "big", int64(9)), metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, event{op: "add", key: "a/big"}, log.next(t))
	require.NoError(t, dyn.Resource(widgetsGVR).Namespace("a").Delete(ctx, "big", metav1.DeleteOptions{}))
	assert.Equal(t, event{op: "delete", key: "a/big"}, log.next(t))
	_, err = widgets.Lister().Get("a", "big")
	assert.True(t, apierrors.IsNotFound(err))
}

func TestForResourceUnstructuredAndErrors(t *testing.T) {
	f := NewFactory(newClient(), Options{DynamicClient: newDynamic(unstructuredWidget("a", "w", int64(2)))})
	raw, err := ForResource[*unstructured.Unstructured](f, widgetsGVR)
	require.NoError(t, err)
	// The same resource as another Go type would need a second cache.
	_, err = ForResource[*widget](f, widgetsGVR)
	require.ErrorIs(t, err, ErrUnsupportedType)
	assert.Contains(t, err.Error(), "already serves")
	startFactory(t, f)
	u, err := raw.Lister().Get("a", "w")
	require.NoError(t, err)
	assert.Nil(t, u.GetManagedFields())
	size, _, _ := unstructured.NestedInt64(u.Object, "spec", "size")
	assert.Equal(t, int64(2), size)

	_, err = ForResource[*widget](NewFactory(newClient(), Options{}), widgetsGVR)
	require.ErrorIs(t, err, ErrNoClient)
	_, err = ForResource[*widget](f, schema.GroupVersionResource{Group: "example.com", Resource: "widgets"})
	require.ErrorContains(t, err, "needs a version")
}

// A custom resource that fails conversion is invisible to typed handlers; once
// a later version converts, they see it as an add, and its deletion after a
// failed version still reaches them with the key.
func TestForResourceConversionRecoveryAndDelete(t *testing.T) {
	ctx := context.Background()
	sink := &errorSink{}
	dyn := newDynamic()
	events := record.NewFakeRecorder(10)
	f := NewFactory(newClient(), Options{DynamicClient: dyn, ErrorHandler: sink.handle, EventRecorder: events})
	widgets, err := ForResource[*widget](f, widgetsGVR)
	require.NoError(t, err)
	log := newEventLog[*widget]()
	_, err = widgets.AddHandler(log)
	require.NoError(t, err)
	startFactory(t, f)
	client := dyn.Resource(widgetsGVR).Namespace("a")
	version := func(rv string, size any) *unstructured.Unstructured {
		u := unstructuredWidget("a", "w", size)
		u.SetResourceVersion(rv)
		return u
	}

	_, err = client.Create(ctx, version("1", "broken"), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(sink.all()) > 0 }, 10*time.Second, time.Millisecond,
		"the failed conversion is reported")
	assert.Contains(t, <-events.Events, "Warning "+ReasonUndecodable+" Cannot decode this object: informer widgets.example.com: convert a/w",
		"and recorded as an event on the object")
	_, err = client.Update(ctx, version("2", int64(3)), metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, event{op: "add", key: "a/w"}, log.next(t), "first convertible version is an add")

	reported := len(sink.all())
	_, err = client.Update(ctx, version("3", "broken again"), metav1.UpdateOptions{})
	require.NoError(t, err)
	// The transform reports before the store takes the new version: wait for the store.
	require.Eventually(t, func() bool {
		all, err := widgets.Lister().List(nil)
		// One report, the transform's: the handler keeps the last version it could read.
		return err == nil && len(all) == 0 && len(sink.all()) == reported+1
	}, 10*time.Second, time.Millisecond, "the unconvertible version leaves the typed view")
	assert.Contains(t, <-events.Events, "Warning "+ReasonUndecodable)
	listed := len(sink.all())
	_, err = widgets.Lister().List(nil)
	require.NoError(t, err)
	assert.Len(t, sink.all(), listed, "List does not report a failed conversion again")

	require.NoError(t, client.Delete(ctx, "w", metav1.DeleteOptions{}))
	assert.Equal(t, event{op: "delete", key: "a/w", missing: true}, log.next(t),
		"a delete after a failed version still names the key")
	select {
	case e := <-log.ch:
		t.Fatalf("unexpected event %+v", e)
	default:
	}
	// The delete carries the last (unconvertible) version through the
	// transform once more: reported again, but never handed to a handler.
	assert.Len(t, sink.all(), listed+1)
	assert.Len(t, events.Events, 1)
}
