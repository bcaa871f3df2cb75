package informer

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	"github.com/ctrlkit/ctrlkit/internal/builtin"
)

// A generated informer asked for before For is the one For then hands out,
// with the factory's transforms applied to what it caches.
func TestSharedInformerFactoryFirstThenFor(t *testing.T) {
	client := newClient(pod("a", "p1", map[string]string{"app": "x"}))
	f := NewFactory(client, Options{ByObject: []ObjectOverride{ByObject(ObjectOptions[*corev1.Pod]{
		Transform: func(p *corev1.Pod) (*corev1.Pod, error) {
			p.Annotations = map[string]string{"seen": "yes"}
			return p, nil
		},
	})}})

	generated := f.SharedInformerFactory().Core().V1().Pods()
	pods, err := For[*corev1.Pod](f)
	require.NoError(t, err)
	assert.Same(t, generated.Informer().GetIndexer(), pods.Informer().GetIndexer())

	startFactory(t, f)
	p, err := generated.Lister().Pods("a").Get("p1")
	require.NoError(t, err)
	assert.Equal(t, "yes", p.Annotations["seen"], "the factory's transform")
	assert.Equal(t, 1, countActions(&client.Fake, "list", "pods"))
}

// The factory's namespace and list options reach client-go's generated
// informers.
func TestSharedInformerFactoryListsAsTheFactory(t *testing.T) {
	client := newClient(pod("a", "p1", nil), pod("b", "p2", nil))
	f := NewFactory(client, Options{Namespace: "a", TweakListOptions: func(o *metav1.ListOptions) { o.LabelSelector = "app=x" }})
	shared := f.SharedInformerFactory()
	shared.Core().V1().Pods().Informer()
	startFactory(t, f)
	require.NoError(t, shared.WaitForCacheSyncWithContext(t.Context()).Err)

	var lists []clienttesting.ListActionImpl
	for _, a := range client.Actions() {
		if l, ok := a.(clienttesting.ListActionImpl); ok && a.GetResource().Resource == "pods" {
			lists = append(lists, l)
		}
	}
	require.Len(t, lists, 1)
	assert.Equal(t, "a", lists[0].GetNamespace())
	assert.Equal(t, "app=x", lists[0].GetListRestrictions().Labels.String())
}

// ForResource serves every built-in resource with the informer For hands out
// for its Go type, and refuses what is not built in, as client-go's does.
func TestSharedInformerFactoryForResource(t *testing.T) {
	f := NewFactory(newClient(), Options{})
	t.Cleanup(f.Shutdown)
	shared := f.SharedInformerFactory()
	for _, typ := range builtin.Types() {
		bt, err := builtin.Of(typ)
		require.NoError(t, err)
		generic, err := shared.ForResource(bt.GVR)
		require.NoError(t, err, bt.GVR)
		obj := reflect.New(typ.Elem()).Interface().(runtime.Object)
		_, _, byType, err := f.resolveTyped(typ, f.typed, "", nil)
		require.NoError(t, err)
		assert.Same(t, byType.GetIndexer(), generic.Informer().GetIndexer(), "%v", bt.GVR)
		assert.Same(t, byType, shared.InformerFor(obj, nil), "%v: InformerFor keeps one informer per type", bt.GVR)
	}
	_, err := shared.ForResource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"})
	assert.ErrorContains(t, err, "no informer found for")
}

// Start, WaitForCacheSync and Shutdown of client-go's view run the Factory:
// its own informers and the generated ones start together and stop
// together. As with client-go, a generated informer taken after Start runs
// from the next Start.
func TestSharedInformerFactoryStartsAndStopsTheFactory(t *testing.T) {
	client := newClient(pod("a", "p1", nil), &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "rs"}})
	f := NewFactory(client, Options{})
	shared := f.SharedInformerFactory()
	pods, err := For[*corev1.Pod](f)
	require.NoError(t, err)
	generated := shared.Core().V1().ConfigMaps().Informer()

	stop := make(chan struct{})
	shared.Start(stop)
	synced := shared.WaitForCacheSync(stop)
	assert.Equal(t, map[reflect.Type]bool{reflect.TypeFor[*corev1.Pod](): true, reflect.TypeFor[*corev1.ConfigMap](): true}, synced)
	assert.True(t, pods.HasSynced())
	assert.True(t, generated.HasSynced())

	late := shared.Apps().V1().ReplicaSets().Informer()
	assert.False(t, late.HasSynced())
	assert.Zero(t, countActions(&client.Fake, "list", "replicasets"), "not started before the next Start")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	shared.StartWithContext(ctx)
	res := shared.WaitForCacheSyncWithContext(ctx)
	require.NoError(t, res.Err)
	assert.True(t, res.Synced[reflect.TypeFor[*appsv1.ReplicaSet]()])
	rs, err := shared.Apps().V1().ReplicaSets().Lister().ReplicaSets("a").Get("rs")
	require.NoError(t, err)
	assert.Equal(t, "rs", rs.Name)

	close(stop)
	shared.Shutdown() // returns once every informer stopped (goleak checks)
}

// A WaitForCacheSync that gives up says which informer has not synced, and
// why.
func TestSharedInformerFactoryWaitGivesUp(t *testing.T) {
	client := newClient()
	client.PrependReactor("list", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, assert.AnError
	})
	f := NewFactory(client, Options{})
	shared := f.SharedInformerFactory()
	shared.Core().V1().Secrets().Informer()
	ctx, cancel := context.WithCancel(context.Background())
	shared.StartWithContext(ctx)
	t.Cleanup(func() { cancel(); shared.Shutdown() })

	waitCtx, waitCancel := context.WithCancelCause(ctx)
	waitCancel(assert.AnError)
	res := shared.WaitForCacheSyncWithContext(waitCtx)
	assert.Equal(t, map[reflect.Type]bool{reflect.TypeFor[*corev1.Secret](): false}, res.Synced)
	assert.ErrorIs(t, res.Err, assert.AnError)
}

// The generated informers report metrics under the factory's informer name.
func TestSharedInformerFactoryName(t *testing.T) {
	f := NewFactory(newClient(), Options{InformerName: "clientgo-view-test"})
	t.Cleanup(f.Shutdown)
	assert.Equal(t, "clientgo-view-test", f.SharedInformerFactory().InformerName().Name())
}
