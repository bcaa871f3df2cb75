package delegatedauth

import "time"

// maxCachedDecisions bounds the decision cache, so that a client spraying random tokens
// costs API calls, not memory.
const maxCachedDecisions = 4096

type cachedDecision struct {
	decision
	expires time.Time
}

func (f *Filter) cached(key string) (decision, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.entries[key]
	if !ok {
		return decision{}, false
	}
	if !f.clock.Now().Before(e.expires) {
		delete(f.entries, key)
		return decision{}, false
	}
	return e.decision, true
}

func (f *Filter) store(key string, d decision, ttl time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.clock.Now()
	if len(f.entries) >= maxCachedDecisions {
		for k, e := range f.entries {
			if !now.Before(e.expires) {
				delete(f.entries, k)
			}
		}
		// Still full of live entries: drop one at random (map order), which bounds memory
		// and costs at most one extra review later.
		for k := range f.entries {
			if len(f.entries) < maxCachedDecisions {
				break
			}
			delete(f.entries, k)
		}
	}
	f.entries[key] = cachedDecision{decision: d, expires: now.Add(ttl)}
}
