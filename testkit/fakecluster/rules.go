package fakecluster

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
	clienttesting "k8s.io/client-go/testing"
)

// react serves every request of both front ends from the store with the API server's rules. It
// is the last reactor of the chain and runs under the clientset's lock, so each read-check-write
// below is atomic with respect to every other request.
func (c *Cluster) react(action clienttesting.Action) (bool, runtime.Object, error) {
	gvr, ns, ki, err := c.resolve(action)
	if err != nil {
		return true, nil, err
	}
	switch a := action.(type) {
	case clienttesting.GetActionImpl:
		if sub := a.GetSubresource(); sub != "" {
			return true, nil, unsupportedSubresource(gvr, sub)
		}
		obj, err := c.store.Get(gvr, ns, a.GetName())
		return true, obj, err
	case clienttesting.ListActionImpl:
		obj, err := c.store.list(gvr, ns, a.ListOptions)
		return true, obj, err
	case clienttesting.CreateActionImpl:
		switch sub := a.GetSubresource(); {
		case sub == "":
			obj, err := c.create(gvr, ki, ns, a.GetObject())
			return true, obj, err
		case sub == "binding" && gvr.Group == "" && gvr.Resource == "pods":
			obj, err := c.bind(gvr, ns, a.GetObject())
			return true, obj, err
		default:
			return true, nil, unsupportedSubresource(gvr, sub)
		}
	case clienttesting.UpdateActionImpl:
		obj, err := c.update(gvr, ki, ns, a.GetObject(), a.GetSubresource())
		return true, obj, err
	case clienttesting.PatchActionImpl:
		obj, err := c.patch(gvr, ki, ns, a)
		return true, obj, err
	case clienttesting.DeleteActionImpl:
		if sub := a.GetSubresource(); sub != "" {
			return true, nil, unsupportedSubresource(gvr, sub)
		}
		return true, nil, c.delete(gvr, ns, a.GetName(), a.DeleteOptions.Preconditions)
	case clienttesting.DeleteCollectionActionImpl:
		return true, nil, c.deleteCollection(gvr, ns, a.ListOptions)
	}
	return true, nil, apierrors.NewMethodNotSupported(gvr.GroupResource(), action.GetVerb())
}

// reactWatch serves watches from the store (see store.Watch).
func (c *Cluster) reactWatch(action clienttesting.Action) (bool, watch.Interface, error) {
	var opts metav1.ListOptions
	if w, ok := action.(clienttesting.WatchActionImpl); ok {
		opts = w.ListOptions
	}
	gvr, ns, _, err := c.resolve(action)
	if err != nil {
		return true, nil, err
	}
	w, err := c.store.watch(gvr, ns, opts)
	return true, w, err
}

// checkScope refuses a namespace on a cluster-scoped custom resource, for which an API server
// has no such path.
// resolve finds the resource an action addresses and checks its namespace against its scope.
func (c *Cluster) resolve(action clienttesting.Action) (schema.GroupVersionResource, string, kindInfo, error) {
	gvr, ns := action.GetResource(), action.GetNamespace()
	ki, err := c.info(gvr)
	if err != nil {
		return gvr, ns, ki, err
	}
	return gvr, ns, ki, checkScope(gvr, ki, ns)
}

func checkScope(gvr schema.GroupVersionResource, ki kindInfo, ns string) error {
	if !ki.typed && !ki.namespaced && ns != "" {
		return apierrors.NewNotFound(gvr.GroupResource(), fmt.Sprintf("(namespace %q: the resource is cluster-scoped)", ns))
	}
	return nil
}

func unsupportedSubresource(gvr schema.GroupVersionResource, sub string) error {
	return apierrors.NewBadRequest(fmt.Sprintf("fakecluster: subresource %q of %s is not supported", sub, gvrString(gvr)))
}

func invalid(gvr schema.GroupVersionResource, name, field, msg string) error {
	return apierrors.NewBadRequest(fmt.Sprintf("%s %q is invalid: %s: %s", gvr.Resource, name, field, msg))
}

