package crcluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/uuid"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/ctrlkit/ctrlkit/controller/controllertest/memcluster"
)

// ErrNotFake is returned by Install for a nil client or one whose reaction chain has no default
// object reactor to stand in front of.
var ErrNotFake = errors.New("crcluster: dynamic client has no default object reactor")

// New returns a fake dynamic client for the resources in listKinds (resource → list kind, such
// as podsets → PodSetList) that stores them like an API server (see the package documentation),
// seeded with objs. Seed objects are stamped as if they had been created — UID, creation
// timestamp, generation 1, a resourceVersion — keeping values the caller set except the
// resourceVersion; their status is kept, as if the controller had written it.
func New(listKinds map[schema.GroupVersionResource]string, objs ...*unstructured.Unstructured) (*dynamicfake.FakeDynamicClient, error) {
	for gvr, kind := range listKinds {
		if gvr.Version == "" || gvr.Resource == "" || !strings.HasSuffix(kind, "List") || kind == "List" {
			return nil, fmt.Errorf("crcluster: list kind %q for %s: want a resource with a version and a kind ending in List", kind, gvr)
		}
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds)
	s, err := install(dyn)
	if err != nil {
		return nil, err
	}
	for i, obj := range objs {
		if obj == nil {
			return nil, fmt.Errorf("crcluster: seed object %d is nil", i)
		}
		if obj.GetName() == "" || obj.GetKind() == "" || obj.GetAPIVersion() == "" {
			return nil, fmt.Errorf("crcluster: seed object %d needs apiVersion, kind and name", i)
		}
		u := obj.DeepCopy()
		s.stampNew(u)
		if err := dyn.Tracker().Add(u); err != nil {
			return nil, fmt.Errorf("crcluster: seed %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
		}
	}
	return dyn, nil
}

// Install makes an existing fake dynamic client store custom resources like an API server. Its
// reactor goes just before the fake's default object reactor, so reactors prepended earlier or
// later (fault injection) still see every request first. Objects already stored are left as
// they are: give them UIDs and resourceVersions, or create them after Install.
func Install(dyn *dynamicfake.FakeDynamicClient) error {
	if dyn == nil {
		return ErrNotFake
	}
	_, err := install(dyn)
	return err
}

func install(dyn *dynamicfake.FakeDynamicClient) (*server, error) {
	s := &server{tracker: dyn.Tracker(), now: time.Now}
	r := &clienttesting.SimpleReactor{Verb: "*", Resource: "*", Reaction: s.react}
	// Invokes holds this lock while it walks the chain, so the splice cannot race a request.
	dyn.Lock()
	defer dyn.Unlock()
	n := len(dyn.ReactionChain)
	if n == 0 {
		return nil, ErrNotFake
	}
	chain := make([]clienttesting.Reactor, 0, n+1)
	chain = append(chain, dyn.ReactionChain[:n-1]...)
	chain = append(chain, r, dyn.ReactionChain[n-1])
	dyn.ReactionChain = chain
	return s, nil
}

// server holds the API-server rules in front of the tracker. react runs under the fake's lock,
// so each read-check-write below is atomic with respect to other requests.
type server struct {
	tracker clienttesting.ObjectTracker
	now     func() time.Time

	mu sync.Mutex // guards rv: seeding runs outside the fake's lock
	rv int64
}

// nextRV returns a new resourceVersion, increasing across all resources like etcd's revision.
func (s *server) nextRV() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rv++
	return strconv.FormatInt(s.rv, 10)
}

func (s *server) stampNew(u *unstructured.Unstructured) {
	if u.GetUID() == "" {
		u.SetUID(uuid.NewUUID())
	}
	if ts := u.GetCreationTimestamp(); ts.IsZero() {
		u.SetCreationTimestamp(metav1.NewTime(s.now().Truncate(time.Second)))
	}
	if u.GetGeneration() == 0 {
		u.SetGeneration(1)
	}
	u.SetResourceVersion(s.nextRV())
}

func (s *server) react(action clienttesting.Action) (bool, runtime.Object, error) {
	switch a := action.(type) {
	case clienttesting.CreateActionImpl:
		if a.GetSubresource() != "" {
			return true, nil, apierrors.NewBadRequest(fmt.Sprintf("crcluster: create of subresource %q is not supported", a.GetSubresource()))
		}
		obj, err := s.create(a)
		return true, obj, err
	case clienttesting.UpdateActionImpl:
		u, err := asUnstructured(a.GetObject())
		if err != nil {
			return true, nil, err
		}
		obj, err := s.update(a.GetResource(), a.GetNamespace(), u, a.GetSubresource())
		return true, obj, err
	case clienttesting.PatchActionImpl:
		if a.GetPatchType() == types.ApplyPatchType {
			return false, nil, nil // server-side apply: the fake's field manager handles it
		}
		obj, err := s.patch(a)
		return true, obj, err
	}
	// Get, List, Watch, Delete, DeleteCollection: the tracker as it is.
	return false, nil, nil
}

func asUnstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("crcluster: want *unstructured.Unstructured, got %T", obj))
	}
	return u.DeepCopy(), nil
}

