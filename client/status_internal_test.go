package client

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/internal/builtin"
)

// Every built-in type whose typed client has UpdateStatus has a status PatchStatus can write.
func TestEveryStatusSubresourceHasALayout(t *testing.T) {
	n := 0
	for _, typ := range builtin.Types() {
		b, err := bindingFor(typ)
		if err != nil || !b.Status {
			continue
		}
		n++
		_, err = statusLayoutOf(typ)
		assert.NoError(t, err, "%s", typ)
	}
	assert.Greater(t, n, 20, "the clientset's types with a status subresource")
}

type widgetStatus struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}

type pointerStatus struct {
	metav1.ObjectMeta `json:"metadata"`
	Status            *widgetStatus `json:"status,omitempty"`
}

type plainStatus struct {
	metav1.ObjectMeta `json:"metadata"`
	Status            struct {
		Phase string `json:"phase"`
	} `json:"status"`
}

// A Status held by pointer is allocated when there is a generation to record, and stays nil
// otherwise; a status without the fields PatchStatus sets is compared as it is.
func TestStatusLayoutPointerStatus(t *testing.T) {
	l, err := statusLayoutOf(reflect.TypeFor[*pointerStatus]())
	require.NoError(t, err)
	again, err := statusLayoutOf(reflect.TypeFor[*pointerStatus]())
	require.NoError(t, err)
	assert.Same(t, l, again, "found once per type")

	old := &pointerStatus{ObjectMeta: metav1.ObjectMeta{Generation: 4}}
	next := &pointerStatus{ObjectMeta: metav1.ObjectMeta{Generation: 4}}
	before, after, err := l.statuses(old, next)
	require.NoError(t, err)
	assert.Equal(t, (*widgetStatus)(nil), before)
	assert.Equal(t, &widgetStatus{ObservedGeneration: 4}, after)
	assert.Nil(t, old.Status)

	next.Status.Conditions = []metav1.Condition{{Type: "Ready"}, {Type: "Degraded", ObservedGeneration: 1}}
	_, after, err = l.statuses(old, next)
	require.NoError(t, err)
	assert.Equal(t, []int64{4, 4}, []int64{after.(*widgetStatus).Conditions[0].ObservedGeneration, after.(*widgetStatus).Conditions[1].ObservedGeneration})

	p, err := statusLayoutOf(reflect.TypeFor[*plainStatus]())
	require.NoError(t, err)
	assert.Nil(t, p.observed)
	assert.Nil(t, p.conditions)
	_, after, err = p.statuses(&plainStatus{}, &plainStatus{})
	require.NoError(t, err)
	assert.Equal(t, "", reflect.ValueOf(after).FieldByName("Phase").String())
}

type noStatus struct{ metav1.ObjectMeta }

type renamedStatus struct {
	metav1.ObjectMeta
	Status widgetStatus `json:"state"`
}

type scalarStatus struct {
	metav1.ObjectMeta
	Status string `json:"status"`
}

// A type PatchStatus cannot write is an error naming the type and why, the same every time.
func TestStatusLayoutErrors(t *testing.T) {
	for typ, want := range map[reflect.Type]string{
		reflect.TypeFor[*noStatus]():      "has no Status field",
		reflect.TypeFor[*renamedStatus](): `Status field is encoded as "state", not "status"`,
		reflect.TypeFor[*scalarStatus]():  "Status is a string, not a struct",
		reflect.TypeFor[noStatus]():       "is not a pointer to an API struct",
	} {
		_, err := statusLayoutOf(typ)
		require.ErrorIs(t, err, ErrNoStatus, "%s", typ)
		assert.ErrorContains(t, err, want)
		assert.ErrorContains(t, err, "github.com/ctrlkit/ctrlkit/client.", "names the type")
		_, again := statusLayoutOf(typ)
		assert.Same(t, err, again, "the answer is kept")
	}
}
