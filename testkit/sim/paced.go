package sim

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/watch"
)

// pacedWatch forwards a watch one event per latency at most: a burst (a replay after a lag,
// held events released) reaches the informers as writes do, each event's consequences done
// before the next arrives, in every run alike.
type pacedWatch struct {
	out  chan watch.Event
	stop chan struct{}
	once sync.Once
	done chan struct{}
}

func newPacedWatch(inner watch.Interface) *pacedWatch {
	w := &pacedWatch{out: make(chan watch.Event), stop: make(chan struct{}), done: make(chan struct{})}
	go w.run(inner)
	return w
}

func (w *pacedWatch) run(inner watch.Interface) {
	defer close(w.done)
	defer close(w.out)
	defer inner.Stop()
	for {
		select {
		case ev, ok := <-inner.ResultChan():
			if !ok {
				return
			}
			select {
			case w.out <- ev:
			case <-w.stop:
				return
			}
			t := time.NewTimer(latency)
			select {
			case <-t.C:
			case <-w.stop:
				t.Stop()
				return
			}
		case <-w.stop:
			return
		}
	}
}

func (w *pacedWatch) ResultChan() <-chan watch.Event { return w.out }

func (w *pacedWatch) Stop() {
	w.once.Do(func() { close(w.stop) })
	<-w.done
}
