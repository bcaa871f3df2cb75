package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
)

// APIErrors makes percent of the controller's writes fail before they reach the cluster, each
// with one of the errors an API server answers under load, drawn from the seed: 409 Conflict,
// 429 Too Many Requests (Retry-After 1 s), 500 Internal Error, 504 Timeout.
func APIErrors(percent int) Fault { return apiErrorsFault{percent: percent} }

type apiErrorsFault struct{ percent int }

func (f apiErrorsFault) String() string { return fmt.Sprintf("api-errors-%d%%", f.percent) }
func (f apiErrorsFault) plan(rng *rand.Rand, _ *Result) plan {
	return &apiErrorsPlan{percent: f.percent, rng: rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))}
}

type apiErrorsPlan struct {
	base
	percent int
	mu      sync.Mutex
	rng     *rand.Rand
}

func (p *apiErrorsPlan) String() string { return fmt.Sprintf("%d%% of the writes fail", p.percent) }

var writeVerbs = map[string]bool{"create": true, "update": true, "patch": true, "delete": true}

func (p *apiErrorsPlan) install(w *world, pr *proc) {
	pr.conn.Clientset().PrependReactor("*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if !writeVerbs[a.GetVerb()] {
			return false, nil, nil
		}
		p.mu.Lock()
		fail, kind := p.rng.IntN(100) < p.percent, p.rng.IntN(4)
		p.mu.Unlock()
		if !fail {
			return false, nil, nil
		}
		p.hit.Store(true)
		gr := a.GetResource().GroupResource()
		name := ""
		if n, ok := a.(interface{ GetName() string }); ok {
			name = n.GetName()
		}
		injected := errors.New("sim: injected")
		var err error
		switch kind {
		case 0:
			err = apierrors.NewConflict(gr, name, injected)
		case 1:
			err = apierrors.NewTooManyRequests("sim: injected", 1)
		case 2:
			err = apierrors.NewInternalError(injected)
		default:
			err = apierrors.NewServerTimeout(gr, a.GetVerb(), 1)
		}
		return true, nil, err
	})
}
