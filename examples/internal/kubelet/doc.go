// Package kubelet simulates the part of a cluster that runs Pods, for the examples' in-memory
// cluster (and for real API servers without nodes, as in integration tests): a scheduler that
// binds each unscheduled Pod to a node through the pods/binding subresource, and a kubelet that,
// a startup delay after it first saw the Pod bound, reports it Running and Ready through
// UpdateStatus, and finishes the graceful deletion of a bound Pod (a real API server keeps a
// deleted Pod Terminating until its kubelet deletes it with no grace period).
//
// It runs no containers and never fails a Pod. It is itself a small ctrlkit controller (one
// Pod per key, Result.RequeueAfter for the delay) with its own informer factory, so it watches
// the cluster separately from the controller under demonstration, as a real kubelet would.
//
// # Use
//
//	k, err := kubelet.New(client, kubelet.Options{StartupDelay: 300 * time.Millisecond})
//	if err != nil { ... }
//	done := make(chan error, 1)
//	go func() { done <- k.Run(ctx) }() // the caller owns the goroutine
//	...
//	cancel()
//	<-done
package kubelet
