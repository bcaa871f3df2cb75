package multicluster

import (
	"context"
	"time"

	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/internal/retry"
)

// A cluster's keys wait for its caches to sync since it was engaged (the
// gate, cluster.go). For a controller built with
// controller.Options.Freshness.Gate they also wait until every informer the
// controller reads there has reached a consistent read of that cluster's API
// server taken once the caches synced: a cluster's first lists may come from
// a watch cache that lags (resourceVersion "0"), and a cluster engaged again
// after an outage may list from one that has not caught up, as a leader's
// caches may lag when it wins its Lease. The check is the controller's own
// (informer.Version); MaxLag, the breaker, does not reach per-cluster
// watches.

// versioner takes a consistent read of one informer in one cluster.
type versioner struct {
	name string
	take func(ctx context.Context) (*informer.Version, error)
}

// gateFresh records that c's keys wait for fresh caches in every cluster.
func (f *Fleet) gateFresh(c *controller.Controller[Key]) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fresh == nil {
		f.fresh = map[*controller.Controller[Key]]bool{}
	}
	f.fresh[c] = true
}

// freshFor adds inf, which c reads in cl, to cl's freshness gate when c asked
// for one. Informers built after the gate passed (a Watch added to engaged
// clusters) are not waited for.
func freshFor[T informer.Object](f *Fleet, c *controller.Controller[Key], cl *Cluster, inf informer.Informer[T]) {
	f.mu.Lock()
	fresh := f.fresh[c]
	f.mu.Unlock()
	if !fresh {
		return
	}
	cl.heldMu.Lock()
	defer cl.heldMu.Unlock()
	if cl.held == nil { // gated already
		return
	}
	cl.versions = append(cl.versions, versioner{name: inf.Name(), take: func(ctx context.Context) (*informer.Version, error) {
		return informer.VersionOf(ctx, inf)
	}})
}

// waitFresh returns once every informer of cl's freshness gate has reached a
// consistent read taken now, or with ctx's error. A read the API server does
// not answer is tried again, a second to 30 s apart; Err names the informer
// that lags meanwhile.
func (c *Cluster) waitFresh(ctx context.Context) error {
	c.heldMu.Lock()
	vs := c.versions
	c.heldMu.Unlock()
	if len(vs) == 0 {
		return nil
	}
	defer c.lagging.Store(nil)
	start := c.clock.Now()
	for _, v := range vs {
		ver, err := c.takeVersion(ctx, v)
		if err != nil {
			return err
		}
		if ver.Reached() {
			continue
		}
		msg := "caches behind the API server: informer " + v.name + ": " + ver.Lagging()
		c.lagging.Store(&msg)
		c.logger.V(2).Info("Waiting for a cache to reach the cluster's API server before reconciling its keys", "informer", v.name, "lagging", ver.Lagging())
		if err := ver.Wait(klog.NewContext(ctx, c.logger)); err != nil {
			return err
		}
	}
	c.logger.V(2).Info("The cluster's caches reached its API server's state", "informers", len(vs), "waited", c.clock.Since(start))
	return nil
}

func (c *Cluster) takeVersion(ctx context.Context, v versioner) (*informer.Version, error) {
	return retry.Until(ctx, c.clock, v.take, func(err error, wait time.Duration) {
		msg := "caches behind the API server: informer " + v.name + ": cannot read the API server's state: " + err.Error()
		c.lagging.Store(&msg)
		c.logger.Info("Could not read the cluster's state of an informer's resource; trying again", "informer", v.name, "err", err, "after", wait)
	})
}
