package memcluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"
)

// ErrNotFake is returned by Install for a clientset that has no default object reactor to stand
// in front of (one whose reaction chain was emptied).
var ErrNotFake = errors.New("memcluster: clientset has no default object reactor")

// New returns a fake clientset seeded with objs that writes like an API server (see the package
// documentation). Seed objects are stamped as if they had been created: a UID, a creation
// timestamp, generation 1 and a resourceVersion, keeping values the caller set (except the
// resourceVersion, which the cluster owns).
func New(objs ...runtime.Object) (*fake.Clientset, error) {
	cs := fake.NewClientset()
	s, err := install(cs, clock.RealClock{})
	if err != nil {
		return nil, err
	}
	for i, obj := range objs {
		if obj == nil {
			return nil, fmt.Errorf("memcluster: seed object %d is nil", i)
		}
		obj = obj.DeepCopyObject()
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, fmt.Errorf("memcluster: seed object %d: %w", i, err)
		}
		s.stampNew(m)
		if err := cs.Tracker().Add(obj); err != nil {
			return nil, fmt.Errorf("memcluster: seed %s %s/%s: %w", reflect.TypeOf(obj), m.GetNamespace(), m.GetName(), err)
		}
	}
	return cs, nil
}

// Install makes an existing fake clientset write like an API server: its reactor is inserted
// just before the fake's default object reactor, so reactors the caller prepended earlier or
// later (fault injection, latency, such as controllertest's) still see every request first.
// Objects already in the tracker are left as they are; give them UIDs and resourceVersions, or
// create them through the clientset after Install.
func Install(cs *fake.Clientset) error {
	_, err := install(cs, clock.RealClock{})
	return err
}

func install(cs *fake.Clientset, clk clock.PassiveClock) (*server, error) {
	s := &server{tracker: cs.Tracker(), clock: clk}
	r := &clienttesting.SimpleReactor{Verb: "*", Resource: "*", Reaction: s.react}
	// Invokes holds this lock while it walks the chain, so the splice cannot race a request.
	cs.Lock()
	defer cs.Unlock()
	n := len(cs.ReactionChain)
	if n == 0 {
		return nil, ErrNotFake
	}
	// The default object reactor is the one fake.NewClientset appended; everything prepended
	// since sits before it.
	chain := make([]clienttesting.Reactor, 0, n+1)
	chain = append(chain, cs.ReactionChain[:n-1]...)
	chain = append(chain, r, cs.ReactionChain[n-1])
	cs.ReactionChain = chain

	// The same for watches: in front of the default watch reactor, behind everything else.
	w := &clienttesting.SimpleWatchReactor{Resource: "*", Reaction: s.watch}
	if m := len(cs.WatchReactionChain); m > 0 {
		wchain := make([]clienttesting.WatchReactor, 0, m+1)
		wchain = append(wchain, cs.WatchReactionChain[:m-1]...)
		cs.WatchReactionChain = append(wchain, w, cs.WatchReactionChain[m-1])
	} else {
		cs.WatchReactionChain = []clienttesting.WatchReactor{w}
	}
	return s, nil
}

// watch serves watches from the tracker, copying every event's object. The tracker hands
// objects that already existed when a watch started to the watcher without a copy, sharing
// them with its store; an informer's transform (which may mutate what it is given, as client-go
// allows) then races with every later read of the store. An API server shares no memory with
// its clients.
func (s *server) watch(action clienttesting.Action) (bool, watch.Interface, error) {
	var opts metav1.ListOptions
	if w, ok := action.(clienttesting.WatchActionImpl); ok {
		opts = w.ListOptions
	}
	inner, err := s.tracker.Watch(action.GetResource(), action.GetNamespace(), opts)
	if err != nil {
		return true, nil, err
	}
	return true, CopyEvents(inner), nil
}

// CopyEvents returns a watch that forwards inner's events with deep copies of their objects,
// for reactors that serve watches from a fake's tracker themselves. Stop stops inner too.
func CopyEvents(inner watch.Interface) watch.Interface {
	w := &copyingWatch{inner: inner, out: make(chan watch.Event), stop: make(chan struct{})}
	go w.loop()
	return w
}

