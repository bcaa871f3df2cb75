package fakecluster

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/meta/testrestmapper"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"
)

// Resource declares a custom resource, as its CustomResourceDefinition would: where it is served,
// its kind, its scope and whether it has a status subresource.
type Resource struct {
	// GVR is the group, version and plural resource name ("widgets").
	GVR schema.GroupVersionResource
	// Kind is the object kind ("Widget"). The list kind is Kind + "List".
	Kind string
	// Namespaced is true for a namespaced resource, false for a cluster-scoped one.
	Namespaced bool
	// StatusSubresource is true when the CRD declares subresources.status: the main resource then
	// keeps the stored status and /status changes nothing but the status. Without it status is
	// an ordinary field, /status answers NotFound and every change but metadata bumps generation.
	StatusSubresource bool
	// Schema is the version's openAPIV3Schema (YAML or JSON), applied to every write as the API
	// server applies a CRD's structural schema: unknown fields pruned, defaults filled in, values
	// validated (a 422 Invalid naming each failing field). Nil applies none. To serve a CRD's
	// own manifest, schema included, use Options.CRDs instead.
	Schema []byte
}

// Options configures NewWithOptions. The zero value is a cluster with client-go's built-in kinds
// and no custom resources.
type Options struct {
	// Objects seed the cluster, stamped as if they had been created (UID, creationTimestamp,
	// generation 1, a resourceVersion), keeping the values the caller set except the
	// resourceVersion, which the cluster owns. Typed objects of client-go's scheme and
	// *unstructured.Unstructured objects are both accepted. An unstructured object of a kind not
	// in Resources declares that kind: plural guessed from the kind (Widget → widgets), namespaced
	// when the object has a namespace, with a status subresource. Declare the resource in
	// Resources when any of that guess is wrong.
	Objects []runtime.Object

	// CRDs are CustomResourceDefinition manifests (YAML or JSON, one apiextensions.k8s.io/v1
	// CRD each, such as a go:embed'ed crd.yaml), seeded before Objects: the cluster serves each
	// served version with its structural schema, as if the CRD had been created (see
	// CRDResource).
	CRDs [][]byte

	// Resources declares the custom resources the cluster serves. Requests for a resource that
	// is neither built in, declared here nor introduced by a seed object fail with an
	// UndeclaredResourceError.
	Resources []Resource

	// Clock stamps creationTimestamp and PodScheduled conditions. Default: the real clock.
	Clock clock.PassiveClock

	// Rand, when set, draws the UIDs and generated names the cluster assigns, so that a seeded
	// simulation names its objects alike in every run. Default: random ones.
	Rand *rand.Rand

	// EventHistory is how many past writes a watch can be resumed from (a List's
	// resourceVersion, or the last event an informer saw). A watch from a resourceVersion older
	// than that answers 410 Gone, as an API server's does after compaction, and informers list
	// again. Default: DefaultEventHistory.
	EventHistory int

	// DefaultFieldManager is the field manager recorded in metadata.managedFields for a create,
	// update or patch that names none (kube-apiserver records the client's User-Agent up to its
	// first "/"). Default: DefaultFieldManager, the program's name, as client-go's default
	// User-Agent makes it on a server.
	DefaultFieldManager string
}

// DefaultEventHistory is Options.EventHistory's default.
const DefaultEventHistory = 10000

// ErrUndeclaredResource is matched (errors.Is) by every UndeclaredResourceError.
var ErrUndeclaredResource = errors.New("resource is not declared")

// UndeclaredResourceError is the answer to a request for a resource the cluster does not serve:
// neither one of client-go's built-in kinds, declared in Options.Resources or by a created
// CustomResourceDefinition, nor introduced by a seed object. It is also an API status error (apierrors.IsNotFound reports true), as a real
// API server answers 404 for a resource it does not serve.
type UndeclaredResourceError struct {
	GVR schema.GroupVersionResource
}

func (e *UndeclaredResourceError) Error() string {
	return fmt.Sprintf("fakecluster: resource %q is not declared: add a fakecluster.Resource for it to "+
		"Options.Resources (testkit.FakeOptions.Resources), create its CustomResourceDefinition, "+
		"or seed an object of its kind", gvrString(e.GVR))
}

