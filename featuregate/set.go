package featuregate

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// setting is one feature=value pair of a Set call, in input order.
type setting struct {
	f Feature
	v bool
}

// Set parses "A=true,B=false" and stores the values. Spaces around names and values are
// trimmed and empty entries skipped; values are anything strconv.ParseBool accepts. Values
// add to (and replace) earlier ones, and a feature named twice keeps its last value (only
// that one is checked); AllAlpha/AllBeta set every alpha/beta feature not set explicitly,
// whatever the order.
//
// Set is atomic: if any entry is malformed, unknown, locked to another value, PreAlpha at
// the emulated version, or leaves a feature on while one it depends on is off, it returns
// every such error (joined) and changes nothing, and a later Set starts from the unchanged
// state (upstream instead keeps the bad entry and fails every later Set). Setting a GA or
// deprecated feature works and logs a warning.
func (g *Gate) Set(value string) error {
	settings, err := parse(value)
	if err != nil {
		return err
	}
	return g.apply(lastWins(settings))
}

// lastWins keeps the last value of a feature named twice in one Set ("A=false,A=true"),
// as upstream does, so only that value is checked and stored.
func lastWins(settings []setting) []setting {
	last := make(map[Feature]int, len(settings))
	for i, s := range settings {
		last[s.f] = i
	}
	out := settings[:0:0]
	for i, s := range settings {
		if last[s.f] == i {
			out = append(out, s)
		}
	}
	return out
}

// SetFromMap stores the values of m with Set's rules (atomic, all errors reported).
func (g *Gate) SetFromMap(m map[string]bool) error {
	settings := make([]setting, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		settings = append(settings, setting{Feature(k), m[k]})
	}
	return g.apply(settings)
}

// parse splits a --feature-gates value into settings, reporting every malformed entry.
func parse(value string) ([]setting, error) {
	var (
		out  []setting
		errs []error
	)
	for entry := range strings.SplitSeq(value, ",") {
		if strings.TrimSpace(entry) == "" {
			continue
		}
		k, v, found := strings.Cut(entry, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if k == "" {
			errs = append(errs, malformed(entry, "", v, nil))
			continue
		}
		if !found {
			errs = append(errs, malformed(entry, Feature(k), "", nil))
			continue
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, malformed(entry, Feature(k), v, err))
			continue
		}
		out = append(out, setting{Feature(k), b})
	}
	return out, errors.Join(errs...)
}

func (g *Gate) apply(settings []setting) error {
	g.mu.Lock()
	if g.frozen {
		g.mu.Unlock()
		return fmt.Errorf("cannot set feature gates: %w", frozen())
	}
	cur := g.current()
	var errs []error
	for _, s := range settings {
		if err := cur.check(s.f, s.v); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		g.mu.Unlock()
		return errors.Join(errs...)
	}
	explicit := maps.Clone(cur.explicit)
	for _, s := range settings {
		explicit[s.f] = s.v
	}
	cur.explicit = explicit
	next := cur.rebuild()
	if errs := next.dependencyErrors(); len(errs) > 0 {
		g.mu.Unlock()
		return errors.Join(errs...)
	}
	g.snap.Store(next)
	g.mu.Unlock()

	logger := g.log()
	for _, s := range settings {
		switch next.specAt(s.f).PreRelease {
		case GA:
			if !isPseudo(s.f) {
				logger.Info("Warning: setting GA feature gate. It will be removed in a future release.", "featureGate", s.f, "value", s.v)
			}
		case Deprecated:
			logger.Info("Warning: setting deprecated feature gate. It will be removed in a future release.", "featureGate", s.f, "value", s.v)
		}
	}
	logger.V(1).Info("Updated feature gates", "featureGates", next.String())
	return nil
}
