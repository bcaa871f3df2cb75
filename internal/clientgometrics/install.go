package clientgometrics

import (
	"errors"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	clientmetrics "k8s.io/client-go/tools/metrics"

	"github.com/ctrlkit/ctrlkit/internal/directinformer"
)

// collectors is what Register adds to a registry.
var collectors = []prometheus.Collector{
	restRequests, restRequestDuration, restRateLimiterDuration, restRequestRetries,
	leaderStatus, leaderSlowpath, informerSeries,
}

var installOnce sync.Once

// Install hooks this package's collectors into client-go, the first time it
// is called in the process; later calls do nothing. Call it before any
// goroutine makes a request (see the package doc).
func Install() {
	installOnce.Do(func() {
		clientmetrics.Register(clientmetrics.RegisterOpts{
			RequestResult:      restResultHook{},
			RequestLatency:     latencyHook{restRequestDuration},
			RateLimiterLatency: latencyHook{restRateLimiterDuration},
			RequestRetry:       restRetryHook{},
		})
		leaderelection.SetProvider(leaderMetricsProvider{})
		cache.SetInformerMetricsProvider(informerSeries)
		directinformer.SetMetricsProvider(informerSeries)
	})
}

// Hooked reports whether client-go's REST request hook is this package's:
// Install ran, and no other package took the hooks before it. Read it only
// where no request can be in flight (a test), since client-go does not
// lock the variable.
func Hooked() bool {
	_, ok := clientmetrics.RequestResult.(restResultHook)
	return ok
}

// Register adds the collectors to reg. A registry that has them already
// (two Managers sharing one, or a caller's equal collectors) keeps what it
// has.
func Register(reg prometheus.Registerer) error {
	for _, c := range collectors {
		if err := reg.Register(c); err != nil && !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
			return fmt.Errorf("client-go metrics: %w", err)
		}
	}
	return nil
}
