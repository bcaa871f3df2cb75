package propagator

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// An unparsable selector is bad input: Reconcile says so with a Terminal error (the worker loop
// does not retry it) and leaves existing copies alone.
func TestInvalidSelectorIsTerminal(t *testing.T) {
	env := testkit.NewFake(t)
	ctx := env.Context()
	_, err := env.Client().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = env.Client().CoreV1().ConfigMaps("src").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Namespace: "src", Name: "bad", Labels: map[string]string{LabelPropagate: "true"},
		Annotations: map[string]string{AnnotationTargets: "env in (dev"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	existing := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "bad",
		Annotations: map[string]string{AnnotationSource: "src/bad"}}}
	_, err = env.Client().CoreV1().ConfigMaps("a").Create(ctx, existing, metav1.CreateOptions{})
	require.NoError(t, err)

	p, err := newPropagator(env.Factory(), env.Client(), Options{SourceNamespace: "src"})
	require.NoError(t, err)
	env.Sync()
	env.ClearActions()

	res, err := p.Reconcile(ctx, controller.Key{Namespace: "src", Name: "bad"})
	require.Error(t, err)
	assert.True(t, controller.IsTerminal(err), "%v", err)
	assert.ErrorContains(t, err, "src/bad")
	assert.ErrorContains(t, err, AnnotationTargets)
	assert.True(t, res.IsZero())
	// Only writes count: an informer's watch can be recorded just after Sync, as the reflector
	// watches once its list is delivered.
	var writes []string
	for _, a := range env.Actions() {
		if v := a.GetVerb(); v != "list" && v != "watch" && v != "get" {
			writes = append(writes, v+" "+a.GetResource().Resource)
		}
	}
	assert.Empty(t, writes, "bad input changes nothing")
}

func TestTakenNameAsksForARequeue(t *testing.T) {
	env := testkit.NewFake(t)
	ctx := env.Context()
	_, err := env.Client().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a",
		Labels: map[string]string{LabelPropagate: "true"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	for _, cm := range []*corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "src", Name: "cfg", Labels: map[string]string{LabelPropagate: "true"}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "cfg"}}, // someone else's
	} {
		_, err = env.Client().CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	p, err := newPropagator(env.Factory(), env.Client(), Options{SourceNamespace: "src"})
	require.NoError(t, err)
	env.Sync()

	res, err := p.Reconcile(ctx, controller.Key{Namespace: "src", Name: "cfg"})
	require.NoError(t, err)
	assert.Equal(t, controller.Result{RequeueAfter: p.opts.RetryTakenAfter}, res)
}
