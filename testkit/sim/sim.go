package sim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/manager"
	"github.com/ctrlkit/ctrlkit/testkit"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

// Scenario is a controller and what its users do: the world a simulation runs, with and
// without faults.
type Scenario struct {
	// Objects, Resources and CRDs seed the fake cluster, as testkit.FakeOptions's do.
	Objects   []runtime.Object
	Resources []fakecluster.Resource
	CRDs      [][]byte

	// Start builds one process of the controller: its controllers on the process's clients and
	// informer factory, handed to Process.Run. It is called when the simulation starts and
	// again for each restart, with a fresh Process: new connections, new informers, an empty
	// cache, as a restarted Pod has.
	Start func(p *Process) error

	// Workload is what users do, in order. Each step runs once the world is quiet after the
	// previous one, through a connection of its own that faults never touch.
	Workload []Step

	// Replicas is how many processes run at once, each its own Start, as a Deployment's
	// replicas do. With more than one they elect a leader with a Lease (ctrlkit's
	// leaderelection, its default timings) and only the leader's controllers run; a standby's
	// informers still fill, and it takes over when the leader crashes or loses the Lease (see
	// LeaseStall and Partition). A process that runs a Manager (Process.RunManager) elects,
	// or shards, as the Manager's options say instead. 0 or 1: one process, no election.
	Replicas int

	// GarbageCollector runs kube-controller-manager's garbage collector in the world: objects
	// whose owners are all gone are deleted, and deletions with the foregroundDeletion or
	// orphan finalizer are finished. Off by default, as in the fake cluster and under
	// testkit.NewAPIServer; turn it on for a controller that leaves owned objects to it (a
	// ConfigMap owned by a deleted Deployment), or a run where the controller missed an owner's
	// deletion ends unlike the reference. Its writes are the world's, named in the trace.
	GarbageCollector bool

	// NoActionOnStaleCache makes a write a process makes while its cache lags (after a
	// StaleRestart, until it caught up) a problem, whatever its outcome: the oracle for a
	// controller that gates its work on a fresh cache. Off by default: a controller that
	// checks live before it acts (a quorum read, a conditional delete) rightly writes then.
	NoActionOnStaleCache bool
	// StaleBound, with NoActionOnStaleCache, makes a write a problem only once the process's
	// cache has missed a write (anyone's, its own included) for longer than StaleBound: the
	// oracle for a controller that bounds how stale a view it acts on
	// (controller.Options.Freshness.MaxLag) rather than never acting while its connection lags.
	// A cache that lags behind a snapshot of the world but has missed no write of the resources
	// that lag is current, and acting on it is no problem. 0: any write while the cache lags.
	StaleBound time.Duration

	// Invariants must hold once the world is quiet after the workload.
	Invariants []Invariant

	// Deadline bounds, in virtual time, how long the world may take to become quiet after each
	// step: a controller that has not converged by then fails the run. After the workload the
	// world runs for another Deadline before the end state is read, so that work due later (a
	// RequeueAfter, an expiry) is done. Default: DefaultDeadline.
	Deadline time.Duration
}

// DefaultDeadline is Scenario.Deadline's default: ten minutes of virtual time, past a
// controller's longest default retry backoff chain.
const DefaultDeadline = 10 * time.Minute

// Step is one thing users do: create a resource, scale it, delete it.
type Step struct {
	Name string
	Do   func(ctx context.Context, u *User) error
}

// User is the workload's and the invariants' access to the cluster, through a connection no
// fault touches.
type User struct {
	Client   kubernetes.Interface
	Dynamic  dynamic.Interface
	Metadata metadata.Interface
}

// Invariant is a property of the world once it is quiet: the error says what does not hold.
type Invariant struct {
	Name  string
	Check func(ctx context.Context, u *User) error
}

// Process is one run of the controller (see Scenario.Start): its own connection to the cluster
// and its own informer factory. Everything it runs stops when it crashes or the simulation ends.
type Process struct {
	// Client, Dynamic and Metadata reach the cluster through the process's connection, which
	// the faults act on.
	Client   kubernetes.Interface
	Dynamic  dynamic.Interface
	Metadata metadata.Interface
	// Factory is the process's informer factory over Client, Dynamic and Metadata, started once
	// Start returned.
	Factory *informer.Factory
	// Incarnation counts the processes started in the run: 1 for the first.
	Incarnation int
	// Replica is the process's replica slot, from 0 (see Scenario.Replicas); a restarted
	// process keeps its slot.
	Replica int

	controllers []testkit.Controller
	mgr         *manager.Manager
}

// Run hands the controllers the process runs; the simulation starts them once Start returned,
// and watches them for quiet.
func (p *Process) Run(cs ...testkit.Controller) { p.controllers = append(p.controllers, cs...) }

// RunManager has the simulation start m (its Start) instead of running the controllers
// itself: m runs what was added to it, with its leader election (Options.LeaderElection) or
// its sharding, as the process's main would. The controllers handed to Run are still the ones
// watched for quiet, while m leads (or always, without an election). Build m on the process's
// clients and Factory, with no HTTP address (the default): a bubble has no network.
func (p *Process) RunManager(m *manager.Manager) { p.mgr = m }

