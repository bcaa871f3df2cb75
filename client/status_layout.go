package client

import (
	"fmt"
	"reflect"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/internal/object"
)

// statusLayout is where an object type keeps its status, and in it the fields PatchStatus
// sets: found by reflection once per type (statusLayoutOf).
type statusLayout struct {
	status      []int        // index of Status in the object's struct
	statusPtr   bool         // Status is a pointer to its struct
	statusType  reflect.Type // the status struct
	observed    []int        // index of ObservedGeneration in the status struct; nil without
	observedPtr bool         // ObservedGeneration is an *int64
	conditions  []int        // index of Conditions ([]metav1.Condition) in it; nil without
}

var statusLayouts sync.Map // reflect.Type → *statusLayout or error

// statusLayoutOf returns the status layout of the object type t, or why it has none.
func statusLayoutOf(t reflect.Type) (*statusLayout, error) {
	if v, ok := statusLayouts.Load(t); ok {
		if err, isErr := v.(error); isErr {
			return nil, err
		}
		return v.(*statusLayout), nil
	}
	l, err := resolveStatus(t)
	if err != nil {
		statusLayouts.Store(t, err)
		return nil, err
	}
	statusLayouts.Store(t, l)
	return l, nil
}

var conditionsType = reflect.TypeFor[[]metav1.Condition]()

func resolveStatus(t reflect.Type) (*statusLayout, error) {
	name := object.TypeName(t)
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("%s is not a pointer to an API struct: %w", name, ErrNoStatus)
	}
	f, ok := t.Elem().FieldByName("Status")
	if !ok || !f.IsExported() {
		return nil, fmt.Errorf("%s has no Status field: %w", name, ErrNoStatus)
	}
	if j := jsonName(f); j != "status" {
		return nil, fmt.Errorf("%s's Status field is encoded as %q, not \"status\": %w", name, j, ErrNoStatus)
	}
	l := &statusLayout{status: f.Index, statusType: f.Type}
	if l.statusType.Kind() == reflect.Pointer {
		l.statusType, l.statusPtr = l.statusType.Elem(), true
	}
	if l.statusType.Kind() != reflect.Struct {
		return nil, fmt.Errorf("%s's Status is a %s, not a struct: %w", name, f.Type, ErrNoStatus)
	}
	if g, ok := l.statusType.FieldByName("ObservedGeneration"); ok && g.IsExported() {
		switch {
		case g.Type.Kind() == reflect.Int64:
			l.observed = g.Index
		case g.Type.Kind() == reflect.Pointer && g.Type.Elem().Kind() == reflect.Int64:
			l.observed, l.observedPtr = g.Index, true
		}
	}
	if c, ok := l.statusType.FieldByName("Conditions"); ok && c.IsExported() && c.Type == conditionsType {
		l.conditions = c.Index
	}
	return l, nil
}

// jsonName is the key encoding/json writes for f.
func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" {
		return f.Name
	}
	return name
}

// statuses returns the status of old and that of next, after setting next's observed
// generations to next's metadata.generation. next is a private copy; old is not modified.
func (l *statusLayout) statuses(old, next metav1.Object) (before, after any, err error) {
	ov, err := reflect.ValueOf(old).Elem().FieldByIndexErr(l.status)
	if err != nil {
		return nil, nil, fmt.Errorf("status: %w", err)
	}
	nv, err := reflect.ValueOf(next).Elem().FieldByIndexErr(l.status)
	if err != nil {
		return nil, nil, fmt.Errorf("status: %w", err)
	}
	st := nv
	if l.statusPtr {
		if nv.IsNil() {
			if l.observed == nil {
				// Nothing to record: no status stays no status.
				return ov.Interface(), nv.Interface(), nil
			}
			nv.Set(reflect.New(l.statusType))
		}
		st = nv.Elem()
	}
	gen := next.GetGeneration()
	if l.observed != nil {
		f, err := st.FieldByIndexErr(l.observed)
		if err != nil {
			return nil, nil, fmt.Errorf("status.observedGeneration: %w", err)
		}
		if l.observedPtr {
			p := reflect.New(f.Type().Elem())
			p.Elem().SetInt(gen)
			f.Set(p)
		} else {
			f.SetInt(gen)
		}
	}
	if l.conditions != nil {
		f, err := st.FieldByIndexErr(l.conditions)
		if err != nil {
			return nil, nil, fmt.Errorf("status.conditions: %w", err)
		}
		conds := f.Interface().([]metav1.Condition)
		for i := range conds {
			conds[i].ObservedGeneration = gen
		}
	}
	return ov.Interface(), nv.Interface(), nil
}
