package predicate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Each row is one event and what the both-sides predicate (LabelSelector) and the new-object
// one (LabelSelectorNewObject, controller-runtime's LabelSelectorPredicate) answer; they differ
// only on an update whose old object matches and whose new one does not.
func TestLabelSelectorNewObject(t *testing.T) {
	web := map[string]string{"app": "web"}
	db := map[string]string{"app": "db"}
	sel := labels.SelectorFromSet(web)
	both, newOnly := LabelSelector[cm](sel), LabelSelectorNewObject[cm](sel)
	fromAPI, err := FromLabelSelectorNewObject[cm](&metav1.LabelSelector{MatchLabels: web})
	require.NoError(t, err)

	type ev struct {
		name          string
		ask           func(Predicate[cm]) bool
		both, newOnly bool
	}
	update := func(o, n cm) func(Predicate[cm]) bool {
		return func(p Predicate[cm]) bool { return p.Update(UpdateEvent[cm]{ObjectOld: o, ObjectNew: n}) }
	}
	create := func(o cm) func(Predicate[cm]) bool {
		return func(p Predicate[cm]) bool { return p.Create(CreateEvent[cm]{Object: o}) }
	}
	del := func(o cm, info DeleteEvent[cm]) func(Predicate[cm]) bool {
		info.Object = o
		return func(p Predicate[cm]) bool { return p.Delete(info) }
	}
	for _, tc := range []ev{
		{"create matching", create(obj(lbl(web))), true, true},
		{"create not matching", create(obj(lbl(db))), false, false},
		{"create nil object: cannot judge, pass", create(nil), true, true},
		{"update both match", update(obj(lbl(web)), obj(lbl(web), rv("11"))), true, true},
		{"update neither matches", update(obj(lbl(db)), obj(rv("11"))), false, false},
		{"update relabelled into the selection", update(obj(lbl(db)), obj(lbl(web), rv("11"))), true, true},
		{"update relabelled out of the selection", update(obj(lbl(web)), obj(lbl(db), rv("11"))), true, false},
		{"update labels removed", update(obj(lbl(web)), obj(rv("11"))), true, false},
		{"update nil new object: cannot judge, pass", update(obj(lbl(db)), nil), true, true},
		{"update nil old object, new not matching", update(nil, obj(lbl(db))), true, false},
		{"delete matching", del(obj(lbl(web)), DeleteEvent[cm]{DeleteInfo: live}), true, true},
		{"delete not matching", del(obj(lbl(db)), DeleteEvent[cm]{DeleteInfo: live}), false, false},
		{"delete tombstone judged as it is", del(obj(lbl(db)), DeleteEvent[cm]{DeleteInfo: tombstone}), false, false},
		{"delete with the object missing: pass", del(skeleton, DeleteEvent[cm]{DeleteInfo: missing}), true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.both, tc.ask(both), "LabelSelector")
			assert.Equal(t, tc.newOnly, tc.ask(newOnly), "LabelSelectorNewObject")
			assert.Equal(t, tc.newOnly, tc.ask(fromAPI), "FromLabelSelectorNewObject")
		})
	}
}

func TestMatchingNewObject(t *testing.T) {
	calls := 0
	isC := func(c cm) bool { calls++; return c.Name == "c" }
	p := MatchingNewObject(isC)
	other := func(m *metav1.ObjectMeta) { m.Name = "d" }
	assert.True(t, p.Create(CreateEvent[cm]{Object: obj()}))
	assert.False(t, p.Create(CreateEvent[cm]{Object: obj(other)}))
	runUpdates(t, p, []updateCase{
		{"only the old object matches: dropped", obj(), obj(other), false},
		{"only the new object matches", obj(other), obj(), true},
		{"both match", obj(), obj(rv("11")), true},
		{"neither", obj(other), obj(other), false},
	})
	calls = 0
	assert.False(t, p.Update(UpdateEvent[cm]{ObjectOld: obj(), ObjectNew: obj(other)}))
	assert.Equal(t, 1, calls, "the old object is not asked about")
	assert.True(t, p.Delete(DeleteEvent[cm]{Object: obj(), DeleteInfo: live}))
	assert.False(t, p.Delete(DeleteEvent[cm]{Object: obj(other), DeleteInfo: tombstone}))
	calls = 0
	assert.True(t, p.Delete(DeleteEvent[cm]{Object: skeleton, DeleteInfo: missing}))
	assert.Zero(t, calls, "a missing object is not judged")
	require.NoError(t, Validate(p))

	nilMatch := MatchingNewObject[cm](nil)
	assert.True(t, nilMatch.Update(UpdateEvent[cm]{ObjectOld: obj(), ObjectNew: obj()}), "a nil function passes")
	assert.Equal(t, "invalid predicate: MatchingNewObject: nil function", Validate(nilMatch).Error())
}

func TestFromLabelSelectorNewObject(t *testing.T) {
	everything, err := FromLabelSelectorNewObject[cm](&metav1.LabelSelector{})
	require.NoError(t, err)
	assert.True(t, everything.Update(UpdateEvent[cm]{ObjectOld: obj(), ObjectNew: obj()}), "an empty selector matches everything")
	nothing, err := FromLabelSelectorNewObject[cm](nil)
	require.NoError(t, err)
	assert.False(t, nothing.Create(CreateEvent[cm]{Object: obj(lbl(map[string]string{"a": "b"}))}), "a nil selector matches nothing")
	_, err = FromLabelSelectorNewObject[cm](&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "tier", Operator: "Sometimes"},
	}})
	assert.ErrorIs(t, err, ErrInvalidPredicate)
	assert.ErrorContains(t, err, "Sometimes")

	assert.Equal(t, "invalid predicate: Not: LabelSelectorNewObject: nil selector",
		Validate(Not(LabelSelectorNewObject[cm](nil))).Error())
}