// Is makes errors.Is(err, ErrUndeclaredResource) true.
func (e *UndeclaredResourceError) Is(target error) bool { return target == ErrUndeclaredResource }

// Status makes the error an API status error with code 404.
func (e *UndeclaredResourceError) Status() metav1.Status {
	return metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
		Message: e.Error(),
		Details: &metav1.StatusDetails{Group: e.GVR.Group, Kind: e.GVR.Resource},
	}
}

func gvrString(gvr schema.GroupVersionResource) string {
	s := gvr.Resource
	if gvr.Group != "" {
		s += "." + gvr.Group
	}
	return s + "/" + gvr.Version
}

// kindInfo is what the cluster knows of one resource.
type kindInfo struct {
	gvk        schema.GroupVersionKind
	namespaced bool
	status     bool        // has a status subresource
	typed      bool        // a kind of client-go's scheme: stored as its Go type
	schema     *structural // the CRD version's structural schema; nil: none applied
	crd        bool        // CustomResourceDefinitions: an update declares its resources again
	// generation: metadata.generation is 1 on create and bumped when the desired state changes
	// (custom resources, and the built-in kinds in generationKinds); others keep 0.
	generation bool
	// annotationsInGeneration: a change of annotations bumps generation too (Deployments).
	annotationsInGeneration bool
	// conditionalUpdate: an update must carry a resourceVersion (custom resources, Leases, ...).
	conditionalUpdate bool
}

// Cluster is one in-memory cluster: one store with one resourceVersion counter, served through a
// typed front end (Clientset) and a dynamic one (Dynamic) with the same API-server rules. Its
// methods are safe for concurrent use.
type Cluster struct {
	clientset *fake.Clientset
	dynamic   *dynamicClient
	store     *store
	clock     clock.PassiveClock
	mapper    meta.RESTMapper // client-go's built-in kinds
	manager   string          // the default field manager

	mu     sync.RWMutex
	custom map[schema.GroupVersionResource]kindInfo // declared or seeded custom resources

	builtins sync.Map // schema.GroupVersionResource → kindInfo, the mapper's answers so far

	randMu sync.Mutex
	rand   *rand.Rand // Options.Rand; nil: random

	serveMu sync.Mutex // a Connection's request and its observers, one at a time (Connection.Observe)
}

