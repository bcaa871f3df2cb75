// Package sim runs a controller in a simulated world, deterministically, under seeded faults,
// and checks what it did: a robustness checker users run on their own controllers with
// go test.
//
// A Scenario is the controller (Start builds one process of it), what users do (Workload) and
// what must hold at the end (Invariants). Check runs it once without faults, the reference,
// and then under each Fault for Seeds() seeds, each run in a testing/synctest bubble of its
// own: the fake cluster (package fakecluster), the informers and the controllers run on
// virtual time, so a ten-minute retry chain takes milliseconds and a run's trace depends only
// on the scenario, the seed and the fault. The faults are the ones the research tools that
// study controllers (Sieve, Acto) found bugs with:
//
//   - Crash: the process crashes right after its k-th write and restarts with an empty cache
//     (intermediate states);
//   - StaleRestart: it restarts onto a cache that reads the world as it was some writes ago, for
//     a while (stale states, Sieve's time travel);
//   - MergeEvents and Relist: its watch events are held, then merged, or its watches end with
//     410 Gone and its informers list again (unobserved states, tombstones);
//   - APIErrors: its writes fail with Conflict, 429, 500 and 504;
//   - Drift and Edit: another actor deletes one of the objects it created, or sets a field it
//     wrote to another value;
//   - LeaseStall and Partition, with Scenario.Replicas of 2 or more (the replicas elect a leader
//     with a Lease): the leader's Lease requests fail, or it is cut off the API server, and
//     another process takes over on its own cache (failovers).
//
// The oracles: the world becomes quiet within the scenario's Deadline after every step (it
// converges); the invariants hold; the end state equals the reference's once normalised (UIDs,
// resourceVersions, timestamps and generated name suffixes masked), and no object was created
// or deleted more often than in the reference (Sieve's differential oracle); with
// Scenario.NoActionOnStaleCache, no write while the process's cache lags. A failing run
// prints its trace (every write and every fault, with its virtual time) and the go test
// command that replays it; CTRLKIT_SIM_SEEDS sets how many seeds each fault tries.
//
// The trace of a run is reproducible when every controller runs one worker
// (controller.Options.Workers: 1): with more, the order of concurrent reconciles is the Go
// scheduler's. With several replicas, which candidate wins an open election (after a Crash
// of the leader) is client-go's election jitter's pick, which the simulation does not seed.
package sim
