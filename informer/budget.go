package informer

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ctrlkit/ctrlkit/internal/bytesize"
	"github.com/ctrlkit/ctrlkit/internal/object"
)

// BudgetPolicy is what a factory does when its caches hold more than a
// memory budget (Options.MemoryBudget, or ByObject's). Every policy
// logs a warning, naming the largest informers, each time the budget is
// crossed.
type BudgetPolicy int

const (
	// BudgetWarn only logs the warning.
	BudgetWarn BudgetPolicy = iota + 1
	// BudgetFailReadiness also fails CheckMemoryBudget while the caches are
	// over the budget: a Manager's /readyz reports it (check
	// "informer-memory"), so a rollout that outgrows its memory stops.
	BudgetFailReadiness
	// BudgetDegrade also makes the informers marked degradable
	// (ObjectOptions.Degradable; the informer of a ByObject budget is) cache
	// only their objects' metadata, until the process restarts: objects
	// entering the cache from then on (events, relists) keep their
	// apiVersion, kind and metadata, the rest is dropped. Objects cached
	// before shrink as they are updated. With no degradable informer it only
	// warns, and says so.
	BudgetDegrade
)

func (p BudgetPolicy) String() string {
	switch p {
	case BudgetWarn:
		return "warn"
	case BudgetFailReadiness:
		return "fail-readiness"
	case BudgetDegrade:
		return "degrade"
	}
	return fmt.Sprintf("BudgetPolicy(%d)", int(p))
}

// defaultBudgetCheckInterval is how often a factory with a memory budget
// compares its caches with it (Options.BudgetCheckInterval).
const defaultBudgetCheckInterval = 10 * time.Second

// BudgetError reports caches over a memory budget whose policy is
// BudgetFailReadiness (errors.As finds it).
type BudgetError struct {
	// Informer names the informer of a ByObject budget; empty for
	// the factory's budget.
	Informer string
	// Budget and Used are in bytes (Used as CacheMemory estimates it).
	Budget, Used int64
}

func (e *BudgetError) Error() string {
	if e.Informer != "" {
		return fmt.Sprintf("the cache of informer %s holds about %s, over its memory budget of %s", e.Informer, bytesize.Format(e.Used), bytesize.Format(e.Budget))
	}
	return fmt.Sprintf("the factory's informer caches hold about %s, over their memory budget of %s", bytesize.Format(e.Used), bytesize.Format(e.Budget))
}

// budget is one memory budget: of the factory (typ nil) or of the typed
// informer of typ.
type budget struct {
	bytes  int64
	policy BudgetPolicy
	typ    reflect.Type
	over   atomic.Bool // as of the last check
}

// budgets is a factory's memory budgets and what they degraded.
type budgets struct {
	list       []*budget
	interval   time.Duration
	degradable map[reflect.Type]bool
	// degraded holds the types whose objects are cached as metadata only;
	// read by the transform.
	degraded atomic.Pointer[map[reflect.Type]bool]
	mu       sync.Mutex // serialises checks
}

// newBudgets validates the configured budgets, reporting and dropping bad
// ones.
func (f *Factory) newBudgets() *budgets {
	b := &budgets{interval: f.cfg.budgetInterval, degradable: map[reflect.Type]bool{}}
	if b.interval <= 0 {
		b.interval = defaultBudgetCheckInterval
	}
	for _, t := range f.cfg.degradable {
		b.degradable[t] = true
	}
	for _, bu := range f.cfg.budgets {
		what := "Options.MemoryBudget"
		if bu.typ != nil {
			what = "ByObject[" + object.TypeName(bu.typ) + "] MemoryBudget"
		}
		switch {
		case f.cfg.noAccounting:
			f.report(fmt.Errorf("informer factory: %s ignored: the factory has DisableAccounting", what))
		case bu.bytes == 0:
			f.report(fmt.Errorf("informer factory: %s: BudgetPolicy %v set without a budget; ignored", what, bu.policy))
		case bu.bytes < 0:
			f.report(fmt.Errorf("informer factory: %s: budget %d is not positive; ignored", what, bu.bytes))
		case bu.policy == 0:
			f.report(fmt.Errorf("informer factory: %s: budget %d set without a BudgetPolicy; ignored", what, bu.bytes))
		case bu.policy < BudgetWarn || bu.policy > BudgetDegrade:
			f.report(fmt.Errorf("informer factory: %s: unknown policy %v; ignored", what, bu.policy))
		default:
			b.list = append(b.list, bu)
			if bu.policy == BudgetDegrade && bu.typ == nil && len(b.degradable) == 0 {
				// Said once here, where the budget is set, and again when it is crossed.
				f.logger.Info("Warning: memory budget policy degrade has no degradable informer: over the budget it only warns; "+
					"mark the informers whose readers need only metadata with informer.ByObject and Degradable", "budgetBytes", bu.bytes)
			}
		}
	}
	if len(b.list) == 0 {
		return nil
	}
	return b
}

// used returns what bu's caches hold, and the informer's name for an
// informer's budget ("" while that informer does not exist). The factory's
// budget is charged mem.Bytes but the sharing table's fixed part (its
// admission filter, allocated with the factory): a budget bounds what grows
// with the caches, and a small one would otherwise be spent before any
// object is cached.
func (f *Factory) used(bu *budget, mem CacheMemory) (int64, string) {
	if bu.typ == nil {
		used := mem.Bytes
		if mem.TableBytes > 0 {
			used -= f.table.FixedBytes()
		}
		return used, ""
	}
	var found *meter
	f.meters.Range(func(_, v any) bool {
		if m := v.(*meter); m.typ == bu.typ {
			found = m
			return false
		}
		return true
	})
	if found == nil {
		return 0, ""
	}
	return found.bytes(), found.resource
}

