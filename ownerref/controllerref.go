package ownerref

import (
	"fmt"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/ctrlkit/ctrlkit/internal/object"
)

// SetControllerReference makes owner the controller of obj: it adds (or, for the same owner,
// refreshes) the owner reference with controller and blockOwnerDeletion true, as
// NewControllerRef builds it (WithBlockOwnerDeletion(false) leaves the owner's deletion
// unblocked; blocking needs delete permission on the owner). It changes obj in memory only; write obj afterwards (Create,
// Update, CreateOrUpdate's mutate).
//
// The owner's kind is, in this order: WithKind's; the owner's own apiVersion and kind (custom
// resources decoded by ctrlkit keep them; a *metav1.PartialObjectMetadata's count only when
// they were set to its resource's, since the metadata client leaves them empty); the kind
// client-go's scheme (or WithScheme's) registers for the owner's Go type (built-in objects read
// from a clientset or a lister carry no TypeMeta).
// An owner of none of these is an error matching ErrUnknownKind that names its Go type.
//
// It refuses, leaving obj unchanged:
//   - an obj controlled by another owner (a different UID, or, for a reference without UID,
//     another kind or name): an *AlreadyOwnedError naming both (errors.Is ErrAlreadyOwned);
//   - an owner without a UID (not read from the API server): ErrMissingUID, since the API
//     server rejects such a reference;
//   - a namespaced owner of a cluster-scoped obj, or an owner in another namespace than
//     obj's: ErrInvalidOwner, since the garbage collector would treat the owner as absent
//     and delete obj;
//   - a nil owner or obj: ErrNilObject; an owner without a name: ErrInvalidOwner.
//
// Calling it again with the same owner changes nothing. The name and rules are
// controller-runtime's controllerutil.SetControllerReference.
func SetControllerReference(owner, obj metav1.Object, opts ...Option) error {
	ref, err := controllerRef("set controller reference", owner, obj, newOptions(opts))
	if err != nil {
		return err
	}
	obj.SetOwnerReferences(replaceOwner(obj.GetOwnerReferences(), ref, func(r metav1.OwnerReference) bool { return sameOwner(r, ref) }))
	return nil
}

// controllerRef checks owner and obj as SetControllerReference documents and returns the
// controller reference it gives obj; op starts the errors.
func controllerRef(op string, owner, obj metav1.Object, cfg options) (metav1.OwnerReference, error) {
	child, gvk, err := checkOwner(op, owner, obj, cfg)
	if err != nil {
		return metav1.OwnerReference{}, err
	}
	ref := *NewControllerRef(owner, gvk)
	if cfg.block != nil {
		ref.BlockOwnerDeletion = new(*cfg.block)
	}
	if cur := controllerOfNoCopy(obj); cur != nil && !sameOwner(*cur, ref) {
		return metav1.OwnerReference{}, &AlreadyOwnedError{Object: child, Controller: *cur, Owner: ref}
	}
	return ref, nil
}

// replaceOwner returns refs with ref in place of the first reference same matches and without
// the other ones it matches (a list the API server keys by UID must not hold an owner twice),
// or with ref appended when none matches. refs itself is not changed.
func replaceOwner[R any](refs []R, ref R, same func(R) bool) []R {
	out := make([]R, 0, len(refs)+1)
	replaced := false
	for _, r := range refs {
		if same(r) {
			if !replaced {
				out = append(out, ref)
				replaced = true
			}
			continue
		}
		out = append(out, r)
	}
	if !replaced {
		out = append(out, ref)
	}
	return out
}

// sameOwner reports whether two references point at the same owner: by UID when both have
// one, else by group, kind and name (the API version may differ across versions of a kind).
func sameOwner(a, b metav1.OwnerReference) bool {
	if a.UID != "" && b.UID != "" {
		return a.UID == b.UID
	}
	ga, errA := schema.ParseGroupVersion(a.APIVersion)
	gb, errB := schema.ParseGroupVersion(b.APIVersion)
	if errA != nil || errB != nil {
		return false
	}
	return ga.Group == gb.Group && a.Kind == b.Kind && a.Name == b.Name
}

// Option configures SetControllerReference and the other functions that take an owner:
// SetOwnerReference, RemoveOwnerReference, RemoveControllerReference, HasOwnerReference.
// An option a function has no use for is ignored.
type Option interface {
	apply(*options)
}

type options struct {
	kind   schema.GroupVersionKind
	scheme *runtime.Scheme
	block  *bool
}

func newOptions(opts []Option) options {
	var cfg options
	for _, o := range opts {
		if o != nil {
			o.apply(&cfg)
		}
	}
	return cfg
}

type kindOption schema.GroupVersionKind

func (k kindOption) apply(o *options) { o.kind = schema.GroupVersionKind(k) }

// WithKind gives the owner's group, version and kind, for an owner whose Go type neither
// carries them nor is in client-go's scheme (client.Client's and informer.Informer's
// GroupVersionKind give it).
func WithKind(gvk schema.GroupVersionKind) Option { return kindOption(gvk) }

