package directinformer

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/tools/cache"
)

var widgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

func widget(ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("example.com/v1")
	u.SetKind("Widget")
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

func key(obj any) string {
	k, _ := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	return k
}

// create adds a widget through the client the informer watches.
type create func(ctx context.Context, u *unstructured.Unstructured) error

// The dynamic and metadata informers list and watch through their clients,
// in one namespace with the list options given, and index by namespace.
func TestDynamicAndMetadataInformers(t *testing.T) {
	selected := func(o *metav1.ListOptions) { o.LabelSelector = "app=web" }
	for _, tc := range []struct {
		name  string
		build func(t *testing.T, objs ...*unstructured.Unstructured) (*Informer, create)
	}{{
		name: "dynamic",
		build: func(_ *testing.T, objs ...*unstructured.Unstructured) (*Informer, create) {
			var ros []runtime.Object
			for _, u := range objs {
				ros = append(ros, u)
			}
			c := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{widgets: "WidgetList"}, ros...)
			return Dynamic(c, widgets, "a", selected, Options{}), func(ctx context.Context, u *unstructured.Unstructured) error {
				_, err := c.Resource(widgets).Namespace(u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{})
				return err
			}
		},
	}, {
		name: "metadata",
		build: func(t *testing.T, objs ...*unstructured.Unstructured) (*Informer, create) {
			scheme := runtime.NewScheme()
			require.NoError(t, metav1.AddMetaToScheme(scheme))
			var ros []runtime.Object
			for _, u := range objs {
				ros = append(ros, partial(u))
			}
			c := metadatafake.NewSimpleMetadataClient(scheme, ros...)
			return Metadata(c, widgets, "a", selected, Options{}), func(_ context.Context, u *unstructured.Unstructured) error {
				_, err := c.Resource(widgets).Namespace(u.GetNamespace()).(metadatafake.MetadataClient).CreateFake(partial(u), metav1.CreateOptions{})
				return err
			}
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			web := func(ns, name string) *unstructured.Unstructured {
				u := widget(ns, name)
				u.SetLabels(map[string]string{"app": "web"})
				return u
			}
			inf, add := tc.build(t, web("a", "w1"), web("b", "w2"), widget("a", "other"))
			seen := make(chan string, 10)
			_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) { seen <- key(obj) }})
			require.NoError(t, err)
			run(t, inf)
			require.True(t, cache.WaitForCacheSync(t.Context().Done(), inf.HasSynced))
			assert.Equal(t, "a/w1", <-seen, "namespace a, app=web only")
			assert.Equal(t, "widgets.example.com", inf.HasSyncedChecker().Name())

			require.NoError(t, add(t.Context(), web("a", "w3")))
			assert.Equal(t, "a/w3", <-seen)
			inNS, err := inf.GetIndexer().ByIndex(cache.NamespaceIndex, "a")
			require.NoError(t, err)
			assert.Len(t, inNS, 2)
		})
	}
}

func partial(u *unstructured.Unstructured) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: u.GetAPIVersion(), Kind: u.GetKind()},
		ObjectMeta: metav1.ObjectMeta{Namespace: u.GetNamespace(), Name: u.GetName(), Labels: u.GetLabels()},
	}
}
