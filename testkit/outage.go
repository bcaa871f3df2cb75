package testkit

import (
	"fmt"
	"net"
	"net/url"
	"sync"
	"testing"

	"k8s.io/client-go/rest"
)

// Outage is a TCP proxy in front of an API server that can drop every packet, the way a
// network partition or a dead load balancer does: while it is cut, bytes on open connections
// stop flowing in both directions and new connections are accepted and never answered, so
// clients wait for their own timeouts instead of seeing a refusal. Build it with NewOutage;
// give the code under test Config (or URL) instead of the Env's.
//
// By default a connection open during the outage carries on after it (the bytes held are
// delivered), as after a short partition. Drop makes the connections open now dead for good
// instead, as when a load balancer, a NAT or a restarted API server forgot them: the client's
// side stays open and nothing it sends is ever answered, so only the client's own timeouts (an
// HTTP/2 health check) find out.
type Outage struct {
	ln     net.Listener
	cfg    *rest.Config
	mu     sync.Mutex
	cut    bool
	gate   chan struct{} // closed while traffic flows; replaced on Cut
	wg     sync.WaitGroup
	conn   map[net.Conn]struct{}
	epoch  int           // of the connections accepted from now on
	dead   int           // connections of an earlier epoch are dead (Drop)
	closed chan struct{} // closed by close
}

// NewOutage starts a proxy to the API server of cfg on a loopback port. It is closed, with
// every connection through it, when the test ends.
func NewOutage(t testing.TB, cfg *rest.Config) *Outage {
	t.Helper()
	u, err := url.Parse(cfg.Host)
	if err == nil && u.Host == "" {
		err = fmt.Errorf("API server URL %q has no host", cfg.Host)
	}
	if err != nil {
		t.Fatalf("testkit: outage proxy: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testkit: outage proxy: %v", err)
	}
	o := &Outage{ln: ln, gate: make(chan struct{}), conn: map[net.Conn]struct{}{}, closed: make(chan struct{})}
	close(o.gate)
	o.cfg = rest.CopyConfig(cfg)
	o.cfg.Host = u.Scheme + "://" + ln.Addr().String()
	if o.cfg.TLSClientConfig.ServerName == "" {
		// The serving certificate names the API server's host, not the proxy's.
		o.cfg.TLSClientConfig.ServerName = u.Hostname()
	}
	o.wg.Go(func() { o.accept(u.Host) })
	t.Cleanup(o.close)
	return o
}

// Config is cfg with its host replaced by the proxy's.
func (o *Outage) Config() *rest.Config { return rest.CopyConfig(o.cfg) }

// Cut starts the outage: nothing goes through until Restore.
func (o *Outage) Cut() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.cut {
		o.cut, o.gate = true, make(chan struct{})
	}
}

// Restore ends the outage: held bytes and connections go through again.
func (o *Outage) Restore() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cut {
		o.cut = false
		close(o.gate)
	}
}

// Drop makes every connection open now dead for good: its bytes, held or to come, go nowhere,
// and neither side is closed, so a client finds out only through its own timeouts. Connections
// made after it work (once Restore was called, when the outage is cut).
func (o *Outage) Drop() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.dead = o.epoch + 1
	o.epoch++
}

// alive reports whether connections of epoch still carry bytes.
func (o *Outage) alive(epoch int) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return epoch >= o.dead
}

// open returns the channel closed while traffic flows.
func (o *Outage) open() <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.gate
}

func (o *Outage) accept(target string) {
	for {
		c, err := o.ln.Accept()
		if err != nil {
			return
		}
		if !o.track(c) {
			return
		}
		o.mu.Lock()
		epoch := o.epoch
		o.mu.Unlock()
		o.wg.Go(func() {
			defer o.untrack(c)
			<-o.open() // a connection made during the outage waits for its end
			if !o.alive(epoch) {
				<-o.closed
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				return
			}
			if !o.track(up) {
				return
			}
			defer o.untrack(up)
			var pipes sync.WaitGroup
			pipes.Go(func() { o.pipe(up, c, epoch) })
			pipes.Go(func() { o.pipe(c, up, epoch) })
			pipes.Wait()
		})
	}
}

// pipe copies src to dst chunk by chunk, holding each chunk while the outage lasts; once the
// connection's epoch is dead (Drop) it holds it until the proxy closes.
func (o *Outage) pipe(dst, src net.Conn, epoch int) {
	defer func() { _ = dst.Close(); _ = src.Close() }()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			<-o.open()
			if !o.alive(epoch) {
				<-o.closed
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil { // EOF or a closed connection: the other side is closed too
			return
		}
	}
}

func (o *Outage) track(c net.Conn) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.conn == nil { // closed
		_ = c.Close()
		return false
	}
	o.conn[c] = struct{}{}
	return true
}

func (o *Outage) untrack(c net.Conn) {
	_ = c.Close()
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.conn, c)
}

// close stops the proxy, closes every connection and waits for its goroutines.
func (o *Outage) close() {
	_ = o.ln.Close()
	close(o.closed)
	o.Restore() // release goroutines held by the gate
	o.mu.Lock()
	for c := range o.conn {
		_ = c.Close()
	}
	o.conn = nil
	o.mu.Unlock()
	o.wg.Wait()
}