type schemeOption struct{ s *runtime.Scheme }

func (s schemeOption) apply(o *options) {
	if s.s != nil {
		o.scheme = s.s
	}
}

// WithScheme looks the owner's Go type up in s instead of client-go's scheme, for owners of
// types registered in a scheme of one's own: controller-runtime's scheme argument, as in
// SetControllerReference(owner, obj, WithScheme(mgr.GetScheme())). A nil s is ignored.
// WithKind, or the kind the owner carries, still comes first.
func WithScheme(s *runtime.Scheme) Option { return schemeOption{s} }

type blockOption bool

func (b blockOption) apply(o *options) { o.block = new(bool(b)) }

// WithBlockOwnerDeletion sets the reference's blockOwnerDeletion (controller-runtime's option
// of the same name). With true, a foreground deletion of the owner waits for the child to be
// gone; setting it needs delete permission on the owner (the API server refuses the write
// otherwise, when the OwnerReferencesPermissionEnforcement admission plugin is on).
// SetControllerReference sets true without it, SetOwnerReference leaves the field unset.
func WithBlockOwnerDeletion(block bool) Option { return blockOption(block) }

// checkOwner resolves owner's kind and checks owner and obj as SetControllerReference
// documents; op starts the errors.
func checkOwner(op string, owner, obj metav1.Object, cfg options) (types.NamespacedName, schema.GroupVersionKind, error) {
	if object.IsNil(obj) {
		return types.NamespacedName{}, schema.GroupVersionKind{}, fmt.Errorf("%s: object: %w", op, ErrNilObject)
	}
	child := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	if object.IsNil(owner) {
		return child, schema.GroupVersionKind{}, fmt.Errorf("%s of %s: owner: %w", op, child, ErrNilObject)
	}
	ownerKey := types.NamespacedName{Namespace: owner.GetNamespace(), Name: owner.GetName()}
	gvk, err := ownerKind(owner, cfg)
	if err != nil {
		return child, gvk, fmt.Errorf("%s of %s to %s: %w", op, child, ownerKey, err)
	}
	switch {
	case owner.GetName() == "":
		return child, gvk, fmt.Errorf("%s of %s: %s owner has no name: %w", op, child, gvk.Kind, ErrInvalidOwner)
	case owner.GetUID() == "":
		return child, gvk, fmt.Errorf("%s of %s to %s %s: owner has no uid: %w", op, child, gvk.Kind, ownerKey, ErrMissingUID)
	case owner.GetNamespace() != "" && obj.GetNamespace() == "":
		return child, gvk, fmt.Errorf("%s of cluster-scoped %s to %s %s: a namespaced owner cannot own a cluster-scoped object: %w", op, child, gvk.Kind, ownerKey, ErrInvalidOwner)
	case owner.GetNamespace() != "" && owner.GetNamespace() != obj.GetNamespace():
		return child, gvk, fmt.Errorf("%s of %s to %s %s: owner and object are in different namespaces: %w", op, child, gvk.Kind, ownerKey, ErrInvalidOwner)
	}
	return child, gvk, nil
}

// ownerKind resolves the owner's kind as SetControllerReference documents.
func ownerKind(owner metav1.Object, cfg options) (schema.GroupVersionKind, error) {
	if cfg.kind.Kind != "" {
		return cfg.kind, nil
	}
	ro, ok := owner.(runtime.Object)
	if !ok {
		return schema.GroupVersionKind{}, fmt.Errorf("owner %T is not a runtime.Object, pass ownerref.WithKind: %w", owner, ErrUnknownKind)
	}
	if p, ok := owner.(*metav1.PartialObjectMetadata); ok {
		// A metadata informer's object says nothing (client-go's metadata client clears it) and
		// the API server's says PartialObjectMetadata; only a kind someone set to the
		// resource's, as controller-runtime's users do, names the owner.
		if gvk := p.GroupVersionKind(); gvk.Kind != "" && gvk.Version != "" && gvk.Group != metav1.GroupName {
			return gvk, nil
		}
		return schema.GroupVersionKind{}, fmt.Errorf("owner is a PartialObjectMetadata, whose kind is not the resource's, pass ownerref.WithKind: %w", ErrUnknownKind)
	}
	if gvk := ro.GetObjectKind().GroupVersionKind(); gvk.Kind != "" && gvk.Version != "" {
		return gvk, nil
	}
	sch, name := scheme.Scheme, "client-go's scheme"
	if cfg.scheme != nil {
		sch, name = cfg.scheme, "the given scheme"
	}
	gvks, _, err := sch.ObjectKinds(ro)
	if err != nil || len(gvks) == 0 {
		return schema.GroupVersionKind{}, fmt.Errorf("kind of owner type %v is not in %s and the owner has no apiVersion and kind, pass ownerref.WithKind: %w", reflect.TypeOf(owner), name, ErrUnknownKind)
	}
	return gvks[0], nil
}
