// Command fleet-policy keeps a baseline ConfigMap, whose content lives in a
// hub cluster, in every namespace labelled fleet.ctrlkit.dev/baseline=true
// of every cluster of a fleet: one controller, one queue, many clusters
// (package multicluster). The clusters are those whose kubeconfigs are
// Secrets in --clusters-namespace of the hub (the pattern of fleet managers;
// Cluster API's <cluster>-kubeconfig Secrets with --secret-key=value).
//
// Without --kubeconfig (and without $KUBECONFIG) it runs a scripted demo on
// an in-memory hub and two in-memory clusters and exits 0 once every step
// converged (1 if one did not within --timeout):
//
//	go run ./examples/fleet-policy
//
// With --kubeconfig (the hub) it runs until interrupted.
package main
