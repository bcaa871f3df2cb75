package informer_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/testkit"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

func exampleConfigMap(ns, name string, lbls map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls}}
}

// A cache scoped to two namespaces and one label: objects elsewhere are
// never listed, watched or held in memory.
func ExampleInNamespaces() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The fake cluster filters lists and watches by selector, as an API
	// server does.
	cluster, _ := fakecluster.New(
		exampleConfigMap("team-a", "web", map[string]string{"app": "web"}),
		exampleConfigMap("team-a", "db", map[string]string{"app": "db"}),
		exampleConfigMap("team-b", "web", map[string]string{"app": "web"}),
		exampleConfigMap("team-c", "web", map[string]string{"app": "web"}),
	)
	f := informer.NewFactory(cluster.Clientset(), informer.Options{})
	defer f.Shutdown()
	cms, err := informer.For(f,
		informer.InNamespaces[*corev1.ConfigMap]("team-a", "team-b"),
		informer.WithLabelSelector[*corev1.ConfigMap]("app=web"))
	if err != nil {
		panic(err)
	}
	f.Start(ctx)
	if err := f.WaitForCacheSync(ctx); err != nil {
		panic(err)
	}
	all, _ := cms.Lister().List(nil)
	fmt.Println(sortedNames(all))
	_, err = cms.Lister().Get("team-c", "web")
	fmt.Println(apierrors.IsNotFound(err))

	// The factory serves a type with one scope.
	_, err = informer.For[*corev1.ConfigMap](f)
	fmt.Println(err)
	// Output:
	// [team-a/web team-b/web]
	// true
	// informer configmaps: already served with scope {namespaces team-a,team-b, labels "app=web"}, cannot serve scope {the factory's namespaces} (use one scope, or another factory)
}

// A controller over a scoped informer reconciles only the objects in scope.
func TestControllerOverScopedInformer(t *testing.T) {
	env := testkit.NewFake(t,
		exampleConfigMap("a", "in", map[string]string{"owned": "yes"}),
		exampleConfigMap("a", "unlabelled", nil),
		exampleConfigMap("b", "in", map[string]string{"owned": "yes"}),
		exampleConfigMap("c", "elsewhere", map[string]string{"owned": "yes"}),
	)
	cms, err := informer.For(env.Factory(),
		informer.InNamespaces[*corev1.ConfigMap]("a", "b"), informer.WithLabelSelector[*corev1.ConfigMap]("owned=yes"))
	require.NoError(t, err)
	var rec testkit.Recorder[controller.Key]
	c, err := controller.New("scoped", &rec, controller.Options[controller.Key]{})
	require.NoError(t, err)
	require.NoError(t, controller.Watch(c, cms, controller.EnqueueObject))
	env.Sync()
	env.RunController(env.Context(), c)
	env.WaitForQuiet(10 * time.Second)

	ctx := env.Context()
	_, err = env.Client().CoreV1().ConfigMaps("c").Create(ctx, exampleConfigMap("c", "new", map[string]string{"owned": "yes"}), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = env.Client().CoreV1().ConfigMaps("b").Create(ctx, exampleConfigMap("b", "new", map[string]string{"owned": "yes"}), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return rec.Keys()[controller.Key{Namespace: "b", Name: "new"}] > 0 }, 10*time.Second, time.Millisecond)
	env.WaitForQuiet(10 * time.Second)

	got := rec.Keys()
	var keys []controller.Key
	for k := range got {
		keys = append(keys, k)
	}
	assert.ElementsMatch(t, []controller.Key{{Namespace: "a", Name: "in"}, {Namespace: "b", Name: "in"}, {Namespace: "b", Name: "new"}}, keys)
}

// On a real API server: a namespace- and label-scoped informer caches only
// what matches, and sees an object relabelled out of scope deleted.
func TestScopedInformerOnAPIServer(t *testing.T) {
	env := testkit.SharedAPIServer(t)
	ctx := env.Context()
	ns := env.Namespace()
	other := testkit.SharedAPIServer(t).Namespace() // a second namespace of the same server
	for _, obj := range []*corev1.ConfigMap{
		exampleConfigMap(ns, "web", map[string]string{"app": "web"}),
		exampleConfigMap(ns, "db", map[string]string{"app": "db"}),
		exampleConfigMap(other, "web", map[string]string{"app": "web"}),
	} {
		_, err := env.Client().CoreV1().ConfigMaps(obj.Namespace).Create(ctx, obj, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	f := informer.NewFactory(env.Client(), informer.Options{})
	t.Cleanup(f.Shutdown)
	cms, err := informer.For(f, informer.InNamespaces[*corev1.ConfigMap](ns), informer.WithLabelSelector[*corev1.ConfigMap]("app=web"))
	require.NoError(t, err)
	deleted := make(chan string, 10)
	_, err = cms.AddHandler(informer.HandlerFuncs[*corev1.ConfigMap]{OnDelete: func(cm *corev1.ConfigMap) { deleted <- cm.Namespace + "/" + cm.Name }})
	require.NoError(t, err)
	f.Start(ctx)
	syncCtx, cancel := context.WithTimeout(ctx, testkit.DefaultSyncTimeout)
	defer cancel()
	require.NoError(t, f.WaitForCacheSync(syncCtx))

	all, err := cms.Lister().List(nil)
	require.NoError(t, err)
	assert.Equal(t, []string{ns + "/web"}, sortedNames(all))
	_, err = cms.Lister().Get(other, "web")
	assert.True(t, apierrors.IsNotFound(err))

	web, err := env.Client().CoreV1().ConfigMaps(ns).Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	web.Labels["app"] = "retired"
	_, err = env.Client().CoreV1().ConfigMaps(ns).Update(ctx, web, metav1.UpdateOptions{})
	require.NoError(t, err)
	select {
	case key := <-deleted:
		assert.Equal(t, ns+"/web", key)
	case <-time.After(testkit.DefaultSyncTimeout):
		t.Fatal("the relabelled ConfigMap was not seen deleted")
	}
	_, err = cms.Lister().Get(ns, "web")
	assert.True(t, apierrors.IsNotFound(err))
}
