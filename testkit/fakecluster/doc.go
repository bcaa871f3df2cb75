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
//   - create: a name from generateName, a UID, creationTimestamp, a resourceVersion and, for
//     custom resources and the built-in kinds whose strategy tracks it (Deployments, Pods, Jobs,
//     ...; not ConfigMaps or Secrets), generation 1; a resourceVersion sent with a create is
//     rejected; for a resource with a status subresource the client's status is dropped (Pods
//     start Pending, Namespaces Active); a Secret's stringData is merged into data and its type
//     defaults to Opaque, as on every write;
//   - update and patch (JSON and merge patch; strategic merge patch for built-in kinds only, a
//     custom resource answers 415 Unsupported Media Type as from an API server; a JSON patch that
//     does not apply is a 422): a resourceVersion or UID sent is a precondition (Conflict when
//     stale, so optimistic concurrency works); an update without one is refused (422) for custom
//     resources, Leases and the other kinds whose strategy wants it; metadata the server owns
//     (uid, creationTimestamp, deletionTimestamp) is kept; built-in kinds whose Go type has a
//     Status field, and custom resources that declare it, have a status subresource: the main
//     resource keeps the stored status and "status" changes nothing but the status (the others
//     answer 404 for "status"); generation is bumped when anything outside metadata (and status)
//     changed, or a Deployment's annotations; every write gets a new resourceVersion, unique and
//     increasing across all resources, like etcd's revision, and a write that changes nothing is
//     not written (no new resourceVersion, no watch event);
//   - server-side apply (typed Apply and ApplyStatus with apply configurations, dynamic Apply
//     and ApplyStatus, Patch with types.ApplyPatchType): see below;
//   - managedFields: every create, update and patch records the fields it set for the request's
//     FieldManager (operation Update), or for Options.DefaultFieldManager when it names none;
//   - delete: UID and resourceVersion preconditions; DeleteCollection with label selectors; an
//     object with finalizers is only marked (deletionTimestamp, once, with generation bumped as
//     kube-apiserver does, so generation-filtered controllers see the deletion) and goes when an
//     update removes its last finalizer (the update's answer is the object as sent, and watchers
//     see it deleted, not modified); no finalizer can be added to an object being deleted (422);
//     propagationPolicy Orphan and Foreground add the garbage collector's "orphan" and
//     "foregroundDeletion" finalizers, Background removes them;
//   - pods/binding: assigns a Pending Pod to a node once (spec.nodeName and the PodScheduled
//     condition; a second binding is a Conflict), as the scheduler does through the API; a
//     Binding without a namespace (client-go's fake Pods(ns).Bind sends the Binding's own, not
//     the client's) binds the one Pod of its name;
//   - list and watch: label selectors, and field selectors on any field path (an API server
//     supports only a few per kind); shard selectors (ListOptions.ShardSelector, the hash
//     ranges of KEP-5866) over the UID or the namespace, as kube-apiserver with its
//     ShardedListAndWatch gate serves them, a typed list echoing the selector in
//     metadata.shardInfo; limit and continue page a list; a modification that takes
//     an object out of a watch's selectors is a Deleted event, one that brings it in an Added
//     event; a list carries the cluster's resourceVersion, and a watch from it (or from any
//     event's) replays every change since, so an informer that lists and then watches misses
//     nothing; a resourceVersion older than Options.EventHistory writes answers 410 Gone, and
//     informers list again; watch events carry copies that share no memory with the store.
//
// Every rule above is checked against kube-apiserver by testkit's differential harness
// (TestDifferentialFakeVersusAPIServer: seeded random sequences of writes, reads and watches on
// both, compared after each operation). What stays different on purpose is pinned by
// testkit's TestFakeDifferencesArePinned, which runs each difference on both back ends: the
// fake does no validation of built-in kinds (a ConfigMap named "Bad_Name" is stored), no
// defaulting of built-in kinds (a Deployment keeps the fields it was sent), accepts a field
// selector on any field, does not check that the namespace exists, and pages a list from the
// objects as they are now rather than from a snapshot. Neither does it run CRDs' CEL rules
// (x-kubernetes-validations are ignored; the rest of a CRD's schema is applied, see "CRD
// schemas"), admission, graceful deletion periods (a delete without finalizers is immediate),
// garbage collection (deleting an owner leaves its dependents, and "orphan" or
// "foregroundDeletion" stay until removed: the same as a kube-apiserver without
// kube-controller-manager, as under testkit.NewAPIServer), watch-list streaming or the scale
// subresource. Tests that depend on any of that belong on a real API server
// (testkit.NewAPIServer).
//
// # Server-side apply
//
// Apply is kube-apiserver's own code (k8s.io/apimachinery/pkg/util/managedfields) over the
// cluster's store. A FieldManager is required (422 Invalid without, as from a server); an apply
// creates the object when it is absent (with create's rules: UID, generation 1, status dropped)
// and otherwise merges the configuration into it: fields another manager owns with a different
// value are a 409 Conflict listing them (apierrors.IsConflict, the server's message and
// causes) unless Force is set, fields the manager applied before and no longer applies are
// removed unless another manager owns them, and a resourceVersion in the configuration is a
// precondition. Apply to "status" changes and owns only the status, and needs the object to
// exist; a main-resource apply owns nothing under status. metadata.managedFields comes back with
// operation Apply or Update, apiVersion, subresource, fieldsV1 and a time from Options.Clock; an
// object seeded or written through Tracker has none, and its fields go to "before-first-apply"
// on the first apply, as kube-apiserver does for objects older than field management.
//
// Built-in kinds merge with client-go's OpenAPI models, so lists with merge keys (containers,
// conditions) merge per item and a field the kind lacks is refused (500, the server's answer).
// Custom resources merge without their schema (even when the cluster applies one, below): as
// kube-apiserver merges a CRD with x-kubernetes-preserve-unknown-fields, maps per key and every
// list atomic (a list is owned and replaced as a whole). Not modelled: defaulting (the server
// defaults an applied Deployment's strategy and the like, and the defaults' ownership with it),
// validation, conversion between versions (an apply of another version than the request's is a
// BadRequest), the per-kind reset fields of built-in status strategies (here a status apply
// owns exactly its status fields, a main apply everything but status), dry run, the
// last-applied annotation's migration beyond what the field manager does, and
// fieldValidation=Strict warnings. Tracker().Apply is refused: the tracker's writes skip the
// API server's rules.
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
