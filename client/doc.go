// Package client is a typed client for every built-in Kubernetes type, and the helpers a
// controller writes with: CreateOrUpdate, CreateOrPatch, PatchStatus, MergeFrom,
// IgnoreNotFound, Preconditions, and a cached reader.
//
// # One interface for every type
//
// Client[T] has the verbs a controller needs (Get, List, Create, Update, UpdateStatus,
// Patch, server-side Apply, Delete) with T in and T out. For returns one for any built-in
// type over a kubernetes.Interface, real or fake:
//
//	pods, err := client.For[*corev1.Pod](clientset)
//	pod, err := pods.Get(ctx, "default", "web-0", metav1.GetOptions{})
//
// *customresource.Client[T] has the same method set, so the helpers below work for custom
// resources too; NewCached wraps either so that reads come from an informer's cache.
//
// # Namespaces are arguments
//
// Get, List, Patch and Delete take the namespace; Create, Update, UpdateStatus and Apply use
// the object's. Unlike client-go there is no Namespace(ns) step: a client-go style
// Namespace method would have to return client.Client[T], which customresource cannot name
// without importing this package. For a namespaced resource every call but List needs a
// namespace (List with "" lists all namespaces); a cluster-scoped one (Nodes, Namespaces)
// takes none. A mistake is an error wrapping ErrInvalidInput that names the object and the
// resource, returned before any request.
//
// # How For finds the typed client
//
// T's group, version and kind come from client-go's scheme; its resource, scope, list type and
// group client from a table generated from kubernetes.Interface (internal/builtin): the getter
// whose Get returns T (CoreV1().ConfigMaps for *corev1.ConfigMap). The typed client is then
// built as client-go builds its own (gentype): over the group's REST client
// (cs.CoreV1().RESTClient()) for a real clientset, sending the same requests as the generated
// client, protobuf preferred; over the *testing.Fake behind a client-go fake clientset, with
// the same actions as its generated fake client, so a fake records them and its reactors see
// them. The table holds data, not calls into the generated clients, so a binary links the
// typed code of the types it uses and not client-go's whole clientset (docs/performance.md,
// "Binary size"). A test double that wraps a group client by embedding it is looked through
// to the client it wraps, so its own methods are not called: inject faults into this traffic
// with the fake's reactors. A group client that is neither real, a fake nor such a wrapper is
// an error naming it. Apply sends an apply patch (application/apply-patch+yaml, what the
// generated Apply methods send too) built from T, so no generated apply-configuration type is
// needed.
//
// # Objects returned are the caller's
//
// Every Client hands out objects the caller may change: For's and customresource's decode
// fresh ones, and NewCached returns deep copies of its cached objects. Code written against
// an uncached client (read, change, Update) is therefore safe on a cached one. Read the
// informer's lister directly where copies cost too much; its objects must not be changed.
//
// # Writing objects
//
// CreateOrUpdate and CreateOrPatch bring one object to the state a mutate function
// describes and say what they did (OperationResult): both write nothing when mutate changed
// nothing. CreateOrUpdate sends the whole object (its resourceVersion makes a stale read fail
// with a Conflict); CreateOrPatch sends a merge patch of only what mutate changed and patches
// status through the status subresource, with WithOptimisticLock to make the patch
// conditional too. MergeFrom and PatchObject compute and send such a patch by hand; Apply
// hands field ownership to the API server instead. ApplyConfig applies one of client-go's
// generated apply configurations (or a custom resource's), which claims only the fields it
// sets: the choice when several managers share an object. WithFieldOwner gives every write
// of a client one field manager, so a controller's fields are told apart from a person's.
//
// A reconciler that owns a Deployment per custom resource reads like this; it writes only
// when the Deployment differs from what mutate describes:
//
//	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ps.Namespace, Name: ps.Name}}
//	res, err := client.CreateOrUpdate(ctx, deployments, dep, func(dep *appsv1.Deployment) error {
//		dep.Spec.Replicas = ps.Spec.Replicas
//		// ... selector and template ...
//		return ownerref.SetControllerReference(ps, dep, ownerref.WithKind(podsets.GroupVersionKind()))
//	})
//	if err != nil {
//		return err // a Conflict means someone wrote in between: requeue
//	}
//	logger.V(2).Info("Deployment reconciled", "deployment", klog.KObj(dep), "operation", res)
//
// # Writing status
//
// PatchStatus is the status half of a Reconcile: it runs a mutate function on a copy of the
// object (which may come from the cache, and is never modified), sets status.observedGeneration
// and the observedGeneration of every metav1.Condition to the object's generation, and sends a
// merge patch of what changed to the status subresource, or nothing when the status is as it
// was. The patch carries no resourceVersion: the controller owns the status, so a cache that
// lags behind the last write is no Conflict. Set conditions with apimachinery's
// meta.SetStatusCondition, which keeps a condition's lastTransitionTime while its status stays:
//
//	ps, _, err = client.PatchStatus(ctx, podsets, ps, func(ps *v1alpha1.PodSet) error {
//		ps.Status.ReadyReplicas = ready
//		meta.SetStatusCondition(&ps.Status.Conditions, metav1.Condition{Type: "Ready",
//			Status: metav1.ConditionTrue, Reason: "AllReady", Message: "all Pods ready"})
//		return nil
//	})
//
// The helpers keep controller-runtime's names and behaviour (controllerutil.CreateOrUpdate,
// CreateOrPatch, OperationResult, client.MergeFrom, client.IgnoreNotFound) since users know
// them; they take a Client[T] and T instead of a client.Object.
package client
