package fakecluster

import (
	"errors"
	"fmt"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"net/http"
	"reflect"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	clienttesting "k8s.io/client-go/testing"
)

// react serves every request of both front ends from the store with the API server's rules. It
// is the last reactor of the chain and runs under the clientset's lock, so each read-check-write
// below is atomic with respect to every other request.
func (c *Cluster) react(action clienttesting.Action) (bool, runtime.Object, error) {
	if isServerVersion(action) {
		// Discovery's ServerVersion (GET /version): answered, as a server
		// does; the fake discovery client supplies the version itself.
		return true, nil, nil
	}
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
			obj, err := c.create(gvr, ki, ns, a.GetObject(), c.managerName(a.CreateOptions.FieldManager))
			return true, obj, err
		case sub == "binding" && gvr.Group == "" && gvr.Resource == "pods":
			obj, err := c.bind(gvr, ns, a.GetObject())
			return true, obj, err
		default:
			return true, nil, unsupportedSubresource(gvr, sub)
		}
	case clienttesting.UpdateActionImpl:
		obj, err := c.update(gvr, ki, ns, a.GetObject(), a.GetSubresource(), fieldOwner{manager: c.managerName(a.UpdateOptions.FieldManager)})
		return true, obj, err
	case clienttesting.PatchActionImpl:
		obj, err := c.patch(gvr, ki, ns, a)
		return true, obj, err
	case clienttesting.DeleteActionImpl:
		if sub := a.GetSubresource(); sub != "" {
			return true, nil, unsupportedSubresource(gvr, sub)
		}
		return true, nil, c.delete(gvr, ns, a.GetName(), a.DeleteOptions)
	case clienttesting.DeleteCollectionActionImpl:
		return true, nil, c.deleteCollection(gvr, ns, a.ListOptions, a.DeleteOptions)
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

// required is the 422 an API server's validation answers for a missing field.
func required(ki kindInfo, name string, path *field.Path, msg string) error {
	return apierrors.NewInvalid(ki.gvk.GroupKind(), name, field.ErrorList{field.Required(path, msg)})
}

// create stamps what the API server assigns on creation: name from generateName, UID,
// creationTimestamp, generation, resourceVersion, managedFields for manager, and the status a
// new object starts with.
func (c *Cluster) create(gvr schema.GroupVersionResource, ki kindInfo, ns string, in runtime.Object, manager string) (runtime.Object, error) {
	obj, err := normalize(in, ki)
	if err != nil {
		return nil, err
	}
	// Before the field manager sees it, as the server converts a request before writing it.
	convertOnWrite(obj)
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if m.GetResourceVersion() != "" {
		// kube-apiserver's storage refuses it with a plain error, which reaches the client as a
		// 500 without a reason; the same here, so a test sees what production would.
		return nil, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError,
			Message: "resourceVersion should not be set on objects to be created"}}
	}
	if m.GetNamespace() == "" {
		m.SetNamespace(ns)
	}
	if m.GetNamespace() != ns {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the namespace of the provided object (%q) does not match the namespace sent on the request (%q)", m.GetNamespace(), ns))
	}
	obj = c.recordUpdate(ki, "", nil, obj, manager)
	c.store.mu.Lock()
	defer c.store.mu.Unlock()
	return c.createLocked(gvr, ki, ns, obj)
}

