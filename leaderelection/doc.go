// Package leaderelection runs Lease-based leader election the way kube-controller-manager
// does, on client-go's tools/leaderelection engine and its resourcelock.LeaseLock, with
// kube-controller-manager's defaults and flags, callbacks that are easy to use correctly,
// and a health check.
//
// Use it when several replicas of a controller run for availability but only one may act
// at a time. ctrlkit's manager.Manager uses it for controllers that need leader
// election; call it directly for anything else that must run on one replica.
//
// # How it works
//
// Every candidate reads one Lease (coordination.k8s.io/v1) every RetryPeriod. The holder
// renews it; the others are standbys. A standby takes over when the Lease has not changed
// for LeaseDuration, as measured on its own clock from when it saw the last change, or at
// once when the holder released it. Writes carry the Lease's resourceVersion, so of two
// standbys racing for an expired Lease only one wins; the other sees a Conflict. A leader
// that cannot renew for RenewDeadline gives up: OnStartedLeading's ctx is cancelled and
// Run returns ErrLeaseLost.
//
//	cfg := leaderelection.Config{Namespace: "ops", Name: "my-controller", ReleaseOnCancel: true}
//	err := leaderelection.Run(ctx, client, cfg, leaderelection.Callbacks{
//		OnStartedLeading: func(ctx context.Context) { runControllers(ctx) }, // until ctx ends
//	})
//	if errors.Is(err, leaderelection.ErrLeaseLost) {
//		// Lost it while still wanting it: exit, and let the Deployment restart us.
//	}
//
// # Hot standbys
//
// Only what OnStartedLeading starts waits for leadership. Start informers and fill caches
// before or beside Run, on every replica: a standby then has a warm cache when it takes
// over and starts acting within a RetryPeriod instead of listing the world first. The
// Manager does exactly that — caches and controllers that do not need leadership run on
// every replica; the others start in OnStartedLeading and are drained when its ctx ends.
//
// # ReleaseOnCancel
//
// Without it, a leader that shuts down leaves the Lease to expire: its successor starts
// up to LeaseDuration (plus a poll) later. With it, Run empties the Lease as it stops and a
// standby takes over at its next poll. The trade is the guarded work: a released Lease is
// free at once, so nothing the lease protects may still be running. ctrlkit enforces that —
// it cancels OnStartedLeading's ctx and waits for OnStartedLeading to return before it
// writes the release, and if that takes longer than RenewDeadline it does not release at
// all (the Lease then expires as without the option). So OnStartedLeading must return
// promptly once its ctx ends, and must not leave work running after it returned.
//
// # What ctrlkit adds to client-go's engine
//
//   - Validate reports every broken rule at once, each a *ConfigError matching
//     ErrInvalidConfig whose message names the rule and the values, and adds one rule:
//     LeaseDuration, in the whole seconds a Lease stores, must exceed
//     RenewDeadline+RetryPeriod, the longest a failing leader keeps leading after its last
//     renewal. The difference is the margin for API latency and paused processes.
//   - Standbys see every renewal: the engine compares the record's JSON, whose renew time
//     has one-second resolution, so renewals within one second looked identical and a
//     standby could take over up to a second early; ctrlkit adds the resourceVersion to
//     what is compared.
//   - A leader that lost the Lease never releases it over its successor's head, and a
//     release happens only after OnStartedLeading returned (see above).
//   - Run returns only after OnStartedLeading, OnStoppedLeading and OnNewLeader have
//     returned: no goroutine outlives it. Callbacks may be nil. OnStoppedLeading is called
//     only after an OnStartedLeading, and OnNewLeader calls arrive in order from one
//     goroutine.
//   - Elector exposes IsLeader, Leader and Check (a healthz check with client-go's
//     watchdog semantics) for the Manager's /healthz, and ReadyCheck for its /readyz: it
//     fails, naming the Lease, the verb and the API server's answer, while the candidate
//     cannot read or write its Lease (a Role without the rule, a namespace that does not
//     exist), which client-go's engine only logs — such a candidate never leads, yet is
//     healthy. A standby that reads the Lease while another candidate holds it is ready.
//
// Elections use real time: client-go's engine has no clock to inject. Tests of code that
// runs under an Elector should use short durations (1s/600ms/200ms satisfy Validate) and
// wait for callbacks with deadlines.
//
// # Events and the identity
//
// With Config.EventRecorder set (a client-go record.EventRecorder), a candidate records
// client-go's events on the Lease, as kube-controller-manager does: "<identity> became
// leader" when it acquires the Lease and "<identity> stopped leading" when its leadership
// ends, type Normal, reason "LeaderElection" (EventReasonLeaderElection), so kubectl
// describe lease shows the leadership history.
//
// client-go refuses an empty identity; ctrlkit's Config.Identity defaults instead (to
// "<hostname>_<12 random hex digits>"), since a string field cannot tell an identity left
// unset from one set to "". Set Config.RequireIdentity when the identity is set on purpose
// (read from the environment, say): an empty one is then refused, as client-go does. An
// identity of white space only is always refused.
//
// # Flags
//
// Config.AddFlags registers kube-controller-manager's flags: --leader-elect,
// --leader-elect-lease-duration, --leader-elect-renew-deadline, --leader-elect-retry-period,
// --leader-elect-resource-lock (only "leases"), --leader-elect-resource-name and
// --leader-elect-resource-namespace. Config.Enabled holds --leader-elect; this package
// never reads it (the caller decides whether to elect at all).
//
// # The Lease's namespace
//
// Config.Namespace defaults to the namespace of the Pod the process runs in (the
// ServiceAccount's namespace file, as controller-runtime reads it), else DefaultNamespace,
// "ctrlkit-system" — not kube-controller-manager's "kube-system": a controller's Role for its
// Lease lives in its own namespace, as in every manifest ctrlkit ships, and a copy run from a
// laptop then contends with the deployed one. The sharding package's Leases default the same
// way (DefaultLeaseNamespace).
package leaderelection