// create stamps what the API server assigns on creation: name from generateName, UID,
// creationTimestamp, generation, resourceVersion, and the status a new object starts with.
func (c *Cluster) create(gvr schema.GroupVersionResource, ki kindInfo, ns string, in runtime.Object) (runtime.Object, error) {
	obj, err := normalize(in, ki)
	if err != nil {
		return nil, err
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if m.GetResourceVersion() != "" {
		return nil, invalid(gvr, m.GetName(), "metadata.resourceVersion", "must not be set on objects to be created")
	}
	if m.GetNamespace() == "" {
		m.SetNamespace(ns)
	}
	if m.GetNamespace() != ns {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the namespace of the provided object (%q) does not match the namespace sent on the request (%q)", m.GetNamespace(), ns))
	}
	c.store.mu.Lock()
	defer c.store.mu.Unlock()
	if m.GetName() == "" {
		if m.GetGenerateName() == "" {
			return nil, invalid(gvr, "", "metadata.name", "name or generateName is required")
		}
		// The API server adds five random characters and, on a clash, answers AlreadyExists;
		// here a clash is retried instead, since nothing can be done about it in a test.
		for {
			name := m.GetGenerateName() + utilrand.String(5)
			if _, taken := c.store.getLocked(gvr, ns, name); !taken {
				m.SetName(name)
				break
			}
		}
	}
	m.SetUID("") // the server, not the client, picks UIDs
	m.SetCreationTimestamp(metav1.Time{})
	m.SetGeneration(0)
	c.store.stampNew(m)
	resetStatusOnCreate(obj, ki)
	if u, ok := obj.(*unstructured.Unstructured); ok && ki.schema != nil {
		if err := c.applySchema(ki, u.Object, nil, false); err != nil {
			return nil, err
		}
	}
	if u, ok := obj.(*unstructured.Unstructured); ok && gvr == CRDResource {
		if err := c.serveCRD(u); err != nil {
			return nil, err
		}
	}
	if err := c.store.putLocked(gvr, obj, true); err != nil {
		return nil, err
	}
	return obj.DeepCopyObject(), nil
}

// resetStatusOnCreate drops the status a client sent with a create, as the API server's
// strategies do for resources with a status subresource, and sets the starting phase of Pods
// and Namespaces.
func resetStatusOnCreate(obj runtime.Object, ki kindInfo) {
	switch o := obj.(type) {
	case *corev1.Pod:
		o.Status = corev1.PodStatus{Phase: corev1.PodPending}
	case *corev1.Namespace:
		o.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
	case *unstructured.Unstructured:
		if ki.status {
			delete(o.Object, "status")
		}
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
func (c *Cluster) bind(gvr schema.GroupVersionResource, ns string, in runtime.Object) (runtime.Object, error) {
	b, ok := in.(*corev1.Binding)
	if !ok {
		u, isU := in.(*unstructured.Unstructured)
		if !isU {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("binding: unexpected object %T", in))
		}
		b = &corev1.Binding{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, b); err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
	}
	c.store.mu.Lock()
	defer c.store.mu.Unlock()
	stored, ok := c.store.getLocked(gvr, ns, b.Name)
	if !ok {
		return nil, apierrors.NewNotFound(gvr.GroupResource(), b.Name)
	}
	pod := stored.(*corev1.Pod).DeepCopy()
	if pod.Spec.NodeName != "" {
		return nil, apierrors.NewConflict(gvr.GroupResource(), b.Name,
			fmt.Errorf("pod %s is already assigned to node %q", b.Name, pod.Spec.NodeName))
	}
	pod.Spec.NodeName = b.Target.Name
	setPodCondition(&pod.Status, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(c.clock.Now())})
	if err := c.store.putLocked(gvr, pod, false); err != nil {
		return nil, err
	}
	return in, nil
}

func setPodCondition(st *corev1.PodStatus, cond corev1.PodCondition) {
	for i := range st.Conditions {
		if st.Conditions[i].Type == cond.Type {
			st.Conditions[i] = cond
			return
		}
	}
	st.Conditions = append(st.Conditions, cond)
}

// errStale is the message of a Conflict on a stale resourceVersion, the API server's words.
var errStale = errors.New("the object has been modified; please apply your changes to the latest version and try again")

// update stores an update (or, with subresource "status", a status update) with the API server's
// rules: the resourceVersion and UID sent must match the stored ones (else Conflict), metadata
// the server owns is kept, and generation is bumped when anything outside metadata (and status,
// for a resource with a status subresource) changed. With a status subresource a main update
// keeps the stored status and a status update changes nothing but the status.
func (c *Cluster) update(gvr schema.GroupVersionResource, ki kindInfo, ns string, in runtime.Object, subresource string) (runtime.Object, error) {
	switch {
	case subresource == "status" && !ki.status:
		return nil, apierrors.NewNotFound(gvr.GroupResource(), "status")
	case subresource != "" && subresource != "status":
		return nil, unsupportedSubresource(gvr, subresource)
	}
	c.store.mu.Lock()
	defer c.store.mu.Unlock()
	return c.updateLocked(gvr, ki, ns, in, subresource)
}

// updateLocked is update under the store's lock.
func (c *Cluster) updateLocked(gvr schema.GroupVersionResource, ki kindInfo, ns string, in runtime.Object, subresource string) (runtime.Object, error) {
	obj, err := normalize(in, ki)
	if err != nil {
		return nil, err
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	stored, ok := c.store.getLocked(gvr, ns, m.GetName())
	if !ok {
		return nil, apierrors.NewNotFound(gvr.GroupResource(), m.GetName())
	}
	sm, _ := meta.Accessor(stored)
	if rv := m.GetResourceVersion(); rv != "" && rv != sm.GetResourceVersion() {
		return nil, apierrors.NewConflict(gvr.GroupResource(), m.GetName(), errStale)
	}
	if uid := m.GetUID(); uid != "" && uid != sm.GetUID() {
		return nil, apierrors.NewConflict(gvr.GroupResource(), m.GetName(),
			fmt.Errorf("Precondition failed: UID in precondition: %s, UID in object meta: %s", uid, sm.GetUID()))
	}

	old, err := asMap(stored)
	if err != nil {
		return nil, err
	}
	next, err := asMap(obj)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if subresource == "status" {
		out = runtime.DeepCopyJSON(old)
		copyField(out, next, "status")
	} else {
		out = next
		if ki.status {
			copyField(out, old, "status")
		}
		md, _ := out["metadata"].(map[string]any)
		if md == nil {
			md = map[string]any{}
			out["metadata"] = md
		}
		oldMD, _ := old["metadata"].(map[string]any)
		for _, k := range []string{"uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generateName", "namespace"} {
			if v, ok := oldMD[k]; ok {
				md[k] = v
			} else {
				delete(md, k)
			}
		}
	}
	if err := c.applySchema(ki, out, old, subresource == "status"); err != nil {
		return nil, err
	}
	gen := sm.GetGeneration()
	if !equality.Semantic.DeepEqual(generationFields(old, ki), generationFields(out, ki)) {
		gen++
	}
	result, err := fromMap(out, stored, ki)
	if err != nil {
		return nil, err
	}
	rm, _ := meta.Accessor(result)
	rm.SetGeneration(gen)
	if sm.GetDeletionTimestamp() != nil {
		if added := newFinalizers(sm.GetFinalizers(), rm.GetFinalizers()); len(added) > 0 {
			return nil, apierrors.NewForbidden(gvr.GroupResource(), m.GetName(),
				fmt.Errorf("no new finalizers can be added if the object is being deleted, found new finalizers %q", added))
		}
	}
	if err := c.store.putLocked(gvr, result, false); err != nil {
		return nil, err
	}
	if rm.GetDeletionTimestamp() != nil && len(rm.GetFinalizers()) == 0 {
		// The last finalizer is gone: the deletion completes, as on an API server.
		if _, err := c.store.deleteLocked(gvr, rm.GetNamespace(), rm.GetName()); err != nil {
			return nil, err
		}
	}
	return result.DeepCopyObject(), nil
}

// newFinalizers are the finalizers of next that prev lacks.
func newFinalizers(prev, next []string) []string {
	var added []string
	for _, f := range next {
		if !slices.Contains(prev, f) {
			added = append(added, f)
		}
	}
	return added
}

// copyField sets dst[key] to src[key], or removes it when src has none.
func copyField(dst, src map[string]any, key string) {
	if v, ok := src[key]; ok {
		dst[key] = runtime.DeepCopyJSONValue(v)
	} else {
		delete(dst, key)
	}
}

// asMap is obj as JSON fields; the result may share nothing with obj.
func asMap(obj runtime.Object) (map[string]any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return runtime.DeepCopyJSON(u.Object), nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	return m, nil
}

// fromMap turns JSON fields back into an object of the stored form (like is a stored object).
func fromMap(m map[string]any, like runtime.Object, ki kindInfo) (runtime.Object, error) {
	if !ki.typed {
		u := &unstructured.Unstructured{Object: m}
		u.SetGroupVersionKind(ki.gvk)
		return u, nil
	}
	out := reflect.New(reflect.TypeOf(like).Elem()).Interface().(runtime.Object)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, out); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	out.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	return out, nil
}

// generationFields is everything generation tracks: the object without metadata and type, and
// without status when the resource has a status subresource.
func generationFields(u map[string]any, ki kindInfo) map[string]any {
	c := make(map[string]any, len(u))
	for k, v := range u {
		switch k {
		case "metadata", "apiVersion", "kind":
		case "status":
			if !ki.status {
				c[k] = v
			}
		default:
			c[k] = v
		}
	}
	return c
}

// delete removes an object (or, when it has finalizers, marks it deleted), after checking the
// UID and resourceVersion preconditions.
func (c *Cluster) delete(gvr schema.GroupVersionResource, ns, name string, pre *metav1.Preconditions) error {
	c.store.mu.Lock()
	defer c.store.mu.Unlock()
	stored, ok := c.store.getLocked(gvr, ns, name)
	if !ok {
		return apierrors.NewNotFound(gvr.GroupResource(), name)
	}
	if pre != nil {
		sm, _ := meta.Accessor(stored)
		if pre.UID != nil && *pre.UID != sm.GetUID() {
			return apierrors.NewConflict(gvr.GroupResource(), name,
				fmt.Errorf("Precondition failed: UID in precondition: %s, UID in object meta: %s", *pre.UID, sm.GetUID()))
		}
		if pre.ResourceVersion != nil && *pre.ResourceVersion != sm.GetResourceVersion() {
			return apierrors.NewConflict(gvr.GroupResource(), name,
				fmt.Errorf("Precondition failed: ResourceVersion in precondition: %s, ResourceVersion in object meta: %s", *pre.ResourceVersion, sm.GetResourceVersion()))
		}
	}
	return c.deleteOrMarkLocked(gvr, stored)
}

// deleteOrMarkLocked deletes stored at once unless it has finalizers: then, as an API server
// does, it only sets deletionTimestamp (once) and the object goes when an update removes its
// last finalizer.
func (c *Cluster) deleteOrMarkLocked(gvr schema.GroupVersionResource, stored runtime.Object) error {
	sm, _ := meta.Accessor(stored)
	if len(sm.GetFinalizers()) == 0 {
		_, err := c.store.deleteLocked(gvr, sm.GetNamespace(), sm.GetName())
		return err
	}
	if sm.GetDeletionTimestamp() != nil {
		return nil // already being deleted: waiting for its finalizers
	}
	marked := stored.DeepCopyObject()
	mm, _ := meta.Accessor(marked)
	now := metav1.NewTime(c.clock.Now().Truncate(time.Second))
	mm.SetDeletionTimestamp(&now)
	mm.SetDeletionGracePeriodSeconds(new(int64))
	// As kube-apiserver's graceful deletion does (rest.BeforeDelete): the deletion is a change
	// of the object's desired state, so a controller filtering on generation sees it.
	if g := mm.GetGeneration(); g > 0 {
		mm.SetGeneration(g + 1)
	}
	return c.store.putLocked(gvr, marked, false)
}

func (c *Cluster) deleteCollection(gvr schema.GroupVersionResource, ns string, opts metav1.ListOptions) error {
	sel, err := newSelector(opts)
	if err != nil {
		return err
	}
	c.store.mu.Lock()
	defer c.store.mu.Unlock()
	var doomed []runtime.Object
	for _, obj := range c.store.objects[gvr] {
		if sel.matches(obj, ns) {
			doomed = append(doomed, obj)
		}
	}
	sortObjects(doomed)
	for _, obj := range doomed {
		if err := c.deleteOrMarkLocked(gvr, obj); err != nil {
			return err
		}
	}
	return nil
}
