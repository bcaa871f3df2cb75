package manager

import (
	"context"
	"sync"

	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// apiWarnings is the WarningHandler of the clients a Manager builds from a Config (and of
// Flags.Options' Config): the API server's warnings (a deprecated API, an ignored field) are
// logged at klog's warning level, once per message, where client-go's default logs every one
// at info level. controller-runtime sets a handler of its own the same way (KubeAPIWarningLogger,
// deduplicated).
type apiWarnings struct {
	mu   sync.Mutex
	seen map[string]struct{}
}

// maxWarnings bounds the messages remembered for deduplication; past it, warnings are logged
// every time rather than the memory growing.
const maxWarnings = 1000

func (w *apiWarnings) HandleWarningHeaderWithContext(_ context.Context, code int, _, message string) {
	if code != 299 || message == "" { // 299 is the only code a Kubernetes API server sends
		return
	}
	w.mu.Lock()
	_, seen := w.seen[message]
	if !seen && len(w.seen) < maxWarnings {
		w.seen[message] = struct{}{}
	}
	w.mu.Unlock()
	if seen {
		return
	}
	// klog's own warning severity: logr, behind contextual loggers, has none.
	klog.WarningDepth(1, "Warning from the API server: "+message)
}

// withWarningHandler returns cfg, or a copy of it whose clients log the API server's warnings
// with apiWarnings, when it has no handler of its own.
func withWarningHandler(cfg *rest.Config) *rest.Config {
	if cfg.WarningHandler != nil || cfg.WarningHandlerWithContext != nil {
		return cfg
	}
	cfg = rest.CopyConfig(cfg)
	cfg.WarningHandlerWithContext = &apiWarnings{seen: map[string]struct{}{}}
	return cfg
}