// newUID returns a UID for a new object.
func (c *Cluster) newUID() types.UID {
	if c.rand == nil {
		return uuid.NewUUID()
	}
	c.randMu.Lock()
	defer c.randMu.Unlock()
	hi, lo := c.rand.Uint64(), c.rand.Uint64()
	return types.UID(fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", hi>>32, (hi>>16)&0xffff, hi&0xffff, lo>>48, lo&0xffffffffffff))
}

// nameSuffix returns the five characters generateName gets.
func (c *Cluster) nameSuffix() string {
	if c.rand == nil {
		return utilrand.String(5)
	}
	const alphabet = "bcdfghjklmnpqrstvwxz2456789" // the API server's: no vowels, no look-alikes
	c.randMu.Lock()
	defer c.randMu.Unlock()
	b := make([]byte, 5)
	for i := range b {
		b[i] = alphabet[c.rand.IntN(len(alphabet))]
	}
	return string(b)
}

// New returns a cluster seeded with objs; see NewWithOptions.
func New(objs ...runtime.Object) (*Cluster, error) {
	return NewWithOptions(Options{Objects: objs})
}

// NewWithOptions returns a cluster configured by opts. Invalid options (a Resource without a
// version, resource name or kind, a nil seed, two seeds with the same name) are an error naming
// the culprit.
func NewWithOptions(opts Options) (*Cluster, error) {
	clk := opts.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	history := opts.EventHistory
	if history <= 0 {
		history = DefaultEventHistory
	}
	manager := opts.DefaultFieldManager
	if manager == "" {
		manager = DefaultFieldManager
	}
	c := &Cluster{
		manager: manager,
		clock:   clk,
		mapper:  builtinMapper(),
		custom:  map[schema.GroupVersionResource]kindInfo{},
		rand:    opts.Rand,
	}
	c.store = newStore(c, history)
	c.custom[CRDResource] = crdInfo
	for i, r := range opts.Resources {
		if err := c.declare(r); err != nil {
			return nil, fmt.Errorf("fakecluster: Resources[%d]: %w", i, err)
		}
	}
	for i, manifest := range opts.CRDs {
		crd, err := parseCRDManifest(manifest)
		if err == nil {
			err = c.store.Add(crd)
		}
		if err != nil {
			return nil, fmt.Errorf("fakecluster: CRDs[%d]: %w", i, err)
		}
	}

	c.clientset = frontEnd(c.react, c.reactWatch)
	c.dynamic = &dynamicClient{c: c, cs: c.clientset}

	for i, obj := range opts.Objects {
		if obj == nil {
			return nil, fmt.Errorf("fakecluster: seed object %d is nil", i)
		}
		if err := c.store.Add(obj); err != nil {
			return nil, fmt.Errorf("fakecluster: seed %s: %w", describe(obj), err)
		}
	}
	return c, nil
}

// frontEnd returns a typed front end: client-go's fake clientset with its reaction chains
// replaced by react and reactWatch, so that every request is served from the cluster's store.
// Reactors prepended later (fault injection, a test's own) still run first. NewSimpleClientset,
// not NewClientset: its own tracker goes unused, and NewClientset's would build a field manager
// for nothing.
func frontEnd(react clienttesting.ReactionFunc, reactWatch clienttesting.WatchReactionFunc) *fake.Clientset {
	cs := fake.NewSimpleClientset()
	cs.Lock()
	cs.ReactionChain = []clienttesting.Reactor{&clienttesting.SimpleReactor{Verb: "*", Resource: "*", Reaction: react}}
	cs.WatchReactionChain = []clienttesting.WatchReactor{&clienttesting.SimpleWatchReactor{Resource: "*", Reaction: reactWatch}}
	cs.Unlock()
	return cs
}

var (
	builtinOnce sync.Once
	builtin     meta.RESTMapper
)

// builtinMapper maps client-go's built-in resources to kinds and scopes, built once per binary.
func builtinMapper() meta.RESTMapper {
	builtinOnce.Do(func() { builtin = testrestmapper.TestOnlyStaticRESTMapper(scheme.Scheme) })
	return builtin
}

func (c *Cluster) declare(r Resource) error {
	if r.GVR.Version == "" || r.GVR.Resource == "" || r.Kind == "" {
		return fmt.Errorf("resource %q kind %q: want a version, a resource name and a kind", gvrString(r.GVR), r.Kind)
	}
	if strings.HasSuffix(r.Kind, "List") {
		return fmt.Errorf("resource %q: kind %q must be the object kind, not the list kind", gvrString(r.GVR), r.Kind)
	}
	ki := kindInfo{gvk: r.GVR.GroupVersion().WithKind(r.Kind), namespaced: r.Namespaced, status: r.StatusSubresource}
	if r.Schema != nil {
		s, err := parseSchemaManifest(r.Schema)
		if err != nil {
			return fmt.Errorf("resource %q: %w", gvrString(r.GVR), err)
		}
		ki.schema = s
	}
	return c.declareInfo(r.GVR, ki)
}

// declareInfo serves gvr as ki describes.
func (c *Cluster) declareInfo(gvr schema.GroupVersionResource, ki kindInfo) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	// Every custom resource tracks generation and wants a resourceVersion on update.
	ki.generation, ki.conditionalUpdate = true, true
	c.custom[gvr] = ki
	return nil
}

