// Package leasetiming holds the durations of a Lease that is held by renewing it — leader
// election's Lease and sharding's member and sharder Leases — with their defaults and rules,
// so that leaderelection and sharding apply the same ones. Each package keeps its own exported
// fields and errors: it copies its fields into a Timings and wraps each Violation in its own
// error type.
package leasetiming

import (
	"fmt"
	"time"

	"k8s.io/client-go/tools/leaderelection"
)

// Defaults are kube-controller-manager's (component-base's LeaderElectionConfiguration).
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// JitterFactor is client-go's: a candidate waits between RetryPeriod and
// (1+JitterFactor)×RetryPeriod between attempts.
const JitterFactor = leaderelection.JitterFactor

// Timings are the three durations of a renewed Lease.
type Timings struct {
	// LeaseDuration is how long others wait, from the last renewal they observed, before
	// they take the holder for gone.
	LeaseDuration time.Duration
	// RenewDeadline is how long the holder keeps retrying a failed renewal before it gives
	// the Lease up.
	RenewDeadline time.Duration
	// RetryPeriod is the pause between attempts to acquire or renew.
	RetryPeriod time.Duration
}

// WithDefaults returns t with every zero duration set to its default.
func (t Timings) WithDefaults() Timings {
	if t.LeaseDuration == 0 {
		t.LeaseDuration = DefaultLeaseDuration
	}
	if t.RenewDeadline == 0 {
		t.RenewDeadline = DefaultRenewDeadline
	}
	if t.RetryPeriod == 0 {
		t.RetryPeriod = DefaultRetryPeriod
	}
	return t
}

// Violation is one broken rule: Field is the culprit in lower camel case ("leaseDuration",
// "renewDeadline", "retryPeriod"; a rule between two fields is reported on the first), Rule
// states it with the values that broke it.
type Violation struct {
	Field string
	Rule  string
}

// Validate checks t exactly as it is (no defaults applied) and returns every broken rule:
// client-go's first (leaseDuration > renewDeadline, renewDeadline > JitterFactor ×
// retryPeriod, then each duration > 0), then ctrlkit's (the stored leaseDuration >
// renewDeadline + retryPeriod).
func (t Timings) Validate() []Violation {
	var vs []Violation
	add := func(field, format string, args ...any) {
		vs = append(vs, Violation{Field: field, Rule: fmt.Sprintf(format, args...)})
	}
	if t.LeaseDuration <= t.RenewDeadline {
		add("leaseDuration", "leaseDuration %v must be greater than renewDeadline %v", t.LeaseDuration, t.RenewDeadline)
	}
	if jittered := time.Duration(JitterFactor * float64(t.RetryPeriod)); t.RenewDeadline <= jittered {
		add("renewDeadline", "renewDeadline %v must be greater than JitterFactor %v × retryPeriod %v = %v",
			t.RenewDeadline, JitterFactor, t.RetryPeriod, jittered)
	}
	if t.LeaseDuration <= 0 {
		add("leaseDuration", "leaseDuration %v must be greater than zero", t.LeaseDuration)
	}
	if t.RenewDeadline <= 0 {
		add("renewDeadline", "renewDeadline %v must be greater than zero", t.RenewDeadline)
	}
	if t.RetryPeriod <= 0 {
		add("retryPeriod", "retryPeriod %v must be greater than zero", t.RetryPeriod)
	}
	// ctrlkit's rule on top of client-go's. A holder that fails to renew keeps the Lease for
	// up to RetryPeriod+RenewDeadline after its last renewal, while others take over
	// LeaseDuration after it — as stored in the Lease, in whole seconds. Unless the stored
	// duration exceeds RetryPeriod+RenewDeadline, another can start while the old holder
	// still holds on (client-go accepts 15s/14s/2s, for example). Checked only once the plain
	// ordering holds; otherwise it would repeat the first rule.
	if stored := t.LeaseDuration.Truncate(time.Second); t.LeaseDuration > t.RenewDeadline && stored <= t.RenewDeadline+t.RetryPeriod {
		add("leaseDuration", "leaseDuration %v, stored in whole seconds as %v, must be greater than renewDeadline %v + retryPeriod %v = %v",
			t.LeaseDuration, stored, t.RenewDeadline, t.RetryPeriod, t.RenewDeadline+t.RetryPeriod)
	}
	return vs
}
