package controller

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recordingGate refuses the keys in refuse and records the order of Admit,
// Reconcile and Release.
type recordingGate struct {
	mu       sync.Mutex
	refuse   map[string]bool
	inFlight map[string]bool
	events   []string
	overlap  bool
}

func (g *recordingGate) Admit(key string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.events = append(g.events, "admit "+key)
	if g.refuse[key] {
		return false
	}
	if g.inFlight[key] {
		g.overlap = true
	}
	g.inFlight[key] = true
	return true
}

func (g *recordingGate) Release(key string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.events = append(g.events, "release "+key)
	delete(g.inFlight, key)
}

func (g *recordingGate) record(e string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.events = append(g.events, e)
}

func TestAdmissionRefusesAndBrackets(t *testing.T) {
	g := &recordingGate{refuse: map[string]bool{"b": true}, inFlight: map[string]bool{}}
	var reconciled sync.Map
	c, err := New("admitted", ReconcilerFunc[string](func(_ context.Context, key string) (Result, error) {
		g.record("reconcile " + key)
		reconciled.Store(key, true)
		if key == "b" {
			t.Error("refused key b was reconciled")
		}
		return Result{}, errors.New("fail once more") // retried: a refused key must not be
	}), Options[string]{Workers: 3, Retry: Backoff(2, Every(5*time.Minute))})
	require.NoError(t, err)
	require.NoError(t, c.SetAdmission(g))
	c.Enqueue("a")
	c.Enqueue("b")
	startController(t, context.Background(), c)
	require.Eventually(t, func() bool {
		s := c.Stats()
		return s.Idle() && s.Retrying == 0 && c.Stats().Idle()
	}, 10*time.Second, time.Millisecond)

	g.mu.Lock()
	defer g.mu.Unlock()
	assert.False(t, g.overlap, "a key admitted twice before its release")
	var a, b []string
	for _, e := range g.events {
		switch e[len(e)-1] {
		case 'a':
			a = append(a, e)
		case 'b':
			b = append(b, e)
		}
	}
	assert.Equal(t, []string{"admit b"}, b, "a refused key is dropped, not retried")
	// Three calls (the first and two retries), each bracketed by admit and release.
	want := []string{}
	for range 3 {
		want = append(want, "admit a", "reconcile a", "release a")
	}
	assert.Equal(t, want, a)
}

func TestSetAdmissionAfterRun(t *testing.T) {
	c, err := New("late", ReconcilerFunc[string](func(context.Context, string) (Result, error) { return Result{}, nil }), Options[string]{})
	require.NoError(t, err)
	startController(t, context.Background(), c)
	require.Eventually(t, func() bool { return c.SetAdmission(nil) != nil }, 10*time.Second, time.Millisecond)
	assert.ErrorIs(t, c.SetAdmission(&recordingGate{}), ErrAlreadyStarted)
}