// CheckMemoryBudget returns a *BudgetError (joined with errors.Join when
// several) for each budget of policy BudgetFailReadiness the caches are over
// now, or nil. A Manager adds it to /readyz.
func (f *Factory) CheckMemoryBudget() error {
	if f.budgets == nil {
		return nil
	}
	mem := f.CacheMemory()
	var errs []error
	for _, bu := range f.budgets.list {
		if bu.policy != BudgetFailReadiness {
			continue
		}
		if used, name := f.used(bu, mem); used > bu.bytes {
			errs = append(errs, &BudgetError{Informer: name, Budget: bu.bytes, Used: used})
		}
	}
	return errors.Join(errs...)
}

// checkBudgets compares the caches with every budget, warns on each
// crossing and degrades on a crossing of a BudgetDegrade budget.
func (f *Factory) checkBudgets() {
	b := f.budgets
	b.mu.Lock()
	defer b.mu.Unlock()
	mem := f.CacheMemory()
	for _, bu := range b.list {
		used, name := f.used(bu, mem)
		over := used > bu.bytes
		if was := bu.over.Swap(over); was == over {
			continue
		}
		what := "factory"
		if bu.typ != nil {
			what = name
		}
		if !over {
			f.logger.Info("Informer caches back within their memory budget", "budget", what, "bytes", used, "budgetBytes", bu.bytes)
			continue
		}
		var largest []string
		for i, inf := range mem.Informers {
			if i == 3 {
				break
			}
			largest = append(largest, fmt.Sprintf("%s (%s, %d objects)", inf.Resource, bytesize.Format(inf.Bytes), inf.Objects))
		}
		f.logger.Info("Warning: informer caches over their memory budget", "budget", what, "bytes", used,
			"budgetBytes", bu.bytes, "policy", bu.policy.String(), "largest", largest)
		if bu.policy == BudgetDegrade {
			f.degrade(bu)
		}
	}
}

// degrade makes the degradable informers bu covers cache metadata only.
func (f *Factory) degrade(bu *budget) {
	b := f.budgets
	next := map[reflect.Type]bool{}
	if cur := b.degraded.Load(); cur != nil {
		for t := range *cur {
			next[t] = true
		}
	}
	covered := 0
	for t := range b.degradable {
		if bu.typ == nil || bu.typ == t {
			if !next[t] {
				f.logger.Info("Warning: informer degraded to metadata only by its memory budget", "type", object.TypeName(t))
			}
			next[t] = true
			covered++
		}
	}
	if covered == 0 {
		f.logger.Info("Warning: memory budget policy degrade found no degradable informer, so nothing was degraded: "+
			"mark the informers whose readers need only metadata with informer.ByObject and Degradable", "policy", bu.policy.String())
	}
	b.degraded.Store(&next)
}

// isDegraded reports whether objects of type t are cached as metadata only.
func (f *Factory) isDegraded(t reflect.Type) bool {
	if f.budgets == nil {
		return false
	}
	d := f.budgets.degraded.Load()
	return d != nil && (*d)[t]
}

// degradeStep keeps only the metadata of the objects of an informer a
// BudgetDegrade budget degraded.
type degradeStep struct{ f *Factory }

func (d degradeStep) enter(_ registryKey, obj any) any {
	if d.f.isDegraded(reflect.TypeOf(obj)) {
		return metadataOnly(obj)
	}
	return obj
}

// runBudgets checks the budgets every interval until stop is closed.
func (f *Factory) runBudgets(stop <-chan struct{}) {
	t := f.clock().NewTicker(f.budgets.interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C():
			f.checkBudgets()
		}
	}
}

// metadataOnly returns a copy of obj holding only its apiVersion, kind and
// metadata; obj itself when it has nothing else or is of an unknown shape.
func metadataOnly(obj any) any {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		out := &unstructured.Unstructured{Object: map[string]any{}}
		for _, k := range []string{"apiVersion", "kind", "metadata"} {
			if v, ok := u.Object[k]; ok {
				out.Object[k] = v
			}
		}
		return out
	}
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return obj
	}
	in := v.Elem()
	tm, om := in.FieldByName("TypeMeta"), in.FieldByName("ObjectMeta")
	if !om.IsValid() || in.NumField() <= 2 {
		return obj
	}
	out := reflect.New(in.Type())
	if tm.IsValid() {
		out.Elem().FieldByName("TypeMeta").Set(tm)
	}
	out.Elem().FieldByName("ObjectMeta").Set(om)
	return out.Interface()
}

// MemoryBudget is one memory budget of a factory and how the caches stand
// against it.
type MemoryBudget struct {
	// Informer names the informer of a ByObject budget (empty
	// for the factory's budget, and until that informer exists).
	Informer string
	Bytes    int64
	Policy   BudgetPolicy
	// Used is what the caches it covers hold now; Over reports Used > Bytes.
	Used int64
	Over bool
}

// MemoryBudgets returns the factory's memory budgets, as configured, with
// what the caches hold now.
func (f *Factory) MemoryBudgets() []MemoryBudget {
	if f.budgets == nil {
		return nil
	}
	mem := f.CacheMemory()
	out := make([]MemoryBudget, 0, len(f.budgets.list))
	for _, bu := range f.budgets.list {
		used, name := f.used(bu, mem)
		out = append(out, MemoryBudget{Informer: name, Bytes: bu.bytes, Policy: bu.policy, Used: used, Over: used > bu.bytes})
	}
	return out
}
