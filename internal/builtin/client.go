package builtin

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/gentype"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
)

// Object is what a typed client serves: an API object with metadata, such as *corev1.Pod (or
// an interface over them, for callers that know the type only at run time).
type Object interface {
	runtime.Object
	metav1.Object
}

// Ops is a typed client of one resource in one namespace: what client-go's generated typed
// clients have in common, with List answering a runtime.Object (the list type differs per T).
type Ops[T Object] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	List(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	UpdateStatus(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
}

// Client returns the typed client of bt in namespace ns (ignored for a cluster-scoped
// resource) through cs, built as client-go builds its own: over the REST client of bt's group
// (cs.CoreV1().RESTClient()) for a real clientset, with the same requests as the generated
// typed client (gentype, protobuf preferred), or over the *testing.Fake behind a client-go
// fake clientset, with the same actions as its generated fake (so its reactors and recorded
// actions see them). A test double wrapping a group client is looked through (backing): its
// own methods are not called, so faults meant for this traffic go in the fake's reactors.
// Calling the generated getter instead (cs.CoreV1().Pods(ns)) would need a call per type in a
// table, which links every typed client into every binary (docs/performance.md, "Binary
// size"). T is bt.Obj or an interface it implements.
func Client[T Object](bt Type, cs kubernetes.Interface, ns string) (Ops[T], error) {
	if !bt.Namespaced {
		ns = ""
	}
	g := groupOf(bt, cs)
	if g == nil {
		return nil, fmt.Errorf("the clientset %T returned no %s client", cs, bt.Group)
	}
	fs := funcsOf[T](bt)
	rc, f := backing(g)
	if rc != nil {
		return gentype.NewClientWithList(bt.GVR.Resource, rc, scheme.ParameterCodec, ns, fs.newObj, fs.newList, fs.options...), nil
	}
	if f != nil {
		return gentype.NewFakeClientWithList(f, ns, bt.GVR, bt.GVK, fs.newObj, fs.newList, fs.copyListMeta, fs.getItems, fs.setItems), nil
	}
	return nil, fmt.Errorf("the clientset %T: its %s client %T has no REST client and no client-go fake behind it", cs, bt.Group, g)
}

// funcs are what gentype's clients of T over bt take, built once per (bt, T) so that building
// a client costs what building a generated one does.
type funcs[T Object] struct {
	newObj       func() T
	newList      func() runtime.Object
	copyListMeta func(dst, src runtime.Object)
	getItems     func(runtime.Object) []T
	setItems     func(runtime.Object, []T)
	options      []gentype.Option[T] // what every generated typed client sets: protobuf preferred
}

type funcsKey struct{ obj, t reflect.Type }

var funcsCache sync.Map // funcsKey → *funcs[T]

func funcsOf[T Object](bt Type) *funcs[T] {
	k := funcsKey{bt.Obj, reflect.TypeFor[T]()}
	if v, ok := funcsCache.Load(k); ok {
		return v.(*funcs[T])
	}
	objType, listType := bt.Obj.Elem(), bt.List.Elem()
	itemsField, listMetaField := bt.itemsField, bt.listMetaField
	fs := &funcs[T]{
		newObj:  func() T { return reflect.New(objType).Interface().(T) },
		newList: func() runtime.Object { return reflect.New(listType).Interface().(runtime.Object) },
		copyListMeta: func(dst, src runtime.Object) {
			reflect.ValueOf(dst).Elem().FieldByIndex(listMetaField).Set(reflect.ValueOf(src).Elem().FieldByIndex(listMetaField))
		},
		getItems: func(l runtime.Object) []T { return items[T](itemsField, l) },
		setItems: func(l runtime.Object, items []T) {
			v := reflect.MakeSlice(reflect.SliceOf(objType), len(items), len(items))
			for i, it := range items {
				v.Index(i).Set(reflect.ValueOf(it).Elem())
			}
			reflect.ValueOf(l).Elem().FieldByIndex(itemsField).Set(v)
		},
		options: []gentype.Option[T]{gentype.PrefersProtobuf[T]()},
	}
	v, _ := funcsCache.LoadOrStore(k, fs)
	return v.(*funcs[T])
}

// maxWrapping bounds how deep backing looks through group clients wrapping group clients.
const maxWrapping = 8

// backing returns what group client g sends through: its REST client (a real clientset's),
// or the *testing.Fake a client-go fake group client (fakecorev1.FakeCoreV1 and its kind,
// generated with a Fake field) records to. A test double that wraps a group client by
// embedding it (to fail some calls) is looked through to the client it wraps.
func backing(g groupClient) (rest.Interface, *clienttesting.Fake) {
	var cur any = g
	for range maxWrapping {
		if gc, ok := cur.(groupClient); ok {
			if rc := gc.RESTClient(); !isNil(rc) {
				return rc, nil
			}
		}
		v := reflect.ValueOf(cur)
		for v.Kind() == reflect.Pointer && !v.IsNil() {
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			return nil, nil
		}
		if f := v.FieldByName("Fake"); f.IsValid() && f.Type() == reflect.TypeFor[*clienttesting.Fake]() && !f.IsNil() {
			return nil, f.Interface().(*clienttesting.Fake)
		}
		cur = nil
		for i := range v.NumField() {
			if fv := v.Field(i); v.Type().Field(i).Anonymous && fv.Kind() == reflect.Interface && !fv.IsNil() && fv.CanInterface() {
				if _, ok := fv.Interface().(groupClient); ok {
					cur = fv.Interface()
					break
				}
			}
		}
		if cur == nil {
			return nil, nil
		}
	}
	return nil, nil
}

// Items returns the items of l, a list of bt, as pointers into its own array (no copy).
func Items[T Object](bt Type, l runtime.Object) []T { return items[T](bt.itemsField, l) }

func items[T Object](itemsField []int, l runtime.Object) []T {
	items := reflect.ValueOf(l).Elem().FieldByIndex(itemsField)
	out := make([]T, items.Len())
	for i := range out {
		out[i] = items.Index(i).Addr().Interface().(T)
	}
	return out
}

// ProtobufConfig returns cfg for a clientset of the built-in types: protobuf on the wire for every
// request, as kube-controller-manager's --kube-api-content-type and controller-runtime's client
// of built-in types send, unless cfg names a content type. client-go's generated methods prefer
// protobuf already; the hand-written ones (the core Events' CreateWithEventNamespace, which the
// event recorder calls, a Pod's eviction or binding) send and ask for the config's content type,
// JSON when unset, and decoding JSON costs several times protobuf's CPU. cfg is not modified.
func ProtobufConfig(cfg *rest.Config) *rest.Config {
	if cfg.ContentType != "" {
		return cfg
	}
	out := rest.CopyConfig(cfg)
	out.ContentType = runtime.ContentTypeProtobuf
	if out.AcceptContentTypes == "" {
		out.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	}
	return out
}

// Uncompressed returns cfg, or a copy of it, that does not ask the API server
// to gzip its responses, as kube-controller-manager and kube-scheduler do
// not: on the network between a controller and its API server, compression
// costs CPU on both ends and latency, and a compressed watch stream holds a
// decompressor (about 40 KB) on the client for as long as the watch lives.
func Uncompressed(cfg *rest.Config) *rest.Config {
	if cfg.DisableCompression {
		return cfg
	}
	out := rest.CopyConfig(cfg)
	out.DisableCompression = true
	return out
}
