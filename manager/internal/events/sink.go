package events

import (
	"context"
	"errors"
	"sync"

	eventsv1 "k8s.io/api/events/v1"
	kevents "k8s.io/client-go/tools/events"
)

// errStopped fails the writes attempted after Stop; client-go then gives
// the event up, as its context is cancelled.
var errStopped = errors.New("manager: stopped: event not written")

// writeGate counts the writes in flight and refuses new ones once closed.
// The WaitGroup is only added to under mu before close, as its rules ask.
type writeGate struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

func (g *writeGate) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.wg.Add(1)
	return true
}

func (g *writeGate) leave() { g.wg.Done() }

// close refuses later writes and waits for those in flight.
func (g *writeGate) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.wg.Wait()
}

// v1Sink is client-go's events.k8s.io sink that stamps the Manager's
// identity as reportingInstance (client-go's NewRecorder fixes it to
// "<reportingController>-<hostname>") and is counted in the writeGate, so
// that no write outlives Stop.
type v1Sink struct {
	sink     kevents.EventSink
	instance string
	writes   *writeGate
}

var _ kevents.EventSink = (*v1Sink)(nil)

// write makes one write of ev, stamped, unless the sink was stopped.
func (s *v1Sink) write(ev *eventsv1.Event, w func(*eventsv1.Event) (*eventsv1.Event, error)) (*eventsv1.Event, error) {
	if !s.writes.enter() {
		return nil, errStopped
	}
	defer s.writes.leave()
	// A copy: ev may be the broadcaster's cached one, which is not ours to
	// change.
	c := *ev
	c.ReportingInstance = s.instance
	return w(&c)
}

func (s *v1Sink) Create(ctx context.Context, ev *eventsv1.Event) (*eventsv1.Event, error) {
	return s.write(ev, func(c *eventsv1.Event) (*eventsv1.Event, error) { return s.sink.Create(ctx, c) })
}

func (s *v1Sink) Update(ctx context.Context, ev *eventsv1.Event) (*eventsv1.Event, error) {
	return s.write(ev, func(c *eventsv1.Event) (*eventsv1.Event, error) { return s.sink.Update(ctx, c) })
}

func (s *v1Sink) Patch(ctx context.Context, ev *eventsv1.Event, data []byte) (*eventsv1.Event, error) {
	return s.write(ev, func(c *eventsv1.Event) (*eventsv1.Event, error) { return s.sink.Patch(ctx, c, data) })
}
