// Package fakecluster is an in-memory Kubernetes cluster for tests and demos: one store of
// objects with one resourceVersion counter, served through two front ends that apply the same
// API-server rules — client-go's typed fake clientset (Clientset) and a dynamic client (Dynamic).
// A ConfigMap created through the typed client reads back through the dynamic one and the other
// way round, and custom resources live in the same store with the same rules as built-in kinds.
//
// client-go's plain fakes store objects as the client sent them. A controller then sees Pods
// without names (generateName is ignored), without UIDs (owner references point nowhere), and
// updates that keep the resourceVersion, which client-go's informers treat as resyncs and hide
// from most handlers; a status update from a stale cached copy silently reverts a spec change.
// This cluster does what an API server does on every write instead:
//
//   - create: a name from generateName, a UID, creationTimestamp, generation 1 and a
//     resourceVersion; a resourceVersion sent with a create is rejected; for a resource with a
//     status subresource the client's status is dropped (Pods start Pending, Namespaces Active);
//   - update and patch (JSON and merge patch; strategic merge patch for built-in kinds only, a
//     custom resource answers 415 Unsupported Media Type as from an API server): a resourceVersion
//     or UID sent is a precondition (Conflict when stale, so optimistic concurrency works);
//     metadata the server owns (uid, creationTimestamp, deletionTimestamp) is kept; with a status
//     subresource the main resource keeps the stored status and "status" changes nothing but the
//     status; generation is bumped when anything outside metadata (and status) changed; every
//     write gets a new resourceVersion, unique and increasing across all resources, like etcd's
//     revision;
//   - delete: UID and resourceVersion preconditions; DeleteCollection with label selectors; an
//     object with finalizers is only marked (deletionTimestamp, once, with generation bumped as
//     kube-apiserver does, so generation-filtered controllers see the deletion) and goes when an update
//     removes its last finalizer; no finalizer can be added to an object being deleted;
//   - pods/binding: assigns a Pending Pod to a node once (spec.nodeName and the PodScheduled
//     condition), as the scheduler does through the API;
//   - list and watch: label selectors, and field selectors on any field path (an API server
//     supports only a few per kind); a modification that takes an object out of a watch's
//     selectors is a Deleted event, one that brings it in an Added event; a list carries the cluster's resourceVersion, and a watch from it (or from any
//     event's) replays every change since, so an informer that lists and then watches misses
//     nothing; a resourceVersion older than Options.EventHistory writes answers 410 Gone, and
//     informers list again; watch events carry copies that share no memory with the store.
//
// What it does not do: validation and defaulting of built-in kinds (a Pod without containers is
// stored), CEL validation rules of CRDs (x-kubernetes-validations are ignored) and the rest
// listed under "Custom resources" below, admission, namespace existence checks, graceful
// deletion periods (a delete without finalizers is immediate), garbage collection (deleting an owner leaves
// its dependents), server-side apply (refused with BadRequest), watch-list streaming or the scale
// subresource. Tests that depend on any of that belong on a real API server
// (testkit.NewAPIServer).
//
// # Custom resources
//
// A custom resource is declared as its CRD would declare it, with a Resource in
// Options.Resources (GVR, kind, scope, status subresource); an unstructured seed object of an
// unknown kind declares its kind too, and so does creating (or seeding) the
// CustomResourceDefinition itself (CRDResource): the cluster then serves every served version and
// reports the CRD Established at once, so code that installs its CRD and waits for it
// (customresource.EnsureCRDFromYAML) runs unchanged. Options.CRDs seeds CRDs from their
// manifests (an embedded crd.yaml: one line in a test). Deleting a CRD leaves its resources
// served; updating one serves its versions as it now declares them, schemas included. A request for a resource that is
// neither built in nor declared fails with an UndeclaredResourceError (a 404 naming the resource
// and this option), never a panic.
//
// # CRD schemas
//
// A CRD's structural schema (each served version's openAPIV3Schema, or Resource.Schema) is
// applied as kube-apiserver applies it, on create, update, patch and /status:
//
//   - pruning: fields the schema does not specify are dropped, except under
//     x-kubernetes-preserve-unknown-fields or additionalProperties; metadata keeps ObjectMeta's
//     fields only; an x-kubernetes-embedded-resource keeps apiVersion, kind and ObjectMeta's
//     metadata; a null in a field that is neither nullable nor defaulted is dropped;
//   - defaulting: absent fields (and nulls in non-nullable fields) get the schema's default, on
//     every write, so an update that drops a defaulted field gets it back without a generation
//     change; seeded objects (Options.Objects, Tracker().Add) are pruned and defaulted, as the
//     server's reads would have them, but not validated;
//   - validation: type (and x-kubernetes-int-or-string), required, minimum and maximum
//     (exclusive too), multipleOf, enum, pattern, minLength and maxLength, minItems and maxItems,
//     minProperties and maxProperties, nullable, x-kubernetes-list-type set and map
//     duplicates, the formats date-time, date, byte, uuid, ipv4, ipv6, cidr and hostname (other
//     formats pass), embedded resources' apiVersion and kind. A failure is a 422 Invalid
//     (apierrors.IsInvalid) whose causes carry the server's field paths ("spec.replicas") and
//     types; a /status write validates the status only; on an update a value unchanged from the
//     stored object is not validated again, as the server's ratcheting does.
//
// Not modelled: CEL rules (x-kubernetes-validations, ignored), allOf/anyOf/oneOf/not (checked
// to be structural, not evaluated), name validation of metadata, the checks a CRD's own schema
// gets beyond being structural (defaults that fail their schema, forbidden metadata
// properties), x-kubernetes-list-type map merge semantics, conversion between versions (each
// version is validated by its own schema; objects are not converted) and the warnings the
// server returns for pruned fields. A schema that is not structural (a property without a
// type, an array without items, $ref, ...) is refused with a 422 naming the CRD and the field,
// as from an API server. A CRD version without a schema, which an API server would refuse, is
// served without one.
//
// # Reactors, faults and recorded requests
//
// Both front ends send every request through the typed clientset's reaction chain: reactors
// prepended with Clientset().PrependReactor (fault injection, latency, a test's own answers)
// see typed and dynamic requests alike, before the cluster serves them, and Actions records
// both. The clientset's own Tracker is not this cluster's store; use Cluster.Tracker.
package fakecluster