// Result is what one simulated run saw.
type Result struct {
	// Seed and Faults are what the run was given.
	Seed   uint64
	Faults []string
	// Trace is every successful write to the cluster, by the processes and the users, and each
	// fault as it struck, in order, with the virtual time since the start.
	Trace []string
	// Problems are what the oracles found: no convergence, a broken invariant, an end state or
	// creates and deletes unlike the run without faults. Empty: the run passed.
	Problems []string

	end     map[string]string // normalised end state, by object
	changes map[string]counts // creates and deletes by the processes, by object
	writes  int               // successful writes by the processes
	world   int               // successful writes in all
	touched map[string]bool   // objects a fault wrote (Drift), exempt from the write counts
}

// Seeds is how many seeds Check tries per fault: CTRLKIT_SIM_SEEDS when set, else
// DefaultSeeds.
func Seeds() int {
	if n, err := strconv.Atoi(os.Getenv("CTRLKIT_SIM_SEEDS")); err == nil && n > 0 {
		return n
	}
	return DefaultSeeds
}

// DefaultSeeds is how many seeds Check tries per fault unless CTRLKIT_SIM_SEEDS says otherwise:
// enough to run in a package's tests; run more on demand.
const DefaultSeeds = 20

// Check runs s once without faults (the reference), then under each fault for Seeds() seeds,
// each in a subtest named after the fault and the seed (so that `go test -run` with that name
// replays it) and in a testing/synctest bubble of its own, and fails each run whose oracles
// found a problem, printing its trace and the command that replays it.
func Check(t *testing.T, s Scenario, faults ...Fault) {
	t.Helper()
	ref := reference(t, s)
	n := Seeds()
	for _, f := range faults {
		t.Run(f.String(), func(t *testing.T) {
			for seed := uint64(1); seed <= uint64(n); seed++ {
				t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
					if r := runAgainst(t, s, seed, []Fault{f}, ref); len(r.Problems) > 0 {
						t.Errorf("sim: %s, seed %d:\n%s\ntrace:\n%s\nreplay: go test -run '^%s$' .", f, seed,
							strings.Join(r.Problems, "\n"), strings.Join(r.Trace, "\n"), replayPattern(t.Name()))
					}
				})
			}
		})
	}
}

// Explore runs s under f for seeds 1 to n, stopping at the first run whose oracles found a
// problem, and returns it (nil when none did): a schedule explorer that does not fail the test,
// for counting what a fault finds.
func Explore(t *testing.T, s Scenario, f Fault, n int) *Result {
	t.Helper()
	ref := reference(t, s)
	for seed := uint64(1); seed <= uint64(n); seed++ {
		if r := runAgainst(t, s, seed, []Fault{f}, ref); len(r.Problems) > 0 {
			return r
		}
	}
	return nil
}

// Run runs s once with seed and faults, and compares it with the run without faults: its
// Problems are what every oracle found. The trace of a run depends only on the scenario, the
// seed and the faults when each controller runs one worker.
func Run(t *testing.T, s Scenario, seed uint64, faults ...Fault) *Result {
	t.Helper()
	return runAgainst(t, s, seed, faults, reference(t, s))
}

// reference is the run of s without faults, failing t when it does not pass its own oracles.
func reference(t *testing.T, s Scenario) *Result {
	t.Helper()
	ref := runAgainst(t, s, 0, nil, nil)
	if len(ref.Problems) > 0 {
		t.Fatalf("sim: the run without faults fails:\n%s\ntrace:\n%s", strings.Join(ref.Problems, "\n"), strings.Join(ref.Trace, "\n"))
	}
	return ref
}

// runAgainst runs s in a bubble of its own and, given a reference, compares with it.
func runAgainst(t *testing.T, s Scenario, seed uint64, faults []Fault, ref *Result) *Result {
	t.Helper()
	bubbleSafeErrorHandlers.Do(func() {
		// apimachinery's HandleError rate limit sleeps minPeriod minus the time since the last
		// error it saw, first the process's start: read on the real clock, compared with a
		// bubble's (which starts in 2000), that is decades, and the first error a reflector
		// reports in a bubble (a crashed process's failed list) jumped the run's virtual time
		// past every deadline. Errors are logged with the context's logger instead, as
		// HandleError's first handler does, without the rate limit; once, for the whole test
		// binary, before any bubble runs.
		utilruntime.ErrorHandlers = []utilruntime.ErrorHandler{func(ctx context.Context, err error, msg string, kv ...any) {
			klog.FromContext(ctx).Error(err, msg, kv...)
		}}
	})
	var r *Result
	var err error
	synctest.Test(t, func(t *testing.T) {
		r, err = run(t, s, seed, faults, ref)
	})
	if err != nil {
		t.Fatalf("sim: %v", err)
	}
	if ref != nil {
		r.Problems = append(r.Problems, diffEnd(ref.end, r.end)...)
		r.Problems = append(r.Problems, diffChanges(ref.changes, r.changes, r.touched)...)
	}
	return r
}

// replayPattern is the -run pattern that selects exactly the subtest named name.
func replayPattern(name string) string {
	return strings.Join(strings.Split(name, "/"), "$/^")
}

// bubbleSafeErrorHandlers replaces apimachinery's error handlers once (see runAgainst).
var bubbleSafeErrorHandlers sync.Once

// ErrScenario is matched by the error Run fails the test with for a scenario it cannot run (no
// Start, a step or Start that fails).
var ErrScenario = errors.New("invalid scenario")