type copyingWatch struct {
	inner watch.Interface
	out   chan watch.Event
	stop  chan struct{}
	once  sync.Once
}

func (w *copyingWatch) loop() {
	defer close(w.out)
	for ev := range w.inner.ResultChan() {
		if ev.Object != nil {
			ev.Object = ev.Object.DeepCopyObject()
		}
		select {
		case w.out <- ev:
		case <-w.stop:
			return
		}
	}
}

func (w *copyingWatch) ResultChan() <-chan watch.Event { return w.out }

func (w *copyingWatch) Stop() {
	w.once.Do(func() {
		close(w.stop)
		w.inner.Stop()
	})
}

// server is the API-server behaviour in front of the fake's object tracker. Its react runs under
// the fake clientset's lock, so a read-check-write sequence (resourceVersion preconditions) is
// atomic with respect to every other request.
type server struct {
	tracker clienttesting.ObjectTracker
	clock   clock.PassiveClock

	mu sync.Mutex // guards rv: seeding happens outside the fake's lock
	rv int64
}

// nextRV returns a new resourceVersion, unique and increasing across all resources, as etcd's
// revision is.
func (s *server) nextRV() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rv++
	return strconv.FormatInt(s.rv, 10)
}

func (s *server) stampNew(m metav1.Object) {
	if m.GetUID() == "" {
		m.SetUID(uuid.NewUUID())
	}
	if ts := m.GetCreationTimestamp(); ts.IsZero() {
		// Stored in whole seconds, as the API server's serialization does.
		m.SetCreationTimestamp(metav1.NewTime(s.clock.Now().Truncate(time.Second)))
	}
	if m.GetGeneration() == 0 {
		m.SetGeneration(1)
	}
	m.SetResourceVersion(s.nextRV())
}

func (s *server) react(action clienttesting.Action) (bool, runtime.Object, error) {
	switch a := action.(type) {
	case clienttesting.CreateActionImpl:
		switch a.GetSubresource() {
		case "":
			obj, err := s.create(a)
			return true, obj, err
		case "binding":
			if a.GetResource().Resource == "pods" {
				obj, err := s.bind(a)
				return true, obj, err
			}
		}
	case clienttesting.UpdateActionImpl:
		obj, err := s.update(a.GetResource(), a.GetNamespace(), a.GetObject(), a.GetSubresource(), a.UpdateOptions.FieldManager)
		return true, obj, err
	case clienttesting.PatchActionImpl:
		if a.GetPatchType() == types.ApplyPatchType {
			return false, nil, nil // server-side apply: the fake's field manager handles it
		}
		obj, err := s.patch(a)
		return true, obj, err
	}
	// Get, List, Delete, DeleteCollection, Apply, other subresources: the tracker as it is.
	return false, nil, nil
}

// create stamps what the API server assigns on creation: name from generateName, UID,
// creationTimestamp, generation, resourceVersion, and the status a new object starts with.
func (s *server) create(a clienttesting.CreateActionImpl) (runtime.Object, error) {
	gvr, ns := a.GetResource(), a.GetNamespace()
	obj := a.GetObject().DeepCopyObject()
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if m.GetResourceVersion() != "" {
		return nil, invalid(gvr, m.GetName(), "metadata.resourceVersion", "must not be set on objects to be created")
	}
	if m.GetName() == "" {
		if m.GetGenerateName() == "" {
			return nil, invalid(gvr, "", "metadata.name", "name or generateName is required")
		}
		// The API server adds five random characters and, on a clash, answers AlreadyExists;
		// here a clash is retried instead, since nothing can be done about it in a test.
		for {
			name := m.GetGenerateName() + utilrand.String(5)
			if _, err := s.tracker.Get(gvr, ns, name); apierrors.IsNotFound(err) {
				m.SetName(name)
				break
			}
		}
	}
	m.SetUID("") // the server, not the client, picks UIDs
	m.SetCreationTimestamp(metav1.Time{})
	m.SetGeneration(0)
	s.stampNew(m)
	resetStatusOnCreate(obj)
	if err := s.tracker.Create(gvr, obj, ns, a.CreateOptions); err != nil {
		return nil, err
	}
	return s.tracker.Get(gvr, ns, m.GetName())
}

