// Package crcluster makes client-go's fake dynamic client (k8s.io/client-go/dynamic/fake)
// store custom resources the way an API server does, so a controller for a CRD runs on it
// unchanged. It is the custom-resource counterpart of controller/controllertest/memcluster, which does
// the same for the typed fake clientset, and is written here because memcluster only accepts a
// *fake.Clientset.
//
// The plain dynamic fake stores objects exactly as sent: no UID, no resourceVersion (so
// client-go's informers take every update for a resync and hide it from most handlers), no
// generation, and an UpdateStatus that replaces the whole object — spec included — with
// whatever the client held. A controller writing status from a stale cached copy would then
// silently revert a user's spec change. crcluster puts one reactor in front of the fake's
// object tracker that applies the API server's rules for a custom resource whose CRD has a
// status subresource (as PodSet's has):
//
//   - create: a name from generateName, a UID, creationTimestamp, generation 1 and a
//     resourceVersion; status is dropped (it can only be written through /status); a
//     resourceVersion sent with a create is rejected;
//   - update: a resourceVersion or UID sent is a precondition (Conflict when stale); the main
//     resource keeps the stored status, the "status" subresource changes only the status;
//     server-owned metadata (uid, creationTimestamp, deletionTimestamp) is kept; generation is
//     bumped when anything outside metadata and status changed; every write gets a new
//     resourceVersion;
//   - patch: JSON patch and JSON merge patch are applied to the stored object and stored with
//     the update rules; a strategic merge patch is refused with 415 Unsupported Media Type, as
//     an API server refuses it for custom resources.
//
// Not done: schema validation and defaulting, server-side apply (left to the fake's own field
// manager), finalizers and graceful deletion (deletes are immediate), garbage collection.
//
// # Use
//
//	dyn, err := crcluster.New(map[schema.GroupVersionResource]string{v1alpha1.GVR: v1alpha1.ListKind}, seed...)
//
// or, on a fake someone else built (controllertest.NewFakeWithOptions):
//
//	err := crcluster.Install(env.FakeDynamic())
package crcluster
