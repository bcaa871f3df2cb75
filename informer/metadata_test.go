package informer

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	metadatafake "k8s.io/client-go/metadata/fake"
)

var secretsGVR = corev1.SchemeGroupVersion.WithResource("secrets")

func partialSecret(ns, name string, managed bool, owners ...metav1.OwnerReference) *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, OwnerReferences: owners, ResourceVersion: "1"},
	}
	if managed {
		m.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	}
	return m
}

func TestForMetadata(t *testing.T) {
	ctx := context.Background()
	scheme := metadatafake.NewTestScheme()
	require.NoError(t, metav1.AddMetaToScheme(scheme))
	owner := controllerRef("v1", "ServiceAccount", "builder", "sa-uid")
	meta := metadatafake.NewSimpleMetadataClient(scheme,
		partialSecret("a", "token", true, owner), partialSecret("b", "other", false))
	f := NewFactory(newClient(), Options{MetadataClient: meta})

	secrets, err := ForMetadata(f, secretsGVR)
	require.NoError(t, err)
	again, err := ForMetadata(f, secretsGVR)
	require.NoError(t, err)
	assert.Same(t, secrets.(*sharedInformer[*metav1.PartialObjectMetadata]), again.(*sharedInformer[*metav1.PartialObjectMetadata]))
	assert.Equal(t, "secrets (metadata)", secrets.Name())
	assert.Equal(t, corev1.SchemeGroupVersion.WithKind("Secret"), secrets.GVK())
	log := newEventLog[*metav1.PartialObjectMetadata]()
	_, err = secrets.AddHandler(log)
	require.NoError(t, err)
	startFactory(t, f)

	got, err := secrets.Lister().Get("a", "token")
	require.NoError(t, err)
	assert.Nil(t, got.ManagedFields, "stripped by default here too")
	_, err = secrets.Lister().Get("a", "missing")
	assert.True(t, apierrors.IsNotFound(err))
	children, err := secrets.ByControllerUID(types.UID("sa-uid"))
	require.NoError(t, err)
	assert.Equal(t, []string{"a/token"}, names(children))
	inB, err := secrets.Lister().Namespace("b").List(nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"b/other"}, names(inB))

	seen := map[string]bool{}
	for range 2 {
		e := log.next(t)
		assert.True(t, e.initial)
		seen[e.key] = true
	}
	assert.Equal(t, map[string]bool{"a/token": true, "b/other": true}, seen)

	// Live events flow through the metadata watch.
	_, err = meta.Resource(secretsGVR).Namespace("b").(metadatafake.MetadataClient).CreateFake(partialSecret("b", "new", false), metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, event{op: "add", key: "b/new"}, log.next(t))
	require.NoError(t, meta.Resource(secretsGVR).Namespace("b").Delete(ctx, "new", metav1.DeleteOptions{}))
	assert.Equal(t, event{op: "delete", key: "b/new"}, log.next(t))

	// Metadata and typed informers of one resource are distinct caches.
	typed, err := For[*corev1.Secret](f)
	require.NoError(t, err)
	assert.NotSame(t, typed.Informer().GetIndexer(), secrets.Informer().GetIndexer())
	syncCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, f.WaitForCacheSync(syncCtx))
}

func TestForMetadataErrors(t *testing.T) {
	f := NewFactory(newClient(), Options{})
	_, err := ForMetadata(f, secretsGVR)
	require.ErrorIs(t, err, ErrNoClient)
	assert.Contains(t, err.Error(), "secrets")

	withMeta := NewFactory(newClient(), Options{MetadataClient: metadatafake.NewSimpleMetadataClient(runtime.NewScheme())})
	_, err = ForMetadata(withMeta, schema.GroupVersionResource{Resource: "secrets"})
	require.ErrorContains(t, err, "needs a version")
	// An unknown resource gets an informer (the server decides), with no GVK.
	inf, err := ForMetadata(withMeta, schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"})
	require.NoError(t, err)
	assert.Equal(t, schema.GroupVersionKind{}, inf.GVK())
	assert.Equal(t, "widgets.example.com (metadata)", inf.Name())
}

// ByObject's settings follow the Go type: those of *metav1.PartialObjectMetadata apply to every
// metadata-only informer of the factory, whatever its resource (the same holds for
// *unstructured.Unstructured and ForResource's informers).
func TestByObjectOfPartialObjectMetadataAppliesToEveryMetadataInformer(t *testing.T) {
	scheme := metadatafake.NewTestScheme()
	require.NoError(t, metav1.AddMetaToScheme(scheme))
	cm := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "cm", ResourceVersion: "1", Annotations: map[string]string{"big": "x"}}}
	secret := partialSecret("a", "token", false)
	secret.Annotations = map[string]string{"big": "x"}
	meta := metadatafake.NewSimpleMetadataClient(scheme, cm, secret)
	f := NewFactory(newClient(), Options{MetadataClient: meta, ByObject: []ObjectOverride{
		ByObject(ObjectOptions[*metav1.PartialObjectMetadata]{Transform: func(m *metav1.PartialObjectMetadata) (*metav1.PartialObjectMetadata, error) {
			m.Annotations = nil
			return m, nil
		}}),
	}})
	secrets, err := ForMetadata(f, secretsGVR)
	require.NoError(t, err)
	cms, err := ForMetadata(f, corev1.SchemeGroupVersion.WithResource("configmaps"))
	require.NoError(t, err)
	startFactory(t, f)

	s, err := secrets.Lister().Get("a", "token")
	require.NoError(t, err)
	assert.Nil(t, s.Annotations)
	c, err := cms.Lister().Get("a", "cm")
	require.NoError(t, err)
	assert.Nil(t, c.Annotations)
}
