// Package clientgometrics exports client-go's own metrics (REST requests,
// leader election, informer queues and stores) as Prometheus collectors,
// under kube's and controller-runtime's names, labels and help.
//
// client-go reports them through process-global hooks (tools/metrics.Register,
// leaderelection.SetProvider, cache.SetInformerMetricsProvider) that take
// effect once per process, while every Manager has a registry of its own.
// So there is one set of collectors per process: Install hooks them into
// client-go, once, when the first Manager is built (not at init: importing
// a package has no side effect), and Register adds them to each Manager's
// registry. A collector may sit in many registries; each Manager's /metrics
// thus serves the process's counts, like the go_* and process_* series.
//
// client-go reads its hook variables without a lock, so Install must run
// before any goroutine of the process makes a request: manager.New calls it
// first thing, and a binary builds its Manager before its clients start
// working. testkit calls it too, when it builds an Env: a test may run a
// binary, and so its first New, in a goroutine next to requests of its own. An informer reports its store through the provider that was
// hooked when it was built, so informers built before the first Manager
// report no store series.
//
// If another package took client-go's hooks first (component-base's
// metrics/prometheus/restclient and clientgo/fifo or controller-runtime's
// pkg/metrics, all at init), client-go keeps theirs: these collectors then
// stay without series instead of showing misleading zeros.
package clientgometrics
