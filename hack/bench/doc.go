// Package bench pits ctrlkit against its peers with Go's benchmark harness. It is a separate
// module (see go.mod) so that the main module never depends on a peer such as
// controller-runtime.
//
// Each benchmark family lives in its own file and names its sub-benchmarks
// workload=<what>/impl=<who>, so that benchstat (-col /impl) and cmd/benchtable line the
// implementations up side by side:
//
//   - queue_bench_test.go: ctrlkit's workqueue against client-go's rate-limiting queue and
//     controller-runtime's priority queue (adapters in queues.go).
//   - webhook_bench_test.go: one admission review (defaulting, validation) and one conversion
//     review of a realistic PodSet through ctrlkit's webhook handlers and controller-runtime's.
//
// Run everything with ./run.sh (make bench-peers from the repository root). It compiles the
// benchmarks once and runs the whole suite BENCHCOUNT times in turn, so that the
// implementations share the machine's load alike, then prints a benchstat table and a table of
// medians with ratios.
package bench
