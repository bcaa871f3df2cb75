// Package sharding splits the keys of a controller, and its caches, across
// the replicas of one binary: active-active replicas over Leases, labels
// and optimistic concurrency, with nothing else to deploy. The protocol and
// why it is safe are in docs/design/sharding.md.
//
// # Modes
//
// Every mode has the same ring of members (Member, member.go), one elected
// sharder (Sharder, sharder.go) and, per controller, one Dispatcher
// (dispatcher.go), its admission step; they differ in how an object's
// member is recorded, and each mode's files carry its prefix:
//
//   - label mode (the default; label_*.go): the sharder labels each
//     object for its member, and members' informers select their label;
//     NewDispatcher;
//   - admission-time assignment (admission.go, an option of label mode): a
//     mutating webhook labels new objects as they are created;
//   - server-side mode (Config.Mode ModeServer; slot_*.go): the sharder
//     records hash slots in the members' Leases and the API server filters
//     each member's lists and watches; no object is written;
//     NewSlotDispatcher.
//
// # Label mode
//
//   - A ring of members: each replica joins by holding its own Lease,
//     <ring>.<identity> in the ring's namespace, labelled
//     lease.shard.ctrlkit.dev/ring=<ring> (Member). A member that cannot
//     renew within RenewDeadline stops its work, as a leader that loses its
//     Lease does.
//   - One sharder: every member runs a Sharder, and the holder of the Lease
//     <ring>-sharder (package leaderelection; the holder is the identity and
//     a per-process suffix, as a member Lease's, so two processes of one
//     identity never both lead) writes each object's
//     assignment as the label shard.ctrlkit.dev/<ring>=<identity>, chosen by
//     rendezvous hashing over the members whose Leases it has seen renewed
//     within LeaseDuration of its own clock, and stamps it with that
//     member's Lease holder (HolderAnnotation): a process restarted with the
//     same identity reconciles only what is assigned to it afresh. Every
//     write is preconditioned on the resourceVersion it was decided on.
//   - Shard-scoped caches: a member's informers of the sharded resource and
//     its children select its label (informer.WithLabelSelector with
//     Member.Selector), so it lists, watches and caches about 1/N of them.
//   - Safe handover: a key moving from a live member A to B is first
//     drained: the sharder adds drain.shard.ctrlkit.dev/<ring>=true, A's
//     Dispatcher stops dispatching the key, waits for its in-flight
//     Reconcile and acknowledges by removing both labels; only then does
//     the sharder relabel the children and the owner for B, with the
//     children barrier annotation shard.ctrlkit.dev/<ring>-children-rv that
//     B's Dispatcher waits for before B's first Reconcile. A dead member's
//     keys move once its Lease has gone unrenewed for LeaseDuration.
//   - The ring writes through a client of its own (NewRingClient:
//     Config.WriteQPS and WriteBurst, --shard-write-qps, apart from the
//     controllers' client), the sharder with 16 patches in
//     flight and the keys without a live member first, so assigning or
//     moving N objects takes about N / WriteQPS, not N / 20.
//
// # Admission-time assignment
//
//   - Optionally, new objects are assigned as they are created: an Assigner,
//     served by a mutating webhook (webhook.NewShardAssigning;
//     manager.ShardingOptions.AssignAtAdmission), labels each for its member
//     under its own view of the live members, and the sharder then writes only
//     when the membership changes; to the sharder, such an object is one it
//     assigned itself.
//
// # The sharder's caches
//
//   - The sharder caches the metadata of the sharded resource, not of its
//     children (only those without the ring's label, normally none): it
//     reads an owner's children from the API server when the owner changes
//     hands, one paged LIST per child resource and namespace shared by the
//     handovers of one burst. So the sharder's member, too, caches about
//     1/N of the children.
//
// # Server-side mode
//
// A ring in ModeServer (Config.Mode; alpha, it needs the API server's
// ShardedListAndWatch gate) writes no object at all. The hash space of
// object UIDs (or namespaces, Config.HashField) is cut into Slots equal
// slots; the sharder records each live member's slots in the member's Lease
// (SlotsAnnotation), moving as few as it can, and a member's SlotKeeper
// makes the member's informers select exactly those slots
// (informer.ShardSet, ListOptions.ShardSelector) and records what it serves
// (ServingAnnotation) once they have synced. A slot leaves a live member
// before it reaches the next one, as a key is drained in label mode: the
// member stops admitting its keys (its Dispatcher), waits for their
// reconciles, then records it no longer serves it, and only then does the
// sharder give it on. Children follow their owner only when the ring hashes
// namespaces; hashed by UID, each member caches every child.
// ServesShardSelector tells whether the API server filters; a
// manager.Manager falls back to labels, saying so, when it does not.
//
// # With a Manager
//
// A controller opts in on a manager.Manager with a few lines:
// manager.Options.Sharding names the ring (a Config, from the flags of
// Config.AddFlags: --shard-ring, --shard-identity, --shard-namespace and the
// Lease durations), the controller takes the informers of the sharded
// resource and its children from Manager.ShardFactory (every one of them
// selects the member's label) and is added with manager.AddSharded instead
// of Manager.Add; code that creates children copies the owner's label with
// Inherit. The Manager then checks the ring's access, runs the ring on
// every replica, and reports membership on /readyz and the
// ctrlkit_shard_* series on /metrics.
//
// # Without a Manager
//
// Without a Manager, the same parts are wired by hand (see ExampleNewGroup,
// and ExampleNewSlotKeeper for a server-side ring):
// a Dispatcher (NewDispatcher, given to controller.Controller's SetAdmission),
// label-selected informers, and a Group that runs the sharder candidate, and
// the member's informers and controllers while it is a member, as one
// runnable. Bad input is refused before anything starts: Config.Validate
// (ring and identity names, Lease durations; ValidateFlags names the flag),
// NewMember, NewSharder, and CheckAccess for the RBAC the ring needs.
package sharding
