package propagator_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ctrlkit/ctrlkit/examples/configmap-propagator/propagator"
	"github.com/ctrlkit/ctrlkit/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const src = "platform"

// cluster is a fake cluster with API-server writes, the propagator running on it, and helpers.
type cluster struct {
	t   *testing.T
	env *testkit.FakeEnv
	ctx context.Context
}

func newCluster(t *testing.T, opts propagator.Options, objs ...runtime.Object) *cluster {
	t.Helper()
	env := testkit.NewFake(t)
	c := &cluster{t: t, env: env, ctx: env.Context()}
	for _, obj := range objs {
		c.create(obj)
	}
	opts.SourceNamespace = src
	ctrl, err := propagator.New(env.Factory(), env.Client(), opts)
	require.NoError(t, err)
	env.RunController(env.Context(), ctrl)
	env.WaitForQuiet(10 * time.Second)
	return c
}

func (c *cluster) create(obj runtime.Object) {
	c.t.Helper()
	var err error
	switch o := obj.(type) {
	case *corev1.Namespace:
		_, err = c.env.Client().CoreV1().Namespaces().Create(c.ctx, o, metav1.CreateOptions{})
	case *corev1.ConfigMap:
		_, err = c.env.Client().CoreV1().ConfigMaps(o.Namespace).Create(c.ctx, o, metav1.CreateOptions{})
	default:
		c.t.Fatalf("unexpected seed %T", obj)
	}
	require.NoError(c.t, err)
}

func (c *cluster) get(ns, name string) *corev1.ConfigMap {
	c.t.Helper()
	cm, err := c.env.Client().CoreV1().ConfigMaps(ns).Get(c.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(c.t, err)
	return cm
}

// copies returns the namespaces holding a copy of src/name.
func (c *cluster) copies(name string) []string {
	c.t.Helper()
	list, err := c.env.Client().CoreV1().ConfigMaps("").List(c.ctx, metav1.ListOptions{})
	require.NoError(c.t, err)
	var nss []string
	for _, cm := range list.Items {
		if cm.Name == name && cm.Annotations[propagator.AnnotationSource] == src+"/"+name {
			nss = append(nss, cm.Namespace)
		}
	}
	return nss
}

func (c *cluster) update(cm *corev1.ConfigMap) {
	c.t.Helper()
	_, err := c.env.Client().CoreV1().ConfigMaps(cm.Namespace).Update(c.ctx, cm, metav1.UpdateOptions{})
	require.NoError(c.t, err)
}

func (c *cluster) setNamespaceLabels(name string, lbls map[string]string) {
	c.t.Helper()
	ns, err := c.env.Client().CoreV1().Namespaces().Get(c.ctx, name, metav1.GetOptions{})
	require.NoError(c.t, err)
	ns.Labels = lbls
	_, err = c.env.Client().CoreV1().Namespaces().Update(c.ctx, ns, metav1.UpdateOptions{})
	require.NoError(c.t, err)
}

func namespace(name string, lbls map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}}
}

func source(name string, annotations, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: src, Name: name, Annotations: annotations,
			Labels: map[string]string{propagator.LabelPropagate: "true", "team": "platform"}},
		Data: data,
	}
}

var target = map[string]string{propagator.LabelPropagate: "true"}

func TestCopiesGoToMatchingNamespacesOnly(t *testing.T) {
	c := newCluster(t, propagator.Options{},
		namespace(src, target), // the source namespace is never its own target
		namespace("a", target), namespace("b", target), namespace("c", nil), namespace("dev", map[string]string{"env": "dev"}),
		source("shared", nil, map[string]string{"k": "v"}),
		source("tools", map[string]string{propagator.AnnotationTargets: "env in (dev,test)"}, map[string]string{"debug": "1"}),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: src, Name: "unlabelled"}, Data: map[string]string{"x": "y"}},
	)
	assert.ElementsMatch(t, []string{"a", "b"}, c.copies("shared"))
	assert.ElementsMatch(t, []string{"dev"}, c.copies("tools"))
	assert.Empty(t, c.copies("unlabelled"))

	cp := c.get("a", "shared")
	assert.Equal(t, map[string]string{"k": "v"}, cp.Data)
	assert.Equal(t, map[string]string{"team": "platform"}, cp.Labels, "source labels minus the propagate label")
}