func (s *server) create(a clienttesting.CreateActionImpl) (runtime.Object, error) {
	gvr, ns := a.GetResource(), a.GetNamespace()
	u, err := asUnstructured(a.GetObject())
	if err != nil {
		return nil, err
	}
	if u.GetResourceVersion() != "" {
		return nil, invalid(gvr, u.GetName(), "metadata.resourceVersion", "must not be set on objects to be created")
	}
	if u.GetName() == "" {
		if u.GetGenerateName() == "" {
			return nil, invalid(gvr, "", "metadata.name", "name or generateName is required")
		}
		for { // the server answers AlreadyExists on a clash; a test is better served by a retry
			name := u.GetGenerateName() + utilrand.String(5)
			if _, err := s.tracker.Get(gvr, ns, name); apierrors.IsNotFound(err) {
				u.SetName(name)
				break
			}
		}
	}
	u.SetUID("")
	u.SetCreationTimestamp(metav1.Time{})
	u.SetGeneration(0)
	s.stampNew(u)
	unstructured.RemoveNestedField(u.Object, "status") // written through /status only
	if err := s.tracker.Create(gvr, u, ns, a.CreateOptions); err != nil {
		return nil, err
	}
	return s.tracker.Get(gvr, ns, u.GetName())
}

// update stores in with the API server's rules for a resource with a status subresource.
func (s *server) update(gvr schema.GroupVersionResource, ns string, in *unstructured.Unstructured, subresource string) (runtime.Object, error) {
	if subresource != "" && subresource != "status" {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("crcluster: subresource %q is not supported", subresource))
	}
	storedObj, err := s.tracker.Get(gvr, ns, in.GetName())
	if err != nil {
		return nil, err
	}
	stored, err := asUnstructured(storedObj)
	if err != nil {
		return nil, err
	}
	if rv := in.GetResourceVersion(); rv != "" && rv != stored.GetResourceVersion() {
		return nil, apierrors.NewConflict(gvr.GroupResource(), in.GetName(),
			errors.New("the object has been modified; please apply your changes to the latest version and try again"))
	}
	if uid := in.GetUID(); uid != "" && uid != stored.GetUID() {
		return nil, apierrors.NewConflict(gvr.GroupResource(), in.GetName(),
			fmt.Errorf("Precondition failed: UID in precondition: %s, UID in object meta: %s", uid, stored.GetUID()))
	}

	var out *unstructured.Unstructured
	if subresource == "status" {
		out = stored.DeepCopy()
		if st, ok := in.Object["status"]; ok {
			out.Object["status"] = runtime.DeepCopyJSONValue(st)
		} else {
			delete(out.Object, "status")
		}
	} else {
		out = in.DeepCopy()
		if st, ok := stored.Object["status"]; ok {
			out.Object["status"] = st
		} else {
			delete(out.Object, "status")
		}
		out.SetUID(stored.GetUID())
		out.SetCreationTimestamp(stored.GetCreationTimestamp())
		out.SetDeletionTimestamp(stored.GetDeletionTimestamp())
		out.SetDeletionGracePeriodSeconds(stored.GetDeletionGracePeriodSeconds())
	}
	gen := stored.GetGeneration()
	if !equality.Semantic.DeepEqual(specOf(stored), specOf(out)) {
		gen++
	}
	out.SetGeneration(gen)
	out.SetResourceVersion(s.nextRV())
	if err := s.tracker.Update(gvr, out, ns); err != nil {
		return nil, err
	}
	return s.tracker.Get(gvr, ns, out.GetName())
}

// specOf is everything generation tracks: the object without metadata, status and type.
func specOf(u *unstructured.Unstructured) map[string]any {
	c := make(map[string]any, len(u.Object))
	for k, v := range u.Object {
		switch k {
		case "metadata", "status", "apiVersion", "kind":
		default:
			c[k] = v
		}
	}
	return c
}

func (s *server) patch(a clienttesting.PatchActionImpl) (runtime.Object, error) {
	gvr, ns := a.GetResource(), a.GetNamespace()
	storedObj, err := s.tracker.Get(gvr, ns, a.GetName())
	if err != nil {
		return nil, err
	}
	old, err := json.Marshal(storedObj)
	if err != nil {
		return nil, err
	}
	var modified []byte
	switch a.GetPatchType() {
	case types.JSONPatchType, types.MergePatchType:
		if modified, err = memcluster.ApplyPatch(a.GetPatchType(), old, a.GetPatch(), nil); err != nil {
			return nil, err
		}
	default:
		// What an API server answers for a strategic merge patch of a custom resource.
		return nil, &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType,
			Message: fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %s, %s, %s",
				types.JSONPatchType, types.MergePatchType, types.ApplyPatchType),
		}}
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(modified); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	return s.update(gvr, ns, u, a.GetSubresource())
}

func invalid(gvr schema.GroupVersionResource, name, field, msg string) error {
	return apierrors.NewBadRequest(fmt.Sprintf("%s %q is invalid: %s: %s", gvr.Resource, name, field, msg))
}
