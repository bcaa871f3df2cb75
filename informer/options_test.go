package informer

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
)

// The zero value of each field is the default the functional options had
// when not given; the values that used to need an option of their own stay
// expressible.
func TestOptionsDefaults(t *testing.T) {
	c := Options{}.config()
	assert.Equal(t, defaultReleaseGrace, c.releaseGrace, "unset: the default grace")
	assert.Equal(t, klog.Background(), c.logger, "the zero Logger: klog.Background()")
	assert.False(t, c.mutationDetector)
	assert.Nil(t, c.budgets)
	assert.Nil(t, c.transforms)

	assert.Zero(t, Options{ReleaseGrace: -1}.config().releaseGrace, "negative: release at once")
	assert.Equal(t, time.Minute, Options{ReleaseGrace: time.Minute}.config().releaseGrace)

	logger := funcr.New(func(string, string) {}, funcr.Options{})
	assert.Equal(t, logger, Options{Logger: logger}.config().logger)

	c = Options{MutationDetector: true}.config()
	assert.True(t, c.mutationDetector)
	assert.Nil(t, c.mutationReport, "nil report: the error handler")
	c = Options{MutationReport: func(error) {}}.config()
	assert.True(t, c.mutationDetector, "a report turns the detector on")

	// The factory's Unsharded is its own copy.
	un := []schema.GroupResource{{Resource: "secrets"}}
	c = Options{Unsharded: un}.config()
	un[0].Resource = "changed"
	assert.Equal(t, "secrets", c.unsharded[0].Resource)
}

// Several ByObject entries for one type add up: transforms run in order and
// the first error stops the chain, budgets are each their own, and a budget
// with BudgetDegrade marks its informer degradable.
func TestByObjectEntriesCompose(t *testing.T) {
	var order []string
	step := func(name string, err error) ObjectOptions[*corev1.Pod] {
		return ObjectOptions[*corev1.Pod]{Transform: func(p *corev1.Pod) (*corev1.Pod, error) {
			order = append(order, name)
			return p, err
		}}
	}
	c := Options{ByObject: []ObjectOverride{
		ByObject(step("first", nil)),
		ByObject(ObjectOptions[*corev1.Pod]{}), // nil Transform: ignored
		{},                                     // the zero ObjectOverride: ignored
		ByObject(step("second", nil)),
		ByObject(ObjectOptions[*corev1.Pod]{MemoryBudget: 10, BudgetPolicy: BudgetDegrade}),
		ByObject(ObjectOptions[*corev1.ConfigMap]{Degradable: true}),
	}}.config()
	fn := c.transforms[reflect.TypeFor[*corev1.Pod]()]
	require.NotNil(t, fn)
	in := &corev1.Pod{}
	out, err := fn(in)
	require.NoError(t, err)
	assert.Same(t, in, out)
	assert.Equal(t, []string{"first", "second"}, order)
	out, err = fn(&corev1.ConfigMap{})
	require.NoError(t, err, "another type passes through")
	assert.IsType(t, &corev1.ConfigMap{}, out)
	require.Len(t, c.budgets, 1)
	assert.Equal(t, reflect.TypeFor[*corev1.Pod](), c.budgets[0].typ)
	assert.ElementsMatch(t, []reflect.Type{reflect.TypeFor[*corev1.Pod](), reflect.TypeFor[*corev1.ConfigMap]()}, c.degradable)

	order = nil
	boom := errors.New("boom")
	c = Options{ByObject: []ObjectOverride{ByObject(step("first", boom)), ByObject(step("second", nil))}}.config()
	_, err = c.transforms[reflect.TypeFor[*corev1.Pod]()](in)
	require.ErrorIs(t, err, boom)
	assert.ErrorContains(t, err, "transform for")
	assert.Equal(t, []string{"first"}, order)
}
