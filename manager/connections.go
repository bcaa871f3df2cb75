package manager

import (
	"fmt"
	"net"
	"net/http"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/connrotation"
)

// Dead connections after an outage.
//
// A network that drops packets for a while may also forget the connections open across it (a
// load balancer's or a NAT's flows, an API server that restarted and whose resets were lost).
// The client's side of such a connection stays open, and every request and watch on it waits
// until client-go's HTTP/2 health check gives up on it: 30 s without a frame, then a 15 s ping.
// The informers then back off before they list again, so a controller caught up tens of
// seconds after the API server was back (docs/performance.md, "Operator journeys").
//
// When the Manager builds its clients from a rest.Config, it dials through a connrotation
// dialer (what the kubelet does to drop its connections when its heartbeats fail) and the API
// server probe asks over connections of its own, dialled afresh after each unanswered ask, so
// it sees the server back at its next ask. Then, if an ask went unanswered during the outage,
// the Manager closes every connection its clients hold: requests and watches in flight fail at
// once, client-go retries them on new connections, and the informers re-watch (or re-list)
// after their first, sub-second backoff instead of waiting out the dead connection.
// A slow server that answers 5xx does not close anything: its connections work.

// dialer is client-go's default dialer (transport.cache's), tracked.
func dialer() *connrotation.Dialer {
	return connrotation.NewDialer((&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext)
}

// trackConnections returns a copy of cfg that dials through a tracking dialer, and the dialer;
// cfg itself when it has a Dial of its own (nil dialer: its connections are not the Manager's
// to close).
func trackConnections(cfg *rest.Config) (*rest.Config, *connrotation.Dialer) {
	if cfg.Dial != nil {
		return cfg, nil
	}
	d := dialer()
	cfg = rest.CopyConfig(cfg)
	cfg.Dial = d.DialContext
	return cfg, d
}

// probeClient is the API server probe's HTTP client: cfg's credentials and TLS, connections of
// its own (closed after each unanswered ask by closeProbeConnections).
func probeClient(cfg *rest.Config) (*http.Client, *connrotation.Dialer, error) {
	cfg = rest.CopyConfig(cfg)
	d := dialer()
	cfg.Dial = d.DialContext
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("manager: API server probe client for %s: %w", cfg.Host, err)
	}
	return hc, d, nil
}

// noAnswerError is a probe's ask that got no HTTP answer at all: the connection is suspect.
type noAnswerError struct{ err error }

func (e *noAnswerError) Error() string { return e.err.Error() }
func (e *noAnswerError) Unwrap() error { return e.err }
