package predicate

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/ctrlkit/ctrlkit/informer"
)

type cm = *corev1.ConfigMap

// obj builds a ConfigMap; mods set its metadata.
func obj(mods ...func(*metav1.ObjectMeta)) cm {
	c := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", Generation: 1, ResourceVersion: "10"}}
	for _, m := range mods {
		m(&c.ObjectMeta)
	}
	return c
}

func gen(g int64) func(*metav1.ObjectMeta) { return func(m *metav1.ObjectMeta) { m.Generation = g } }
func rv(v string) func(*metav1.ObjectMeta) {
	return func(m *metav1.ObjectMeta) { m.ResourceVersion = v }
}
func lbl(l map[string]string) func(*metav1.ObjectMeta) {
	return func(m *metav1.ObjectMeta) { m.Labels = l }
}
func ann(a map[string]string) func(*metav1.ObjectMeta) {
	return func(m *metav1.ObjectMeta) { m.Annotations = a }
}

var (
	live      = informer.DeleteInfo{Key: "ns/c"}
	tombstone = informer.DeleteInfo{Key: "ns/c", FinalStateUnknown: true}
	missing   = informer.DeleteInfo{Key: "ns/c", FinalStateUnknown: true, ObjectMissing: true}
	skeleton  = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}}
)

// updateCase is one update and what a predicate answers.
type updateCase struct {
	name     string
	old, new cm
	want     bool
}

func runUpdates(t *testing.T, p Predicate[cm], cases []updateCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, p.Update(UpdateEvent[cm]{ObjectOld: tc.old, ObjectNew: tc.new}))
		})
	}
}

// The *Changed predicates pass every create and every delete, tombstones
// and missing objects included.
func TestChangedPredicatesPassCreatesAndDeletes(t *testing.T) {
	for name, p := range map[string]Predicate[cm]{
		"GenerationChanged":      GenerationChanged[cm](),
		"ResourceVersionChanged": ResourceVersionChanged[cm](),
		"LabelsChanged":          LabelsChanged[cm](),
		"AnnotationsChanged":     AnnotationsChanged[cm](),
	} {
		t.Run(name, func(t *testing.T) {
			assert.True(t, p.Create(CreateEvent[cm]{Object: obj()}))
			assert.True(t, p.Create(CreateEvent[cm]{Object: obj(), IsInInitialList: true}))
			assert.True(t, p.Create(CreateEvent[cm]{}), "nil object")
			assert.True(t, p.Delete(DeleteEvent[cm]{Object: obj(), DeleteInfo: live}))
			assert.True(t, p.Delete(DeleteEvent[cm]{Object: obj(), DeleteInfo: tombstone}))
			assert.True(t, p.Delete(DeleteEvent[cm]{Object: skeleton, DeleteInfo: missing}))
			assert.True(t, p.Update(UpdateEvent[cm]{ObjectNew: obj()}), "nil old object: cannot judge, pass")
			assert.True(t, p.Update(UpdateEvent[cm]{ObjectOld: obj()}), "nil new object: cannot judge, pass")
		})
	}
}

func TestGenerationChanged(t *testing.T) {
	runUpdates(t, GenerationChanged[cm](), []updateCase{
		{"spec change bumps generation", obj(), obj(gen(2), rv("11")), true},
		{"status write keeps generation", obj(), obj(rv("11")), false},
		{"label change keeps generation", obj(), obj(rv("11"), lbl(map[string]string{"a": "b"})), false},
		{"resync", obj(), obj(), false},
		{"generation going back still differs", obj(gen(3)), obj(gen(1), rv("11")), true},
	})
}

func TestResourceVersionChanged(t *testing.T) {
	runUpdates(t, ResourceVersionChanged[cm](), []updateCase{
		{"any write", obj(), obj(rv("11")), true},
		{"resync", obj(), obj(), false},
		{"resync with generation change cannot happen but rv decides", obj(), obj(gen(2)), false},
		{"empty resourceVersions look like a resync", obj(rv("")), obj(rv(""), gen(2)), false},
	})
}