// resetStatusOnCreate drops the status a client sent with a create, as the API server's
// strategies do, and sets the starting phase of the kinds the examples use.
func resetStatusOnCreate(obj runtime.Object) {
	switch o := obj.(type) {
	case *corev1.Pod:
		o.Status = corev1.PodStatus{Phase: corev1.PodPending}
	case *corev1.Namespace:
		o.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
	default:
		v := reflect.ValueOf(obj)
		if v.Kind() == reflect.Pointer && v.Elem().Kind() == reflect.Struct {
			if f := v.Elem().FieldByName("Status"); f.IsValid() && f.CanSet() {
				f.Set(reflect.Zero(f.Type()))
			}
		}
	}
}

// bind is the pods/binding subresource: it assigns a Pending pod to a node, once.
func (s *server) bind(a clienttesting.CreateActionImpl) (runtime.Object, error) {
	b, ok := a.GetObject().(*corev1.Binding)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("binding: unexpected object %T", a.GetObject()))
	}
	gvr, ns := a.GetResource(), a.GetNamespace()
	stored, err := s.tracker.Get(gvr, ns, b.Name)
	if err != nil {
		return nil, err
	}
	pod := stored.(*corev1.Pod).DeepCopy()
	if pod.Spec.NodeName != "" {
		return nil, apierrors.NewConflict(gvr.GroupResource(), b.Name,
			fmt.Errorf("pod %s is already assigned to node %q", b.Name, pod.Spec.NodeName))
	}
	pod.Spec.NodeName = b.Target.Name
	setPodCondition(&pod.Status, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(s.clock.Now())})
	pod.ResourceVersion = s.nextRV()
	if err := s.tracker.Update(gvr, pod, ns); err != nil {
		return nil, err
	}
	return b, nil
}

func setPodCondition(st *corev1.PodStatus, c corev1.PodCondition) {
	for i := range st.Conditions {
		if st.Conditions[i].Type == c.Type {
			st.Conditions[i] = c
			return
		}
	}
	st.Conditions = append(st.Conditions, c)
}

// update applies an update (or, with subresource "status", a status update) with the API
// server's rules: the resourceVersion and UID sent must match the stored ones (else Conflict),
// a main update keeps the stored status and a status update changes nothing but the status,
// metadata the server owns is kept, and generation is bumped when anything outside metadata
// and status changed.
func (s *server) update(gvr schema.GroupVersionResource, ns string, in runtime.Object, subresource, fieldManager string) (runtime.Object, error) {
	if subresource != "" && subresource != "status" {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("memcluster: subresource %q is not supported", subresource))
	}
	m, err := meta.Accessor(in)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	stored, err := s.tracker.Get(gvr, ns, m.GetName())
	if err != nil {
		return nil, err
	}
	sm, _ := meta.Accessor(stored)
	if rv := m.GetResourceVersion(); rv != "" && rv != sm.GetResourceVersion() {
		return nil, apierrors.NewConflict(gvr.GroupResource(), m.GetName(),
			errors.New("the object has been modified; please apply your changes to the latest version and try again"))
	}
	if uid := m.GetUID(); uid != "" && uid != sm.GetUID() {
		return nil, apierrors.NewConflict(gvr.GroupResource(), m.GetName(),
			fmt.Errorf("Precondition failed: UID in precondition: %s, UID in object meta: %s", uid, sm.GetUID()))
	}

	old, err := runtime.DefaultUnstructuredConverter.ToUnstructured(stored)
	if err != nil {
		return nil, err
	}
	next, err := runtime.DefaultUnstructuredConverter.ToUnstructured(in)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if subresource == "status" {
		out = runtime.DeepCopyJSON(old)
		if st, ok := next["status"]; ok {
			out["status"] = st
		} else {
			delete(out, "status")
		}
	} else {
		out = next
		if st, ok := old["status"]; ok {
			out["status"] = st
		} else {
			delete(out, "status")
		}
		md, _ := out["metadata"].(map[string]any)
		if md == nil {
			md = map[string]any{}
			out["metadata"] = md
		}
		oldMD, _ := old["metadata"].(map[string]any)
		for _, k := range []string{"uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generateName"} {
			if v, ok := oldMD[k]; ok {
				md[k] = v
			} else {
				delete(md, k)
			}
		}
	}
	result := reflect.New(reflect.TypeOf(stored).Elem()).Interface().(runtime.Object)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(out, result); err != nil {
		return nil, err
	}
	rm, _ := meta.Accessor(result)
	gen := sm.GetGeneration()
	if !equality.Semantic.DeepEqual(withoutMetaAndStatus(old), withoutMetaAndStatus(out)) {
		gen++
	}
	rm.SetGeneration(gen)
	rm.SetResourceVersion(s.nextRV())
	if err := s.tracker.Update(gvr, result, ns, metav1.UpdateOptions{FieldManager: fieldManager}); err != nil {
		return nil, err
	}
	return s.tracker.Get(gvr, ns, rm.GetName())
}

