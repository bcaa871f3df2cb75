package serving

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// Site is what to serve on one address.
type Site struct {
	// Name says what the site is ("health", "metrics"), in logs and errors
	// and for Servers.Addr.
	Name string
	// Addr is the address to listen on; "" means the site is not served.
	// Sites with equal addresses share one server, unless the port is to
	// be picked (":0").
	Addr string
	// Paths are the handlers, by ServeMux pattern.
	Paths map[string]http.Handler
	// TLS, when not nil, serves the site over HTTPS (HTTP/1.1 only, TLS 1.2
	// or later). A site with TLS must not share its address with one
	// without.
	TLS *TLS
	// Profiling says Paths include pprof (Pprof): the server's write
	// timeout is then at least ProfilingWriteTimeout, and serving it over
	// plain HTTP is logged.
	Profiling bool
}

// Servers are the running servers of Start.
type Servers struct {
	servers []server

	mu    sync.Mutex
	addrs map[string]string // Site.Name → address listened on
}

// server is one listening HTTP server.
type server struct {
	srv       *http.Server
	done      chan struct{}
	stopWatch func() // stops the certificate watcher of a TLS server; nil without one
	cancel    func() // ends the context of every request
}

// group is the sites of one server.
type group struct {
	addr      string
	mux       *http.ServeMux
	names     []string
	tls       *TLS
	profiling bool
}

// Start listens on the sites' addresses and serves them until Shutdown,
// logging through logger. On an error it stops what it started.
func Start(logger klog.Logger, timeouts Timeouts, sites ...Site) (*Servers, error) {
	var groups []*group
	for _, site := range sites {
		if site.Addr == "" {
			continue
		}
		var g *group
		for _, x := range groups {
			// One server for equal addresses, unless the port is to be
			// picked (":0"): then each gets its own.
			if x.addr == site.Addr && !strings.HasSuffix(site.Addr, ":0") {
				g = x
			}
		}
		if g == nil {
			g = &group{addr: site.Addr, mux: http.NewServeMux()}
			groups = append(groups, g)
		}
		g.names = append(g.names, site.Name)
		g.profiling = g.profiling || site.Profiling
		if site.TLS != nil {
			g.tls = site.TLS
		}
		for p, h := range site.Paths {
			g.mux.Handle(p, h)
		}
	}

	s := &Servers{addrs: map[string]string{}}
	for _, g := range groups {
		if err := s.start(logger, timeouts, g); err != nil {
			s.Shutdown(logger)
			return nil, err
		}
	}
	return s, nil
}

// start listens on g's address and serves it.
func (s *Servers) start(logger klog.Logger, timeouts Timeouts, g *group) error {
	what := strings.Join(g.names, " and ")
	base, cancel := context.WithCancel(context.Background())
	srv := server{srv: &http.Server{Handler: g.mux, ErrorLog: httpErrorLog(logger),
		BaseContext: func(net.Listener) context.Context { return base }}, done: make(chan struct{}), cancel: cancel}
	if g.profiling {
		timeouts.Write = max(timeouts.Write, ProfilingWriteTimeout)
	}
	timeouts.apply(srv.srv)
	if g.tls != nil {
		cfg, watcher, err := g.tls.config(what, logger)
		if err != nil {
			cancel()
			return err
		}
		srv.srv.TLSConfig, srv.srv.Protocols = cfg, http1Only()
		if watcher != nil {
			srv.stopWatch = runWatcher(klog.NewContext(context.Background(), logger), watcher)
		}
	}
	ln, err := net.Listen("tcp", g.addr)
	if err != nil {
		if srv.stopWatch != nil {
			srv.stopWatch()
		}
		cancel()
		return fmt.Errorf("serving %s on %q: %w", what, g.addr, err)
	}
	https := srv.srv.TLSConfig != nil // read before Serve, which writes the server's fields
	go func() {
		defer close(srv.done)
		var err error
		if https {
			err = srv.srv.ServeTLS(ln, "", "")
		} else {
			err = srv.srv.Serve(ln)
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error(err, "HTTP server failed", "addr", ln.Addr().String())
		}
	}()
	s.mu.Lock()
	for _, n := range g.names {
		s.addrs[n] = ln.Addr().String()
	}
	s.mu.Unlock()
	logger.Info("Serving", "addr", ln.Addr().String(), "what", g.names, "https", https)
	if g.profiling && !https {
		logger.Info("Serving /debug/pprof/ to anyone: MetricsServing.SecureServing is false", "addr", ln.Addr().String())
	}
	s.servers = append(s.servers, srv)
	return nil
}

// Addr returns the address the site named name is served on: with Addr
// "127.0.0.1:0" it names the port picked. It is "" for a site not served,
// and for every site after Shutdown.
func (s *Servers) Addr(name string) string {
	if s == nil {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addrs[name]
}

// Shutdown stops the servers, each given 5 s to finish its requests (whose
// contexts it ends first), and their certificate watchers, and waits for them.
func (s *Servers) Shutdown(logger klog.Logger) {
	for _, srv := range s.servers {
		// Requests in flight end now: one waiting on an API server that does not answer (a
		// scrape's TokenReview) would otherwise hold the shutdown for the 5 s below.
		srv.cancel()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := srv.srv.Shutdown(ctx); err != nil {
			logger.Error(err, "HTTP server shutdown")
			_ = srv.srv.Close()
		}
		cancel()
		<-srv.done
		if srv.stopWatch != nil {
			srv.stopWatch()
		}
	}
	s.mu.Lock()
	clear(s.addrs)
	s.mu.Unlock()
}