func TestLabelsChanged(t *testing.T) {
	a := map[string]string{"app": "web"}
	runUpdates(t, LabelsChanged[cm](), []updateCase{
		{"added", obj(), obj(lbl(a)), true},
		{"removed", obj(lbl(a)), obj(), true},
		{"value changed", obj(lbl(a)), obj(lbl(map[string]string{"app": "db"})), true},
		{"key renamed", obj(lbl(a)), obj(lbl(map[string]string{"role": "web"})), true},
		{"same content, other map", obj(lbl(a)), obj(lbl(map[string]string{"app": "web"}), gen(2)), false},
		{"nil and empty are equal", obj(lbl(nil)), obj(lbl(map[string]string{})), false},
		{"both nil", obj(), obj(rv("11")), false},
		{"annotations do not count", obj(), obj(ann(a)), false},
	})
}

func TestAnnotationsChanged(t *testing.T) {
	a := map[string]string{"note": "x"}
	runUpdates(t, AnnotationsChanged[cm](), []updateCase{
		{"added", obj(), obj(ann(a)), true},
		{"removed", obj(ann(a)), obj(ann(map[string]string{})), true},
		{"value changed", obj(ann(a)), obj(ann(map[string]string{"note": "y"})), true},
		{"nil and empty are equal", obj(ann(map[string]string{})), obj(ann(nil)), false},
		{"unchanged", obj(ann(a)), obj(ann(map[string]string{"note": "x"}), rv("11")), false},
		{"labels do not count", obj(), obj(lbl(a)), false},
	})
}

func TestLabelSelector(t *testing.T) {
	web := map[string]string{"app": "web"}
	db := map[string]string{"app": "db"}
	p := LabelSelector[cm](labels.SelectorFromSet(web))

	assert.True(t, p.Create(CreateEvent[cm]{Object: obj(lbl(web))}))
	assert.False(t, p.Create(CreateEvent[cm]{Object: obj(lbl(db))}))
	assert.False(t, p.Create(CreateEvent[cm]{Object: obj()}), "no labels at all")
	assert.True(t, p.Create(CreateEvent[cm]{}), "nil object: cannot judge, pass")

	runUpdates(t, p, []updateCase{
		{"both match", obj(lbl(web)), obj(lbl(web), rv("11")), true},
		{"neither matches", obj(lbl(db)), obj(rv("11")), false},
		{"relabelled into the selection", obj(lbl(db)), obj(lbl(web), rv("11")), true},
		{"relabelled out of the selection: seen once more", obj(lbl(web)), obj(lbl(db), rv("11")), true},
		{"labels removed: seen once more", obj(lbl(web)), obj(lbl(nil), rv("11")), true},
	})

	assert.True(t, p.Delete(DeleteEvent[cm]{Object: obj(lbl(web)), DeleteInfo: live}))
	assert.False(t, p.Delete(DeleteEvent[cm]{Object: obj(lbl(db)), DeleteInfo: live}))
	assert.True(t, p.Delete(DeleteEvent[cm]{Object: obj(lbl(web)), DeleteInfo: tombstone}), "stale tombstone object judged as it is")
	assert.False(t, p.Delete(DeleteEvent[cm]{Object: obj(lbl(db)), DeleteInfo: tombstone}))
	assert.True(t, p.Delete(DeleteEvent[cm]{Object: skeleton, DeleteInfo: missing}), "no object to judge: pass")

	nothing := LabelSelector[cm](nil)
	assert.False(t, nothing.Create(CreateEvent[cm]{Object: obj(lbl(web))}), "a nil selector matches nothing")
	assert.ErrorIs(t, Validate(nothing), ErrInvalidPredicate)
}

