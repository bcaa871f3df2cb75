// Package demo is the harness every example binary shares, so that each main.go shows only
// what is particular to its controllers. An example describes itself as a Program (its own
// flags, its in-memory cluster's content, how to build its controllers, its scripted demo) and
// calls Main; Run does the rest the same way for every example:
//
//   - the shared flags: manager.Flags, as a user's main registers them (--kubeconfig,
//     --kube-api-qps/--kube-api-burst at kube-controller-manager's 20/30, --metrics-addr,
//     --metrics-secure, --metrics-cert-dir, --profiling, --health-addr, the --leader-elect*
//     flags, --cache-memory-budget*, -v), and the demo's (--workers, --feature-gates, --watch,
//     --timeout), every value checked before anything starts (exit 2 naming the flag;
//     CheckAddr, CheckCertDir and CheckNamespace check the binaries' own); a Lease namespace
//     that does not exist outside a Pod exits 2 too, naming its flag;
//
//   - against a cluster, /metrics over HTTPS (self-signed unless --metrics-cert-dir) to bearer
//     tokens the API server authenticates and authorizes for get on /metrics
//     (manager.MetricsServingOptions.SecureServing; the binary's identity needs the ClusterRole
//     system:auth-delegator); on the in-memory cluster, which cannot review tokens, plain HTTP
//     to anyone (the log says so, and --metrics-secure there is a flag error);
//
//   - the cluster: the one of --kubeconfig or $KUBECONFIG, else an in-memory fakecluster
//     (~/.kube/config is never read implicitly, so a demo cannot touch a real cluster by
//     accident);
//
//   - one manager.Manager with election, gates, probes and metrics, the program's controllers
//     on its factory;
//
//   - on the in-memory cluster, a simulated kubelet and the scripted demo, exit 0 once every
//     step converged and 1 when one did not (or the Manager failed: its error, not the demo's).
//
//     func main() { demo.Main(program(&options{})) }
//
// Kubeconfig, RESTConfig, WriteKubeconfig, NewLogger and Await are the pieces it is built from,
// for tests of the binaries.
package demo
