package events

import (
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr/funcr"
)

func TestLogGateDropsLinesAfterClose(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	base := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, prefix+" "+args)
	}, funcr.Options{Verbosity: 1})
	var g logGate
	l := g.logger(base).WithName("broadcaster").WithValues("k", "v")
	l.Info("before")
	l.V(1).Info("verbose before")
	l.V(2).Info("too verbose")
	g.close()
	l.Info("after")
	l.Error(nil, "error after")
	mu.Lock()
	defer mu.Unlock()
	if len(lines) != 2 || !strings.Contains(lines[0], `"msg"="before" "k"="v"`) || !strings.Contains(lines[0], "broadcaster") {
		t.Fatalf("lines: %q, want the two before close, with the name and values", lines)
	}
}