func withoutMetaAndStatus(u map[string]any) map[string]any {
	c := make(map[string]any, len(u))
	for k, v := range u {
		if k != "metadata" && k != "status" && k != "apiVersion" && k != "kind" {
			c[k] = v
		}
	}
	return c
}

// patch applies a JSON, merge or strategic-merge patch to the stored object and stores the
// result with update's rules. A resourceVersion or UID in the patch is a precondition, as on the
// API server (a patch carrying a stale one fails with Conflict).
func (s *server) patch(a clienttesting.PatchActionImpl) (runtime.Object, error) {
	gvr, ns := a.GetResource(), a.GetNamespace()
	stored, err := s.tracker.Get(gvr, ns, a.GetName())
	if err != nil {
		return nil, err
	}
	old, err := json.Marshal(stored)
	if err != nil {
		return nil, err
	}
	modified, err := ApplyPatch(a.GetPatchType(), old, a.GetPatch(), reflect.New(reflect.TypeOf(stored).Elem()).Interface())
	if err != nil {
		return nil, err
	}
	result := reflect.New(reflect.TypeOf(stored).Elem()).Interface().(runtime.Object)
	if err := json.Unmarshal(modified, result); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	return s.update(gvr, ns, result, a.GetSubresource(), a.PatchOptions.FieldManager)
}

// ApplyPatch applies a JSON, merge or strategic-merge patch to the JSON document old, as the API
// server does; schema is the Go type strategic merge reads its list semantics from (nil for a
// custom resource, which the API server refuses strategic merge for: pass no such patch). A
// patch that does not decode or apply is a BadRequest.
func ApplyPatch(pt types.PatchType, old, patch []byte, schema any) ([]byte, error) {
	var (
		modified []byte
		err      error
	)
	switch pt {
	case types.JSONPatchType:
		p, derr := jsonpatch.DecodePatch(patch)
		if derr != nil {
			return nil, apierrors.NewBadRequest(derr.Error())
		}
		modified, err = p.Apply(old)
	case types.MergePatchType:
		modified, err = jsonpatch.MergePatch(old, patch)
	case types.StrategicMergePatchType:
		if schema == nil {
			return nil, apierrors.NewBadRequest("strategic merge patch needs a Go type to read list semantics from")
		}
		modified, err = strategicpatch.StrategicMergePatch(old, patch, schema)
	default:
		return nil, apierrors.NewBadRequest(fmt.Sprintf("patch type %q is not supported", pt))
	}
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	return modified, nil
}

func invalid(gvr schema.GroupVersionResource, name, field, msg string) error {
	return apierrors.NewBadRequest(fmt.Sprintf("%s %q is invalid: %s: %s", gvr.Resource, name, field, msg))
}
