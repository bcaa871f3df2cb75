package controller

import (
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Key names one object: Namespace is empty for cluster-scoped objects. It is
// comparable, so it can be the K of a Controller, and its String form is the
// key client-go's cache.MetaNamespaceKeyFunc produces ("namespace/name" or
// "name"), so it interoperates with listers and indexers keyed by strings.
type Key struct {
	Namespace string
	Name      string
}

// ErrInvalidKey is returned (wrapped) by ParseKey for strings that are not
// "name" or "namespace/name" with non-empty parts.
var ErrInvalidKey = errors.New("invalid object key")

// String returns "namespace/name", or "name" when Namespace is empty.
func (k Key) String() string {
	if k.Namespace == "" {
		return k.Name
	}
	return k.Namespace + "/" + k.Name
}

// ParseKey parses a key in the form cache.MetaNamespaceKeyFunc writes:
// "namespace/name" for namespaced objects, "name" for cluster-scoped ones.
// An empty string, an empty name or namespace around the slash, or more than
// one slash is an error matching ErrInvalidKey.
func ParseKey(s string) (Key, error) {
	ns, name, found := strings.Cut(s, "/")
	if !found {
		name, ns = ns, ""
	}
	switch {
	case name == "":
		return Key{}, fmt.Errorf("%w %q: empty name", ErrInvalidKey, s)
	case found && ns == "":
		return Key{}, fmt.Errorf("%w %q: empty namespace before '/'", ErrInvalidKey, s)
	case strings.Contains(name, "/"):
		return Key{}, fmt.Errorf("%w %q: more than one '/'", ErrInvalidKey, s)
	}
	return Key{Namespace: ns, Name: name}, nil
}

// KeyFromObject returns the Key of obj.
func KeyFromObject(obj metav1.Object) Key {
	return Key{Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// FlowByNamespace is the flow of a Key for Options.Flows: its namespace, so
// that the namespaces take turns ("" for cluster-scoped objects, one flow).
func FlowByNamespace(k Key) string { return k.Namespace }
