package informer

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
)

// Gadget is a custom resource type named after its kind, as generated and hand-written
// CRD types are.
type Gadget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
}

func (g *Gadget) DeepCopyObject() runtime.Object {
	c := *g
	g.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

// Octopus has an irregular plural (octopi) that no guess reaches.
type Octopus struct{ Gadget }

func (o *Octopus) DeepCopyObject() runtime.Object {
	c := *o
	o.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

var (
	exampleGV  = schema.GroupVersion{Group: "example.com", Version: "v1"}
	gadgetsGVR = exampleGV.WithResource("gadgets")
	octopiGVR  = exampleGV.WithResource("octopi")
)

// Owns needs a custom resource informer's kind before any object arrives; it comes from
// the type's name, or from a scheme when the name does not tell.
func TestForResourceKnowsTheKindOfCustomResources(t *testing.T) {
	withScheme := runtime.NewScheme()
	withScheme.AddKnownTypeWithName(exampleGV.WithKind("Widget"), &widget{})
	withScheme.AddKnownTypeWithName(exampleGV.WithKind("Octopus"), &Octopus{})
	dyn := func() *dynamicfake.FakeDynamicClient {
		return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
			widgetsGVR: "WidgetList", gadgetsGVR: "GadgetList", octopiGVR: "OctopusList"})
	}
	kind := func(t *testing.T, inf interface {
		GVK() schema.GroupVersionKind
	}, err error) string {
		t.Helper()
		require.NoError(t, err)
		return inf.GVK().Kind
	}

	t.Run("from the type's name", func(t *testing.T) {
		f := NewFactory(newClient(), Options{DynamicClient: dyn()})
		defer f.Shutdown()
		gadgets, err := ForResource[*Gadget](f, gadgetsGVR)
		assert.Equal(t, "Gadget", kind(t, gadgets, err))
		octopi, err := ForResource[*Octopus](f, octopiGVR)
		assert.Empty(t, kind(t, octopi, err), "octopuses is not octopi: no kind rather than a wrong one")
		widgets, err := ForResource[*widget](f, widgetsGVR)
		assert.Empty(t, kind(t, widgets, err), "an unexported name is not a kind")
		raw, err := ForResource[*unstructured.Unstructured](f, gadgetsGVR.GroupVersion().WithResource("things"))
		assert.Empty(t, kind(t, raw, err))
	})
	t.Run("from the factory's scheme", func(t *testing.T) {
		f := NewFactory(newClient(), Options{DynamicClient: dyn(), Scheme: withScheme})
		defer f.Shutdown()
		octopi, err := ForResource[*Octopus](f, octopiGVR)
		assert.Equal(t, "Octopus", kind(t, octopi, err), "registered under its kind")
		widgets, err := ForResource[*widget](f, widgetsGVR)
		assert.Equal(t, "Widget", kind(t, widgets, err))
	})
	t.Run("untyped, from a kind the scheme knows", func(t *testing.T) {
		f := NewFactory(newClient(), Options{DynamicClient: dyn(), Scheme: withScheme})
		defer f.Shutdown()
		raw, err := ForResource[*unstructured.Unstructured](f, widgetsGVR)
		assert.Equal(t, "Widget", kind(t, raw, err), "widgets is the plural of the scheme's Widget")
	})
}
