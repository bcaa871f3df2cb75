package manager

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"

	"github.com/ctrlkit/ctrlkit/controller"
)

// outageLogInterval is how often an outage that lasts is logged again.
const outageLogInterval = 30 * time.Second

// probeAPIServer asks the API server for /readyz every interval, each ask
// bounded by the interval, until ctx ends, and logs an outage when an ask
// fails and when it ends: an informer waiting on a dead watch connection,
// or a controller with nothing to do, says nothing for minutes otherwise.
func (m *Manager) probeAPIServer(ctx context.Context, interval time.Duration) {
	ask := m.probe()
	if ask == nil {
		return
	}
	logger := m.log()
	var down time.Time // start of the outage; zero while the server answers
	var failed int
	var logged time.Time
	var unanswered bool // an ask of this outage got no answer: the connections are suspect
	for {
		askCtx, cancel := context.WithTimeout(ctx, interval)
		start := m.clock.Now()
		err := ask(askCtx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		now := m.clock.Now()
		if errors.As(err, new(*noAnswerError)) {
			unanswered = true
			if m.probeConns != nil {
				m.probeConns.CloseAll() // the next ask dials afresh, so it sees the server back at once
			}
		}
		switch {
		case err != nil && down.IsZero():
			down, failed, logged = start, 1, now
			m.apiDown.Store(true)
			logger.Error(err, "The API server does not answer: informers and controllers wait for it; leader election ends after its renew deadline",
				"probeInterval", interval)
		case err != nil:
			failed++
			if now.Sub(logged) >= outageLogInterval {
				logged = now
				logger.Error(err, "The API server still does not answer", "for", now.Sub(down).Round(time.Second), "failedProbes", failed)
			}
		case !down.IsZero():
			logger.Info("The API server answers again", "after", now.Sub(down).Round(time.Millisecond), "failedProbes", failed)
			if unanswered && m.conns != nil {
				// Connections open across the outage may be dead without knowing it; see connections.go.
				m.conns.CloseAll()
				logger.Info("Closed the clients' connections to the API server: requests and watches resume on new ones")
			}
			down, unanswered = time.Time{}, false
			m.apiDown.Store(false)
		}
		t := m.clock.NewTimer(max(interval-now.Sub(start), 0))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// errStopDuringOutage cancels the controllers when the Manager stops during
// an outage; it does not match controller.ErrShutdown.
var errStopDuringOutage = errors.New("manager stopping while the API server does not answer: reconciles in flight are cancelled")

// shutdownCause is what the controllers' context is cancelled with when the
// Manager stops: controller.ErrShutdown, so the reconciles in flight finish
// their writes (controller.Options.DrainTimeout), unless the probe sees the
// API server down: no write would land, and waiting would only delay the
// exit.
func (m *Manager) shutdownCause() error {
	if m.apiDown.Load() {
		return errStopDuringOutage
	}
	return controller.ErrShutdown
}

// probe returns the one ask of the probe, nil for a clientset without a REST
// client (client-go's fake). It asks with the clientset's credentials, over
// connections of its own when the Manager built the clientset (connections.go),
// else over the clientset's, but not through its client-side rate limiter,
// which the controllers' requests share: a throttled client is not an
// outage, and the probe takes nothing from their budget.
func (m *Manager) probe() func(context.Context) error {
	rc := m.client.Discovery().RESTClient()
	if rc == nil {
		return nil
	}
	if v := reflect.ValueOf(rc); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil
	}
	r, ok := rc.(*rest.RESTClient)
	if !ok || r.Client == nil {
		return func(ctx context.Context) error {
			err := rc.Get().AbsPath("/readyz").Do(ctx).Error()
			var st apierrors.APIStatus
			if errors.As(err, &st) && st.Status().Code < 500 {
				return nil
			}
			return err
		}
	}
	u := r.Get().AbsPath("/readyz").URL()
	target := (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
	hc := r.Client
	if m.probeHTTP != nil {
		hc = m.probeHTTP
	}
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return &noAnswerError{err: err}
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		// A refusal below 500 (401, 403) is an answer: the server is up.
		if resp.StatusCode >= http.StatusInternalServerError {
			return fmt.Errorf("GET %s: %s", target, resp.Status)
		}
		return nil
	}
}

// probeInterval is Options.APIServerProbeInterval, defaulted: the leader
// election's retry period, so an outage is noticed as soon as the elector
// would notice it.
func probeInterval(d time.Duration, retryPeriod time.Duration) time.Duration {
	if d != 0 {
		return d
	}
	return retryPeriod
}