func TestFromLabelSelector(t *testing.T) {
	p, err := FromLabelSelector[cm](&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"front", "edge"}},
	}})
	require.NoError(t, err)
	require.NoError(t, Validate(p))
	assert.True(t, p.Create(CreateEvent[cm]{Object: obj(lbl(map[string]string{"tier": "edge"}))}))
	assert.False(t, p.Create(CreateEvent[cm]{Object: obj(lbl(map[string]string{"tier": "back"}))}))

	everything, err := FromLabelSelector[cm](&metav1.LabelSelector{})
	require.NoError(t, err)
	assert.True(t, everything.Create(CreateEvent[cm]{Object: obj()}), "an empty selector matches everything")
	nothing, err := FromLabelSelector[cm](nil)
	require.NoError(t, err)
	assert.False(t, nothing.Create(CreateEvent[cm]{Object: obj(lbl(map[string]string{"a": "b"}))}), "a nil selector matches nothing")

	_, err = FromLabelSelector[cm](&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "tier", Operator: "Sometimes"},
	}})
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrInvalidPredicate)
	assert.Contains(t, err.Error(), "Sometimes")
}

func TestMatching(t *testing.T) {
	calls := 0
	named := func(name string) Predicate[cm] {
		return Matching(func(c cm) bool { calls++; return c.Name == name })
	}
	p := named("c")
	other := func(m *metav1.ObjectMeta) { m.Name = "d" }
	assert.True(t, p.Create(CreateEvent[cm]{Object: obj()}))
	assert.False(t, p.Create(CreateEvent[cm]{Object: obj(other)}))
	runUpdates(t, p, []updateCase{
		{"old matches", obj(), obj(other), true},
		{"new matches", obj(other), obj(), true},
		{"neither", obj(other), obj(other), false},
	})
	assert.False(t, p.Delete(DeleteEvent[cm]{Object: obj(other), DeleteInfo: tombstone}))
	calls = 0
	assert.True(t, named("x").Delete(DeleteEvent[cm]{Object: skeleton, DeleteInfo: missing}))
	assert.Zero(t, calls, "a missing object is not judged")

	var nilMatch Predicate[cm] = Matching[cm](nil)
	assert.True(t, nilMatch.Create(CreateEvent[cm]{Object: obj()}), "a nil function passes")
	assert.ErrorContains(t, Validate(nilMatch), "Matching: nil function")
}

func TestFuncs(t *testing.T) {
	var zero Funcs[cm]
	assert.True(t, zero.Create(CreateEvent[cm]{Object: obj()}))
	assert.True(t, zero.Update(UpdateEvent[cm]{ObjectOld: obj(), ObjectNew: obj()}))
	assert.True(t, zero.Delete(DeleteEvent[cm]{Object: obj(), DeleteInfo: live}))

	var got []string
	f := Funcs[cm]{
		CreateFunc: func(e CreateEvent[cm]) bool { got = append(got, "create"); return e.IsInInitialList },
		UpdateFunc: func(e UpdateEvent[cm]) bool { got = append(got, "update"); return e.ObjectNew.Name == "keep" },
		DeleteFunc: func(e DeleteEvent[cm]) bool { got = append(got, "delete"); return !e.FinalStateUnknown },
	}
	assert.True(t, f.Create(CreateEvent[cm]{Object: obj(), IsInInitialList: true}))
	assert.False(t, f.Create(CreateEvent[cm]{Object: obj()}))
	assert.False(t, f.Update(UpdateEvent[cm]{ObjectOld: obj(), ObjectNew: obj()}))
	assert.True(t, f.Delete(DeleteEvent[cm]{Object: obj(), DeleteInfo: live}))
	assert.False(t, f.Delete(DeleteEvent[cm]{Object: obj(), DeleteInfo: tombstone}))
	assert.Equal(t, []string{"create", "create", "update", "delete", "delete"}, got)
}

// constant answers the same for every event and counts how often it was asked.
type constant struct {
	answer bool
	asked  *int
}

func (c constant) ask() bool                   { *c.asked++; return c.answer }
func (c constant) Create(CreateEvent[cm]) bool { return c.ask() }
func (c constant) Update(UpdateEvent[cm]) bool { return c.ask() }
func (c constant) Delete(DeleteEvent[cm]) bool { return c.ask() }