func TestCopiesFollowTheSourceAndAreRepaired(t *testing.T) {
	c := newCluster(t, propagator.Options{}, namespace(src, nil), namespace("a", target),
		source("shared", nil, map[string]string{"k": "v"}))
	require.Equal(t, []string{"a"}, c.copies("shared"))

	s := c.get(src, "shared")
	s.Data["k"] = "v2"
	s.BinaryData = map[string][]byte{"blob": {0, 1}}
	c.update(s)
	c.env.WaitForQuiet(10 * time.Second)
	cp := c.get("a", "shared")
	assert.Equal(t, "v2", cp.Data["k"])
	assert.Equal(t, []byte{0, 1}, cp.BinaryData["blob"])

	cp.Data["k"] = "edited by hand"
	c.update(cp)
	c.env.WaitForQuiet(10 * time.Second)
	assert.Equal(t, "v2", c.get("a", "shared").Data["k"], "a hand edit of a copy is reverted")

	require.NoError(t, c.env.Client().CoreV1().ConfigMaps("a").Delete(c.ctx, "shared", metav1.DeleteOptions{}))
	c.env.WaitForQuiet(10 * time.Second)
	assert.Equal(t, "v2", c.get("a", "shared").Data["k"], "a deleted copy is recreated")
}

func TestNamespaceLabelsDecideTheTargets(t *testing.T) {
	c := newCluster(t, propagator.Options{}, namespace(src, nil), namespace("a", target), namespace("b", nil),
		source("shared", nil, map[string]string{"k": "v"}))
	require.Equal(t, []string{"a"}, c.copies("shared"))

	c.setNamespaceLabels("b", target)
	c.setNamespaceLabels("a", map[string]string{"unrelated": "label"})
	c.env.WaitForQuiet(10 * time.Second)
	assert.Equal(t, []string{"b"}, c.copies("shared"))

	c.create(namespace("new", target))
	c.env.WaitForQuiet(10 * time.Second)
	assert.ElementsMatch(t, []string{"b", "new"}, c.copies("shared"))
}

func TestCopiesGoWhenTheSourceGoes(t *testing.T) {
	c := newCluster(t, propagator.Options{}, namespace(src, nil), namespace("a", target), namespace("b", target),
		source("unlabel-me", nil, map[string]string{"k": "v"}), source("delete-me", nil, map[string]string{"k": "v"}))
	require.Len(t, c.copies("unlabel-me"), 2)
	require.Len(t, c.copies("delete-me"), 2)

	s := c.get(src, "unlabel-me")
	delete(s.Labels, propagator.LabelPropagate)
	c.update(s)
	require.NoError(t, c.env.Client().CoreV1().ConfigMaps(src).Delete(c.ctx, "delete-me", metav1.DeleteOptions{}))
	c.env.WaitForQuiet(10 * time.Second)
	assert.Empty(t, c.copies("unlabel-me"))
	assert.Empty(t, c.copies("delete-me"))
}

// A ConfigMap someone else owns is never overwritten. Its deletion is no event the propagator
// maps to the source, so only Result.RequeueAfter brings the copy in.
func TestTakenNamesAreLeftAloneAndRetriedLater(t *testing.T) {
	c := newCluster(t, propagator.Options{RetryTakenAfter: 50 * time.Millisecond},
		namespace(src, nil), namespace("a", target),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "shared"}, Data: map[string]string{"mine": "yes"}},
		source("shared", nil, map[string]string{"k": "v"}))
	assert.Equal(t, map[string]string{"mine": "yes"}, c.get("a", "shared").Data)
	assert.Empty(t, c.copies("shared"))

	require.NoError(t, c.env.Client().CoreV1().ConfigMaps("a").Delete(c.ctx, "shared", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { return len(c.copies("shared")) == 1 }, 10*time.Second, 10*time.Millisecond)
}

func TestConvergesThroughWriteFailures(t *testing.T) {
	env := testkit.NewFake(t)
	c := &cluster{t: t, env: env, ctx: env.Context()}
	c.create(namespace(src, nil))
	for _, ns := range []string{"a", "b", "c", "d", "e"} {
		c.create(namespace(ns, target))
	}
	c.create(source("shared", nil, map[string]string{"k": "v"}))
	env.FailWrites(30)
	ctrl, err := propagator.New(env.Factory(), env.Client(), propagator.Options{SourceNamespace: src, Workers: 2})
	require.NoError(t, err)
	env.RunController(env.Context(), ctrl)
	// Keys waiting out a retry backoff do not count as work for WaitForQuiet, so wait for the
	// world instead.
	require.Eventually(t, func() bool { return len(c.copies("shared")) == 5 }, 20*time.Second, 10*time.Millisecond)
	assert.Positive(t, env.Injected(), "writes really failed")
}
