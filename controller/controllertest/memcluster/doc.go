// Package memcluster is the in-memory cluster the examples run on when no kubeconfig is given:
// a client-go fake clientset (k8s.io/client-go/kubernetes/fake) whose writes behave enough like
// a real API server's for controllers to run on it unchanged.
//
// The plain fake stores objects as the client sent them. A controller then sees Pods without
// names (generateName is ignored), without UIDs (owner references point nowhere), and updates
// that keep the resourceVersion, which client-go's informers treat as resyncs and hide from
// most handlers. memcluster puts one reactor in front of the fake's object tracker that does
// what the API server does on every write:
//
//   - create: a name from generateName, a UID, creationTimestamp, generation 1 and a
//     resourceVersion; the client's status is dropped (Pods start Pending, Namespaces Active);
//     a resourceVersion sent with a create is rejected;
//   - update and patch (JSON, merge and strategic merge): a resourceVersion or UID sent is a
//     precondition (Conflict when stale, so optimistic concurrency works); the main resource
//     keeps the stored status and a "status" update changes only the status (spec, labels and
//     owner references are kept); generation is bumped when anything outside metadata and
//     status changed; every write gets a new resourceVersion, unique across resources;
//   - pods/binding: assigns a Pending Pod to a node once (spec.nodeName and the PodScheduled
//     condition), as the scheduler does through the API;
//   - watch: every event carries a copy of the object (the plain fake shares objects that
//     existed when a watch started with its store, so an informer transform races its reads).
//
// What it does not do: validation, defaulting, admission, namespace existence checks,
// graceful deletion (deletes are immediate) and garbage collection (deleting an owner leaves
// its dependents). Server-side apply goes to the fake's own field manager unchanged.
//
// # Use
//
//	client, err := memcluster.New(seedObjects...) // a *fake.Clientset
//
// or, on a fake someone else built (controllertest.NewFake):
//
//	err := memcluster.Install(env.Fake())
//
// Install keeps every reactor already in the chain, and any prepended later, in front of its
// own, so fault injection still decides first.
package memcluster
