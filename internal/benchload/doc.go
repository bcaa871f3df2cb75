// Package benchload is the producer/consumer load that the workqueue benchmarks drive through a
// queue, shared by the in-package benchmarks (workqueue) and the side-by-side ones against
// client-go and controller-runtime (hack/bench), so that both measure exactly the same workload.
package benchload
