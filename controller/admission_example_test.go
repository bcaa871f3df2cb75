package controller_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/ctrlkit/ctrlkit/controller"
)

// pausedKeys is an admission step that holds some keys back and counts the
// reconciles in flight, as sharding.Dispatcher does for keys being handed over.
type pausedKeys struct {
	mu       sync.Mutex
	paused   map[string]bool
	inFlight int
}

func (g *pausedKeys) Admit(key string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.paused[key] {
		fmt.Println("held back:", key)
		return false
	}
	g.inFlight++
	return true
}

func (g *pausedKeys) Release(string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.inFlight--
}

func ExampleController_SetAdmission() {
	done := make(chan struct{})
	c, err := controller.New("admitted", controller.ReconcilerFunc[string](func(_ context.Context, key string) (controller.Result, error) {
		fmt.Println("reconciled:", key)
		close(done)
		return controller.Result{}, nil
	}), controller.Options[string]{})
	if err != nil {
		fmt.Println(err)
		return
	}
	admission := &pausedKeys{paused: map[string]bool{"moving": true}}
	if err := c.SetAdmission(admission); err != nil {
		fmt.Println(err)
		return
	}
	c.Enqueue("moving")
	c.Enqueue("staying")
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error)
	go func() { stopped <- c.Run(ctx) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
	}
	cancel()
	<-stopped
	fmt.Println("in flight:", admission.inFlight)
	// Output:
	// held back: moving
	// reconciled: staying
	// in flight: 0
}
