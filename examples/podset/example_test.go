package main

import (
	"context"
	"os"
)

// The flags. Without --kubeconfig (or $KUBECONFIG) the command runs its demo on an in-memory
// cluster; with one it installs the CRD (or, with --install-crd=false, waits for it) and runs
// until interrupted.
func Example_help() {
	run(context.Background(), []string{"-h"}, os.Stdout)
	// Output:
	// Usage of podset:
	//       --cache-memory-budget string               memory the informer caches may hold together, as estimated (ctrlkit_informer_bytes), such as 512Mi; empty: no budget
	//       --cache-memory-budget-policy string        what happens over --cache-memory-budget: warn (log), fail-readiness (also fail /readyz) or degrade (also cache the degradable informers' metadata only) (default "warn")
	//       --health-addr string                       address of /healthz and /readyz, host:port ("" disables); the demo picks a free loopback port unless set (default ":8081")
	//       --install-crd                              install the PodSet CRD at start when it is missing; with false, wait for it (/readyz names it meanwhile), and stop and wait again whenever it is deleted (default true)
	//       --kube-api-burst int                       burst to use while talking with the API server, with a positive --kube-api-qps (default 30)
	//       --kube-api-qps float32                     QPS to use while talking with the API server (kube-controller-manager's flag); 0: no client-side limit, API Priority and Fairness on the server decides (default 20)
	//       --kubeconfig string                        path to a kubeconfig; default $KUBECONFIG; neither: run the demo on an in-memory cluster
	//       --leader-elect                             Start a leader election client and gain leadership before executing the main loop. Enable this when running replicated components for high availability. (default true)
	//       --leader-elect-lease-duration duration     The duration that non-leader candidates will wait after observing a leadership renewal until attempting to acquire leadership of a led but unrenewed leader slot. This is effectively the maximum duration that a leader can be stopped before it is replaced by another candidate. This is only applicable if leader election is enabled. (default 15s)
	//       --leader-elect-renew-deadline duration     The interval between attempts by the acting master to renew a leadership slot before it stops leading. This must be less than the lease duration. This is only applicable if leader election is enabled. (default 10s)
	//       --leader-elect-resource-lock string        The type of resource object that is used for locking during leader election. Supported options are 'leases'. (default "leases")
	//       --leader-elect-resource-name string        The name of resource object that is used for locking during leader election. (default "ctrlkit-podset")
	//       --leader-elect-resource-namespace string   The namespace of resource object that is used for locking during leader election. Empty: the namespace of the Pod this process runs in (read from /var/run/secrets/kubernetes.io/serviceaccount/namespace), else "ctrlkit-system".
	//       --leader-elect-retry-period duration       The duration the clients should wait between attempting acquisition and renewal of a leadership. This is only applicable if leader election is enabled. (default 2s)
	//       --metrics-addr string                      address of /metrics, host:port ("" disables); the demo picks a free loopback port unless set (default ":8080")
	//       --metrics-cert-dir string                  directory holding tls.crt and tls.key for --metrics-secure, reloaded when they change; empty: a self-signed certificate
	//       --metrics-secure                           serve /metrics over HTTPS, only to bearer tokens the API server authenticates and authorizes for get on /metrics (TokenReview, SubjectAccessReview; the binary's identity needs system:auth-delegator); the in-memory demo serves plain HTTP, as it cannot review tokens (default true)
	//       --namespace string                         watch only this namespace (default all; the in-memory demo uses default)
	//       --namespace-selector string                watch only the namespaces whose labels match this selector (e.g. podset.ctrlkit.dev/watch=true), following them as they are labelled and unlabelled; needs list and watch on namespaces (default all namespaces)
	//       --profiling                                serve /debug/pprof/ on the metrics server (with --metrics-secure, to tokens allowed to get those paths)
	//       --timeout duration                         in-memory cluster: how long each demo step may take to converge (default 30s)
	//   -v, --v int                                    log verbosity (default 1)
	//       --watch                                    in-memory cluster: keep running after the demo until interrupted
	//       --webhook-addr string                      serve the PodSet webhooks (defaulting, validation, conversion) on this host:port ("" serves none)
	//       --webhook-cert-dir string                  directory of the webhooks' tls.crt and tls.key (and ca.crt, the caBundle, with --webhook-url), reloaded when they change; default a throw-away self-signed pair
	//       --webhook-url string                       https base URL the API server reaches --webhook-addr at; when set, the webhook configurations and the two-version CRD are installed or updated to call it
	//       --workers int                              objects reconciled in parallel, per controller (default 2)
}