func TestComposition(t *testing.T) {
	var asked int
	yes, no := constant{true, &asked}, constant{false, &asked}
	events := map[string]func(Predicate[cm]) bool{
		"create": func(p Predicate[cm]) bool { return p.Create(CreateEvent[cm]{Object: obj()}) },
		"update": func(p Predicate[cm]) bool { return p.Update(UpdateEvent[cm]{ObjectOld: obj(), ObjectNew: obj()}) },
		"delete": func(p Predicate[cm]) bool { return p.Delete(DeleteEvent[cm]{Object: obj(), DeleteInfo: live}) },
	}
	for name, ev := range events {
		t.Run(name, func(t *testing.T) {
			cases := []struct {
				name  string
				p     Predicate[cm]
				want  bool
				asked int
			}{
				{"And()", And[cm](), true, 0},
				{"And(yes,yes)", And[cm](yes, yes), true, 2},
				{"And(no,yes) stops at no", And[cm](no, yes), false, 1},
				{"And(yes,no)", And[cm](yes, no), false, 2},
				{"Or()", Or[cm](), false, 0},
				{"Or(yes,no) stops at yes", Or[cm](yes, no), true, 1},
				{"Or(no,no)", Or[cm](no, no), false, 2},
				{"Not(yes)", Not[cm](yes), false, 1},
				{"Not(no)", Not[cm](no), true, 1},
				{"Not(And(yes,no))", Not(And[cm](yes, no)), true, 2},
				{"And(nil) passes", And[cm](nil), true, 0},
				{"Or(no,nil) passes", Or[cm](no, nil), true, 1},
				{"Not(nil) drops", Not[cm](nil), false, 0},
			}
			for _, tc := range cases {
				asked = 0
				assert.Equal(t, tc.want, ev(tc.p), tc.name)
				assert.Equal(t, tc.asked, asked, "%s: predicates asked", tc.name)
			}
		})
	}

	// The common composition: spec changes or label changes.
	p := Or(GenerationChanged[cm](), LabelsChanged[cm]())
	assert.True(t, p.Update(UpdateEvent[cm]{ObjectOld: obj(), ObjectNew: obj(gen(2))}))
	assert.True(t, p.Update(UpdateEvent[cm]{ObjectOld: obj(), ObjectNew: obj(lbl(map[string]string{"a": "b"}))}))
	assert.False(t, p.Update(UpdateEvent[cm]{ObjectOld: obj(), ObjectNew: obj(rv("11"), ann(map[string]string{"a": "b"}))}))
}

func TestValidate(t *testing.T) {
	var asked int
	yes := constant{true, &asked}
	for _, p := range []Predicate[cm]{
		yes, Funcs[cm]{}, GenerationChanged[cm](), LabelSelector[cm](labels.Everything()),
		And[cm](), Or[cm](yes, Not[cm](yes)), Matching(func(cm) bool { return true }), &pointerPredicate{},
	} {
		assert.NoError(t, Validate(p))
	}
	for want, p := range map[string]Predicate[cm]{
		"invalid predicate: nil":                                   nil,
		"invalid predicate: And[1]: nil":                           And[cm](yes, nil),
		"invalid predicate: Or[0]: Not: nil":                       Or(Not[cm](nil), yes),
		"invalid predicate: And[0]: Or[1]: Matching: nil function": And(Or(yes, Matching[cm](nil))),
		"invalid predicate: Not: LabelSelector: nil selector":      Not(LabelSelector[cm](nil)),
	} {
		err := Validate(p)
		require.Error(t, err, want)
		assert.True(t, errors.Is(err, ErrInvalidPredicate))
		assert.Equal(t, want, err.Error())
	}
}

// pointerPredicate is a user's predicate with a pointer receiver.
type pointerPredicate struct{ Funcs[cm] }

func (p *pointerPredicate) Create(e CreateEvent[cm]) bool { return p.Funcs.Create(e) }
