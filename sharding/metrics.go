package sharding

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the collectors of every ring reporting into one registry.
// Build one per registry with NewMetrics and give it to the Sharders and
// Dispatchers of that process (SharderOptions.Metrics, DispatcherOptions.Metrics):
//
//	ctrlkit_shard_members{ring}                          gauge, live members the sharder sees
//	ctrlkit_shard_keys_owned{ring,member}                gauge, keys in the member's cache
//	ctrlkit_shard_handovers_total{ring}                  counter, keys moved from a live member (drained)
//	ctrlkit_shard_handover_duration_seconds{ring}        histogram, drain label written -> new owner labelled
//	ctrlkit_shard_drains_pending{ring}                   gauge, drains written and not yet acknowledged
//	ctrlkit_shard_reassignments_total{ring,reason}       counter, labels written: reason is new, dead or drained
//	ctrlkit_shard_barrier_timeouts_total{ring,member}    counter, children barriers given up after their TTL
//	ctrlkit_shard_mode{ring,mode}                        gauge, 1 for the mode the ring runs in (labels, server)
//	ctrlkit_shard_slots{ring,member}                     gauge, server-side slots the member serves
//
// A nil *Metrics records nothing.
type Metrics struct {
	members          *prometheus.GaugeVec
	keysOwned        *prometheus.GaugeVec
	handovers        *prometheus.CounterVec
	handoverDuration *prometheus.HistogramVec
	drainsPending    *prometheus.GaugeVec
	reassignments    *prometheus.CounterVec
	barrierTimeouts  *prometheus.CounterVec
	mode             *prometheus.GaugeVec
	slots            *prometheus.GaugeVec
}

// NewMetrics registers the sharding collectors on reg. Collectors already
// registered there by an earlier NewMetrics are reused, so building two
// Metrics on one registry is harmless.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	if reg == nil {
		return nil, &ConfigError{Field: "Registerer", Rule: "registerer must not be nil"}
	}
	m := &Metrics{
		members: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ctrlkit_shard_members", Help: "Live members of the ring, as its sharder sees them.",
		}, []string{"ring"}),
		keysOwned: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ctrlkit_shard_keys_owned", Help: "Sharded objects assigned to this member and in its cache.",
		}, []string{"ring", "member"}),
		handovers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ctrlkit_shard_handovers_total", Help: "Keys moved from a live member to another after a drain.",
		}, []string{"ring"}),
		handoverDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ctrlkit_shard_handover_duration_seconds",
			Help:    "Time from the drain label written to the new owner's label written.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 14),
		}, []string{"ring"}),
		drainsPending: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ctrlkit_shard_drains_pending", Help: "Drains written by the sharder and not yet acknowledged.",
		}, []string{"ring"}),
		reassignments: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ctrlkit_shard_reassignments_total", Help: "Assignment labels written, by reason (new, dead, drained).",
		}, []string{"ring", "reason"}),
		barrierTimeouts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ctrlkit_shard_barrier_timeouts_total", Help: "Children barriers given up after their time-out.",
		}, []string{"ring", "member"}),
		mode: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ctrlkit_shard_mode", Help: "1 for the mode the ring runs in: labels, or server (server-side sharded list and watch).",
		}, []string{"ring", "mode"}),
		slots: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ctrlkit_shard_slots", Help: "Slots of the hash space this member serves (server-side mode).",
		}, []string{"ring", "member"}),
	}
	var err error
	m.members = register(reg, m.members, &err)
	m.keysOwned = register(reg, m.keysOwned, &err)
	m.handovers = register(reg, m.handovers, &err)
	m.handoverDuration = register(reg, m.handoverDuration, &err)
	m.drainsPending = register(reg, m.drainsPending, &err)
	m.reassignments = register(reg, m.reassignments, &err)
	m.barrierTimeouts = register(reg, m.barrierTimeouts, &err)
	m.mode = register(reg, m.mode, &err)
	m.slots = register(reg, m.slots, &err)
	if err != nil {
		return nil, fmt.Errorf("sharding metrics: %w", err)
	}
	return m, nil
}

// register registers c, or returns the collector of the same description
// already registered.
func register[C prometheus.Collector](reg prometheus.Registerer, c C, errp *error) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		if *errp == nil {
			*errp = err
		}
	}
	return c
}

func (m *Metrics) setMembers(ring string, n int) {
	if m != nil {
		m.members.WithLabelValues(ring).Set(float64(n))
	}
}

func (m *Metrics) ownedDelta(ring, member string, d float64) {
	if m != nil {
		m.keysOwned.WithLabelValues(ring, member).Add(d)
	}
}

func (m *Metrics) handover(ring string, seconds float64) {
	if m != nil {
		m.handovers.WithLabelValues(ring).Inc()
		m.handoverDuration.WithLabelValues(ring).Observe(seconds)
	}
}

func (m *Metrics) setDrainsPending(ring string, n int) {
	if m != nil {
		m.drainsPending.WithLabelValues(ring).Set(float64(n))
	}
}

func (m *Metrics) reassigned(ring, reason string) {
	if m != nil {
		m.reassignments.WithLabelValues(ring, reason).Inc()
	}
}

func (m *Metrics) barrierTimedOut(ring, member string) {
	if m != nil {
		m.barrierTimeouts.WithLabelValues(ring, member).Inc()
	}
}

// setMode records the mode ring runs in (1 for it, 0 for the other).
func (m *Metrics) setMode(ring string, mode Mode) {
	if m != nil {
		for _, each := range []Mode{ModeLabels, ModeServer} {
			v := 0.0
			if each == mode {
				v = 1
			}
			m.mode.WithLabelValues(ring, string(each)).Set(v)
		}
	}
}

func (m *Metrics) setSlots(ring, member string, n int) {
	if m != nil {
		m.slots.WithLabelValues(ring, member).Set(float64(n))
	}
}