// info returns what the cluster knows of gvr, or an UndeclaredResourceError.
func (c *Cluster) info(gvr schema.GroupVersionResource) (kindInfo, error) {
	c.mu.RLock()
	ki, ok := c.custom[gvr]
	c.mu.RUnlock()
	if ok {
		return ki, nil
	}
	if v, ok := c.builtins.Load(gvr); ok {
		return v.(kindInfo), nil
	}
	if gvk, err := c.mapper.KindFor(gvr); err == nil && gvr.Version != "" {
		namespaced := true
		if m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
			namespaced = m.Scope.Name() == meta.RESTScopeNameNamespace
		}
		ki = builtinInfo(gvk, namespaced)
		c.builtins.Store(gvr, ki)
		return ki, nil
	}
	return kindInfo{}, &UndeclaredResourceError{GVR: gvr}
}

// infoForObject finds the resource of a seed object, declaring a custom resource from an
// unstructured object of an unknown kind.
func (c *Cluster) infoForObject(obj runtime.Object) (schema.GroupVersionResource, kindInfo, error) {
	gvk, err := kindOf(obj)
	if err != nil {
		return schema.GroupVersionResource{}, kindInfo{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for gvr, ki := range c.custom {
		if ki.gvk == gvk {
			return gvr, ki, nil
		}
	}
	if m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
		return m.Resource, builtinInfo(gvk, m.Scope.Name() == meta.RESTScopeNameNamespace), nil
	}
	if _, ok := obj.(*unstructured.Unstructured); !ok {
		return schema.GroupVersionResource{}, kindInfo{}, fmt.Errorf("kind %s is not in client-go's scheme: seed it as *unstructured.Unstructured", gvk)
	}
	gvr, _ := meta.UnsafeGuessKindToResource(gvk)
	m, _ := meta.Accessor(obj)
	ki := kindInfo{gvk: gvk, namespaced: m.GetNamespace() != "", status: true, generation: true, conditionalUpdate: true}
	c.custom[gvr] = ki
	return gvr, ki, nil
}

// kindOf is the GroupVersionKind of a typed or unstructured object.
func kindOf(obj runtime.Object) (schema.GroupVersionKind, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		gvk := u.GroupVersionKind()
		if gvk.Kind == "" || gvk.Version == "" {
			return gvk, errors.New("unstructured object needs apiVersion and kind")
		}
		return gvk, nil
	}
	gvks, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil {
		return schema.GroupVersionKind{}, err
	}
	return gvks[0], nil
}

// describe names an object in error messages: kind namespace/name.
func describe(obj runtime.Object) string {
	kind := fmt.Sprintf("%T", obj)
	if gvk, err := kindOf(obj); err == nil {
		kind = gvk.Kind
	}
	if m, err := meta.Accessor(obj); err == nil {
		if m.GetNamespace() != "" {
			return fmt.Sprintf("%s %s/%s", kind, m.GetNamespace(), m.GetName())
		}
		return fmt.Sprintf("%s %s", kind, m.GetName())
	}
	return kind
}

// Clientset is the typed front end: client-go's fake clientset serving this cluster. Use it for
// PrependReactor, PrependWatchReactor, Actions and ClearActions; the dynamic front end's requests
// go through the same reaction chain and are recorded with the typed ones.
//
// Its Tracker method returns client-go's own object tracker, which this cluster does not use:
// read and write the stored objects through Cluster.Tracker instead.
func (c *Cluster) Clientset() *fake.Clientset { return c.clientset }

// Dynamic is the dynamic front end over the same store: built-in kinds written through
// Clientset read back here as unstructured objects and the other way round, and custom resources
// get the same API-server rules. Its requests go through Clientset's reaction chain.
func (c *Cluster) Dynamic() dynamic.Interface { return c.dynamic }

// Tracker is the cluster's store as a client-go ObjectTracker, for a reactor that needs the
// stored object or a test that edits the store behind the front ends' backs. Its writes skip
// the API-server rules (preconditions, status handling) and reactors, but still get a new
// resourceVersion and reach watchers; Add stamps like a seed.
func (c *Cluster) Tracker() clienttesting.ObjectTracker { return c.store }

// Actions returns the requests both front ends received, oldest first.
func (c *Cluster) Actions() []clienttesting.Action { return c.clientset.Actions() }

// ClearActions forgets the recorded requests.
func (c *Cluster) ClearActions() { c.clientset.ClearActions() }
