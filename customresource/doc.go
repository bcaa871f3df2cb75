// Package customresource is a typed client for custom resources that needs no code
// generator beyond deepcopy: write the Go types of your CRD (with DeepCopyObject), and
// NewClient gives you Get, List, Create, Update, UpdateStatus, Patch, Apply, Delete,
// DeleteCollection and Watch that take and return your type.
//
//	podsets, err := customresource.NewClient[*v1alpha1.PodSet](dyn, v1alpha1.GVR)
//	if err != nil { ... }
//	ps, err := podsets.Get(ctx, "default", "web", metav1.GetOptions{})
//	ps.Status.ReadyReplicas = ready
//	_, err = podsets.UpdateStatus(ctx, ps, metav1.UpdateOptions{})
//
// Use it where a generated clientset would be used: in a controller's writes, in tests,
// in tools. Reads of many objects in a controller belong in an informer cache
// (informer.ForResource) instead. EnsureCRDFromYAML installs a CRD manifest and waits
// until the API server serves it, which is what an example or a test against a fresh
// cluster needs before its first request.
//
// # Why the dynamic client, not gentype
//
// client-go's k8s.io/client-go/gentype is what generated clientsets are made of. Using
// it without the generator means a rest.Interface configured with a codec for T (a
// scheme, a negotiated serializer, a REST client per group version), a list type L with
// item accessors and, for apply, a generated apply-configuration type; in tests its
// fake is a separate object tracker. This package is built on dynamic.Interface and
// runtime.DefaultUnstructuredConverter instead, because that serves users better:
//
//   - one dynamic.Interface (dynamic.NewForConfig) serves every custom resource; there
//     is nothing to register and no list or apply-configuration type to write;
//   - in tests, k8s.io/client-go/dynamic/fake is the fake users already hold for their
//     dynamic informers, so what the client writes is what the informers see;
//   - server-side apply works from a T or from an unstructured partial object, without
//     generated apply configurations.
//
// The price is a conversion between JSON-shaped maps and T on every call (measured in
// docs/performance.md); it is small next to a round trip to the API server.
//
// # The type parameter
//
// T is the pointer type, *v1alpha1.PodSet, as in informer.For and informer.ForResource,
// so one type argument means the same thing across ctrlkit and values read from a
// Client, a lister or an event handler have the same type. NewClient creates new T
// values with reflection, once per decoded object, after checking once that T is a
// pointer to a struct; that check is why NewClient returns an error rather than
// failing later. (A second type parameter, NewClient[v1alpha1.PodSet], would avoid the
// reflection but make the client's type argument differ from the informer's.)
//
// # Conversion
//
// Objects from the API server are converted to T with the unstructured converter,
// which ignores fields T does not have. A field that does not fit (a string where T has
// an integer), an object of another kind or apiVersion, or a panic inside the converter
// or a custom UnmarshalJSON is returned as a *ConversionError naming the resource and
// the object's namespace/name; for a field that does not fit, it also names the field
// and what it expected and found (spec.replicas: expected int32, got string "three";
// ConversionError.Field holds the path). Nothing here panics on a malformed object.
// informer.ForResource converts with the same converter. Like
// client-go's converter, an integer too large for its Go field wraps instead of
// failing: give such fields bounds in the CRD schema (format: int32, minimum,
// maximum) so that the API server refuses them.
//
// Outgoing objects get apiVersion (the resource's group and version) and kind (see
// NewClient) when T leaves TypeMeta empty; the caller's object is never modified.
//
// Watch returns a Watcher whose events carry T. A conversion failure is an Error event
// carrying the *ConversionError, and the watch continues; the converting goroutine ends
// when Watcher.Stop is called or the underlying watch ends.
package customresource
