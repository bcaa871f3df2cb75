// Package testkit is a test kit for controllers: one Env type over either an in-memory
// fake cluster (milliseconds, fault injection, recorded actions) or a real kube-apiserver and
// etcd (the real validation, defaulting, admission, watches and restarts).
//
// # Fake clusters
//
// NewFake returns a FakeEnv: an Env on an in-memory cluster (package fakecluster) with a started
// ctrlkit informer factory, stopped when the test ends. The cluster has one store served through
// Client and Dynamic alike, and writes like an API server for built-in kinds and custom resources
// alike: generated names, UIDs, a new resourceVersion on every write and Conflict on a stale one,
// generation bumped on spec changes, status subresources, server-side apply with managedFields
// and conflicts (kube-apiserver's field manager; writes naming no field manager are recorded as
// "ctrlkit-testkit", as the API server Env's are), watches that resume from a list's
// resourceVersion and share no memory with the store. Those rules are checked against
// kube-apiserver on every make test: TestDifferentialFakeVersusAPIServer runs 500 seeded random
// sequences of creates, updates (fresh, stale, without resourceVersion, unchanged), patches,
// status writes, deletes (preconditions, finalizers, propagation), lists (selectors, pages),
// applies and watches on both and compares them after every operation (a divergence prints the command
// that replays it); the fakecluster package doc lists what differs on purpose. New sequences
// on every run, for longer searches:
//
//	CTRLKIT_REQUIRE_APISERVER=1 go test ./testkit -run TestDifferentialFakeVersusAPIServer \
//		-diff.base=0 -diff.sequences=5000 -diff.ops=60 -timeout=60m
//
// Declare custom resources in FakeOptions.Resources, seed objects of their kind, or give their
// CRD manifests in FakeOptions.CRDs (their schemas are applied). Typical use:
//
//	env := testkit.NewFake(t, pod, replicaSet)
//	pods, _ := informer.For[*corev1.Pod](env.Factory()) // started at once: the factory runs
//	env.Sync()                                          // wait for the caches
//	env.FailWrites(20)                                  // 20% of creates/updates/patches/deletes fail
//	env.Delay(5 * time.Millisecond)                     // every request is slow (and serialised)
//	... run the code under test ...
//	for _, a := range env.Actions() { ... }             // what it asked the "server" to do
//
// FailWrites, Delay, Injected, Actions, ClearActions and Cluster are methods of FakeEnv only, so
// using them on an API server Env is a compile error; they cover typed and dynamic requests
// alike. Injected failures are API status errors (apierrors.IsInternalError) matching
// ErrInjected; which requests fail is decided by a seeded random source, so a test fails the
// same requests on every run. Code that runs on both kinds of cluster takes the embedded *Env.
//
// # Real API servers
//
// NewAPIServer starts etcd and kube-apiserver on loopback ports with a throw-away data directory
// and freshly generated certificates, and returns an Env whose Config, Client and Dynamic reach
// it as a cluster admin, in a namespace of its own. SharedAPIServer does the same on one server
// per test binary (startup takes seconds, so tests should share) and needs the package's
// TestMain to call Main. Processes are stopped and reaped at cleanup even when a test fails or
// panics, and on Linux die with the test binary. RestartAPIServer restarts kube-apiserver on the
// same etcd, to test that informers recover.
//
// The binaries are built from Go module sources by hack/install-kube.sh (`make kube`) and found
// through the environment variable CTRLKIT_KUBE_DIR (default $HOME/.cache/ctrlkit/kube/v1.37.2),
// or CTRLKIT_KUBE_APISERVER and CTRLKIT_ETCD naming one binary each. Without them the tests are
// skipped — unless CTRLKIT_REQUIRE_APISERVER=1, as in CI, where they fail. In -short mode they are
// skipped.
//
// The server runs without kube-controller-manager: nothing creates ServiceAccounts (ServiceAccount
// admission is disabled so Pods can be created), garbage-collects owned objects, empties deleted
// namespaces or turns Deployments into ReplicaSets. Those are your controllers' job.
//
// # Webhooks
//
// The API server can call webhooks served by the test process on loopback. WebhookCerts writes
// a throw-away CA and a certificate for 127.0.0.1 into a directory (the CertDir of a
// webhook.Server); InstallMutatingWebhook and InstallValidatingWebhook create configurations
// whose webhooks reach that server (a clientConfig url holding only a path becomes
// https://127.0.0.1:PORT/path, the caBundle is the CA), scoped to the Env's namespace unless
// they say otherwise, and delete them when the test ends; SetCRDConversion points a CRD's
// conversion at the server and restores it afterwards. The API server takes a new
// configuration up within about a second: poll for its effect. On a fake Env they return an
// error.
//
// # Controllers
//
// RunController runs a controller (anything with Name, Run and Stats, as ctrlkit's
// controller.Controller has) until the test ends, and WaitForQuiet waits until every controller
// has had an empty queue, no reconcile in flight, no key in retry backoff and no key held by a
// write fence for a while (a key past its backoff retries, retried only at the Every interval
// of Options.Retry, does not count), so a test asserts on a settled world instead of
// sleeping:
//
//	env.RunController(env.Context(), c)
//	env.WaitForQuiet(10 * time.Second)
//	// assert on env.Client() or the listers
//
// When the timeout passes first, the failure says why, controller by controller; for
// controller.Controller (its Waiting method) it names the keys:
//
//	controllers did not become quiet within 10s: website: 0 queued, 0 in flight, 1 retrying,
//	1 held by write fences: key demo/site waits for demo/site at resourceVersion 12 or newer in
//	configmaps (fenced since 15:04:05.000), key demo/blog retrying (8 retries)
//
// Package testkit/sim runs a controller on the fake cluster under seeded faults (crashes,
// stale caches, merged events, API errors, drift), deterministically, and compares each run with
// the run without faults.
//
// Methods that fail the test (Sync, WaitForQuiet, FailWrites, ...) do so through the
// testing.TB the Env was built with; from a subtest use the error-returning forms (SyncContext,
// QuietContext, RestartAPIServer).
package testkit
