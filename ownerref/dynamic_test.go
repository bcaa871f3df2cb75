package ownerref_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/ownerref"
)

var (
	widgetGVK = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	gadgetGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}
)

func unstructuredObj(kind, name string, uid types.UID, lbls map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("example.com/v1")
	u.SetKind(kind)
	u.SetNamespace("default")
	u.SetName(name)
	u.SetUID(uid)
	u.SetResourceVersion("3")
	u.SetLabels(lbls)
	return u
}

// TestCustomResourcesWithDynamicClient: custom resources take no strategic merge patch; the
// merge-patch option claims them through the dynamic client, with ClientPatcher over
// Resource(gvr).Namespace.
func TestCustomResourcesWithDynamicClient(t *testing.T) {
	owner := unstructuredObj("Widget", "w", "widget-uid", nil)
	orphan := unstructuredObj("Gadget", "g1", "g1-uid", map[string]string{"widget": "w"})
	stale := unstructuredObj("Gadget", "g2", "g2-uid", map[string]string{"widget": "old"})
	stale.SetOwnerReferences([]metav1.OwnerReference{*ownerref.NewControllerRef(owner, widgetGVK)})

	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{gadgetGVR: "GadgetList"}, orphan.DeepCopy(), stale.DeepCopy())
	patcher := ownerref.ClientPatcher(dyn.Resource(gadgetGVR).Namespace)
	c := ownerref.NewClaimerWithOptions[*unstructured.Unstructured](owner, widgetGVK,
		labels.SelectorFromSet(labels.Set{"widget": "w"}), nil, patcher,
		ownerref.ClaimerOptions{PatchType: types.MergePatchType})

	claimed, err := c.ClaimObjects(context.Background(), []*unstructured.Unstructured{orphan, stale})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	assert.Equal(t, "g1", claimed[0].GetName())

	got, err := dyn.Resource(gadgetGVR).Namespace("default").Get(context.Background(), "g1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []metav1.OwnerReference{{
		APIVersion: "example.com/v1", Kind: "Widget", Name: "w", UID: "widget-uid",
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}}, got.GetOwnerReferences())
	assert.True(t, ownerref.IsControlledBy(got, owner))

	got, err = dyn.Resource(gadgetGVR).Namespace("default").Get(context.Background(), "g2", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, got.GetOwnerReferences(), "the stale child was released")

	var bodies []string
	for _, a := range dyn.Actions() {
		if a.GetVerb() == "patch" {
			bodies = append(bodies, string(a.(interface{ GetPatch() []byte }).GetPatch()))
		}
	}
	require.Len(t, bodies, 2)
	assert.JSONEq(t, `{"metadata":{"ownerReferences":[{"apiVersion":"example.com/v1","kind":"Widget","name":"w","uid":"widget-uid","controller":true,"blockOwnerDeletion":true}],"resourceVersion":"3","uid":"g1-uid"}}`, bodies[0])
	assert.JSONEq(t, `{"metadata":{"ownerReferences":null,"resourceVersion":"3","uid":"g2-uid"}}`, bodies[1])
}
