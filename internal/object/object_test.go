package object_test

import (
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/internal/object"
)

func nameOf[T object.Object](obj T) string { return obj.GetNamespace() + "/" + obj.GetName() }

func Example() {
	fmt.Println(nameOf(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-0"}}))
	// Output: default/web-0
}

func TestIsNil(t *testing.T) {
	var pod *corev1.Pod
	var obj metav1.Object = pod
	var m map[string]string
	var f func()
	for name, c := range map[string]struct {
		v    any
		want bool
	}{
		"nil":                   {nil, true},
		"typed nil pointer":     {pod, true},
		"nil pointer in object": {obj, true},
		"nil map":               {m, true},
		"nil func":              {f, true},
		"pointer":               {&corev1.Pod{}, false},
		"string":                {"", false},
	} {
		if got := object.IsNil(c.v); got != c.want {
			t.Errorf("%s: IsNil = %v, want %v", name, got, c.want)
		}
	}
}

func TestIsNilValue(t *testing.T) {
	var pod *corev1.Pod
	if !object.IsNilValue(reflect.Value{}) || !object.IsNilValue(reflect.ValueOf(pod)) || object.IsNilValue(reflect.ValueOf(1)) {
		t.Error("IsNilValue: the zero Value and a nil pointer are nil, an int is not")
	}
}

func TestTypeName(t *testing.T) {
	for want, typ := range map[string]reflect.Type{
		"*k8s.io/api/core/v1.Pod":      reflect.TypeFor[*corev1.Pod](),
		"k8s.io/api/core/v1.Pod":       reflect.TypeFor[corev1.Pod](),
		"**k8s.io/api/core/v1.PodList": reflect.TypeFor[**corev1.PodList](),
		"[]string":                     reflect.TypeFor[[]string](),
		"*int":                         reflect.TypeFor[*int](),
		"<nil>":                        nil,
	} {
		if got := object.TypeName(typ); got != want {
			t.Errorf("TypeName = %q, want %q", got, want)
		}
	}
}