// createLocked is create under the store's lock, for obj in the stored form with its namespace
// checked and its managedFields set.
func (c *Cluster) createLocked(gvr schema.GroupVersionResource, ki kindInfo, ns string, obj runtime.Object) (runtime.Object, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if m.GetName() == "" {
		if m.GetGenerateName() == "" {
			return nil, required(ki, "", field.NewPath("metadata", "name"), "name or generateName is required")
		}
		// The API server adds five random characters and, on a clash, answers AlreadyExists;
		// here a clash is retried instead, since nothing can be done about it in a test.
		for {
			name := m.GetGenerateName() + c.nameSuffix()
			if _, taken := c.store.getLocked(gvr, ns, name); !taken {
				m.SetName(name)
				break
			}
		}
	}
	m.SetUID("") // the server, not the client, picks UIDs
	m.SetCreationTimestamp(metav1.Time{})
	m.SetGeneration(0)
	c.store.stampNew(m, ki)
	convertOnWrite(obj)
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

// errStale is the message of a Conflict on a stale resourceVersion, the API server's words.
var errStale = errors.New("the object has been modified; please apply your changes to the latest version and try again")

// update stores an update (or, with subresource "status", a status update) with the API server's
// rules: the resourceVersion and UID sent must match the stored ones (else Conflict), metadata
// the server owns is kept, and generation is bumped when anything outside metadata (and status,
// for a resource with a status subresource) changed. With a status subresource a main update
// keeps the stored status and a status update changes nothing but the status.
func (c *Cluster) update(gvr schema.GroupVersionResource, ki kindInfo, ns string, in runtime.Object, subresource string, owner fieldOwner) (runtime.Object, error) {
	switch {
	case subresource == "status" && !ki.status:
		return nil, apierrors.NewNotFound(gvr.GroupResource(), "status")
	case subresource != "" && subresource != "status":
		return nil, unsupportedSubresource(gvr, subresource)
	}
	if ki.conditionalUpdate {
		if m, err := meta.Accessor(in); err == nil && m.GetResourceVersion() == "" {
			return nil, apierrors.NewInvalid(schema.GroupKind{Group: gvr.Group, Kind: gvr.Resource}, m.GetName(), field.ErrorList{
				field.Invalid(field.NewPath("metadata", "resourceVersion"), 0, "must be specified for an update")})
		}
	}
	c.store.mu.Lock()
	defer c.store.mu.Unlock()
	return c.updateLocked(gvr, ki, ns, in, subresource, owner)
}

// fieldOwner says how a write records managedFields: for an update or patch, the manager its
// changes are recorded for (operation Update); for an apply, applied, as the field manager has
// already set them.
type fieldOwner struct {
	manager string
	applied bool
}

// updateLocked is update under the store's lock.
func (c *Cluster) updateLocked(gvr schema.GroupVersionResource, ki kindInfo, ns string, in runtime.Object, subresource string, owner fieldOwner) (runtime.Object, error) {
	obj, err := normalize(in, ki)
	if err != nil {
		return nil, err
	}
	// Before the field manager sees it, as the server converts a request before writing it.
	convertOnWrite(obj)
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
	if !owner.applied {
		obj = c.recordUpdate(ki, subresource, stored, obj, owner.manager)
		if m, err = meta.Accessor(obj); err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
	}
	managed := m.GetManagedFields()

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
	if ki.generation && !equality.Semantic.DeepEqual(generationFields(old, ki), generationFields(out, ki)) {
		gen++
	}
	result, err := fromMap(out, stored, ki)
	if err != nil {
		return nil, err
	}
	rm, _ := meta.Accessor(result)
	rm.SetGeneration(gen)
	rm.SetManagedFields(managed)
	// A write that changes nothing is not written, as etcd3's store skips it on kube-apiserver:
	// no new resourceVersion, no watch event.
	rm.SetResourceVersion(sm.GetResourceVersion())
	if equality.Semantic.DeepEqual(stored, result) {
		return stored.DeepCopyObject(), nil
	}
	if sm.GetDeletionTimestamp() != nil {
		if added := newFinalizers(sm.GetFinalizers(), rm.GetFinalizers()); len(added) > 0 {
			errs := field.ErrorList{field.Forbidden(field.NewPath("metadata", "finalizers"),
				fmt.Sprintf("no new finalizers can be added if the object is being deleted, found new finalizers %q", added))}
			if !ki.typed {
				// kube-apiserver validates a custom resource's metadata twice (the generic
				// update check and the custom resource strategy's) and reports both.
				errs = append(errs, errs[0])
			}
			return nil, apierrors.NewInvalid(ki.gvk.GroupKind(), m.GetName(), errs)
		}
	}
	if rm.GetDeletionTimestamp() != nil && len(rm.GetFinalizers()) == 0 {
		// The last finalizer is gone: the deletion completes, as on an API server, which
		// deletes the stored object (watchers see it go, finalizers and all) instead of writing
		// this one, and answers with the object as sent, at the resourceVersion it had.
		if _, err := c.store.deleteLocked(gvr, rm.GetNamespace(), rm.GetName()); err != nil {
			return nil, err
		}
		return result.DeepCopyObject(), nil
	}
	if err := c.store.putLocked(gvr, result, false); err != nil {
		return nil, err
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
	c := make(map[string]any, len(u)+1)
	if ki.annotationsInGeneration {
		c["annotations"], _, _ = unstructured.NestedFieldNoCopy(u, "metadata", "annotations")
	}
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

// isServerVersion reports whether action is the fake discovery client's
// ServerVersion: a bare get of the resource "version", in no group.
func isServerVersion(action clienttesting.Action) bool {
	r := action.GetResource()
	_, isImpl := action.(clienttesting.ActionImpl)
	return isImpl && action.GetVerb() == "get" && r.Group == "" && r.Version == "" && r.Resource == "version"
}
