// Command configmap-propagator copies labelled ConfigMaps of a source namespace into every
// namespace their target selector matches, and keeps the copies in sync.
//
// Without --kubeconfig (and without $KUBECONFIG) it runs a scripted demo on an in-memory
// cluster and exits 0 once every step converged (1 if one did not within --timeout):
//
//	go run ./examples/configmap-propagator
//
// With --kubeconfig it runs against that cluster until interrupted.
package main
