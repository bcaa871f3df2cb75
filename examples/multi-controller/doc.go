// Command multi-controller runs several controllers in one binary, the way
// kube-controller-manager does: one Manager, one shared informer factory (one watch per
// resource however many controllers read it), one leader election for all of them, one
// --feature-gates flag, one metrics and health endpoint.
//
// The controllers:
//
//   - configmap-propagator (examples/configmap-propagator/propagator): always on;
//   - pod-counter: annotates each Namespace with its number of Pods; behind the Alpha gate
//     PodCounter, off by default (--feature-gates=PodCounter=true turns it on).
//
// Without --kubeconfig (and without $KUBECONFIG) it runs a scripted demo on an in-memory cluster
// and exits 0 once it converged:
//
//	go run ./examples/multi-controller
//	go run ./examples/multi-controller --feature-gates=PodCounter=true
//
// main.go holds what is shared: the flags (every value checked before anything starts, bad
// ones exit 2), the Manager, and addControllers, which builds only the enabled controllers.
// podcounter.go is the gated controller.
package main
