package corpus

import (
	"context"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/ctrlkit/ctrlkit/client"
	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/expectations"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
	"github.com/ctrlkit/ctrlkit/testkit/sim"
)

const (
	mergeHold = 30 * time.Second
	ownerUID  = "example.com/owner-uid"
)

// deleteHandlerCleanup: a Database keeps a backup ConfigMap in another namespace, made once
// (create if missing), and deleted by the Databases informer's delete handler. A Database
// deleted and created again under the same name while the controller's events were held
// reaches it as one update: the delete handler never runs, and the new Database keeps the old
// one's backup (Orange-OpenSource/casskop#342, rabbitmq/cluster-operator#758: state that
// changed and changed back unseen). The fix is level-based: the reconcile compares the backup's
// owner UID with the Database's and replaces a backup of another Database.
func deleteHandlerCleanup() Bug {
	return Bug{
		Name: "delete-handler-cleanup", Origin: "Orange-OpenSource/casskop#342, rabbitmq/cluster-operator#758", Pattern: "unobserved state",
		Fault: sim.MergeEvents(mergeHold),
		Scenario: func(fixed bool) sim.Scenario {
			return sim.Scenario{
				Resources: []fakecluster.Resource{dbResource},
				Start: func(p *sim.Process) error {
					dbs, err := informer.ForResource[*unstructured.Unstructured](p.Factory, dbGVR)
					if err != nil {
						return err
					}
					backups := p.Client.CoreV1().ConfigMaps(backupNamespace)
					c, err := controller.New("backups", controller.ReconcilerFunc[controller.Key](func(ctx context.Context, key controller.Key) (controller.Result, error) {
						db, err := cachedDB(dbs, key)
						if db == nil || err != nil {
							return controller.Result{}, err
						}
						name := db.GetNamespace() + "." + db.GetName()
						if fixed {
							old, err := backups.Get(ctx, name, metav1.GetOptions{})
							switch {
							case apierrors.IsNotFound(err):
							case err != nil:
								return controller.Result{}, err
							case old.Annotations[ownerUID] != string(db.GetUID()):
								err := backups.Delete(ctx, name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(old.UID))})
								if err := client.IgnoreNotFound(err); err != nil {
									return controller.Result{}, err
								}
							}
						}
						_, err = backups.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: backupNamespace,
							Annotations: map[string]string{ownerUID: string(db.GetUID())}}, Data: map[string]string{"value": value(db)}}, metav1.CreateOptions{})
						return controller.Result{}, ignoreExists(err)
					}), oneWorker())
					if err != nil {
						return err
					}
					cleanup := informer.HandlerFuncs[*unstructured.Unstructured]{OnDelete: func(db *unstructured.Unstructured) {
						_ = backups.Delete(context.Background(), db.GetNamespace()+"."+db.GetName(), metav1.DeleteOptions{})
					}}
					if err := controller.Watch(c, dbs, controller.EnqueueObject, controller.WithObserver[*unstructured.Unstructured](cleanup)); err != nil {
						return err
					}
					p.Run(c)
					return nil
				},
				Workload: []sim.Step{create("a", 1, "old"), {Name: "delete database a and create it again", Do: func(ctx context.Context, u *sim.User) error {
					if err := remove("a").Do(ctx, u); err != nil {
						return err
					}
					return create("a", 1, "new").Do(ctx, u)
				}}},
			}
		},
	}
}

// podExpectations counts, per Database, the Pod creations its controller made and has not
// seen in its cache yet, as kube-controller-manager's ReplicaSet controller does, so that it
// does not create the same Pods again while its cache lags its own writes.
type podExpectations interface {
	expect(key string, n int)
	observed(key string)
	satisfied(key string) bool // may act: every creation seen (or, with an expiry, expired)
}

// handRolled is expectations written by hand, without an expiry: the bug.
type handRolled struct {
	mu      sync.Mutex
	pending map[string]int
}

func (e *handRolled) expect(key string, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.pending[key] += n
}

func (e *handRolled) observed(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.pending[key] > 0 {
		e.pending[key]--
	}
}

func (e *handRolled) satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.pending[key] == 0
}

// expiring is ctrlkit's expectations package, kube-controller-manager's, whose records expire
// after its TTL (five minutes): the fix.
type expiring struct {
	e *expectations.Expectations[string]
}

func (x expiring) expect(key string, n int)  { x.e.ExpectCreations(key, n) }
func (x expiring) observed(key string)       { x.e.CreationObserved(key) }
func (x expiring) satisfied(key string) bool { return x.e.Satisfied(key) }

// expectationsWithoutExpiry: a ReplicaSet-like controller waits, after creating Pods, until
// its cache shows each one (expectations). A Pod created and deleted again (an eviction) while
// the controller's events were held never shows: without an expiry the expectation is never
// met and the Database stays a replica short for ever (yugabyte/yugabyte-operator#39,
// pravega/zookeeper-operator#453: a state the controller waited for and never saw).
// kube-controller-manager's expectations expire after five minutes: the fix uses ctrlkit's
// expectations package, which does the same.
func expectationsWithoutExpiry() Bug {
	return Bug{
		Name: "expectations-without-expiry", Origin: "yugabyte/yugabyte-operator#39, pravega/zookeeper-operator#453", Pattern: "unobserved state",
		Fault: sim.MergeEvents(mergeHold),
		Scenario: func(fixed bool) sim.Scenario {
			return sim.Scenario{
				Resources: []fakecluster.Resource{dbResource},
				Start: func(p *sim.Process) error {
					var exp podExpectations = &handRolled{pending: map[string]int{}}
					lib := expectations.New[string]()
					if fixed {
						exp = expiring{lib}
					}
					dbs, err := informer.ForResource[*unstructured.Unstructured](p.Factory, dbGVR)
					if err != nil {
						return err
					}
					pods, err := informer.For[*corev1.Pod](p.Factory)
					if err != nil {
						return err
					}
					c, err := controller.New("replicas", controller.ReconcilerFunc[controller.Key](func(ctx context.Context, key controller.Key) (controller.Result, error) {
						db, err := cachedDB(dbs, key)
						if db == nil || err != nil {
							return controller.Result{}, err
						}
						if !exp.satisfied(key.String()) {
							if fixed {
								return controller.Result{RequeueAfter: time.Minute}, nil
							}
							return controller.Result{}, nil // the Pods' events will bring the key back
						}
						have, err := pods.Lister().Namespace(db.GetNamespace()).List(labels.SelectorFromSet(labels.Set{dbLabel: db.GetName()}))
						if err != nil {
							return controller.Result{}, err
						}
						have = slices.DeleteFunc(have, func(p *corev1.Pod) bool { return p.DeletionTimestamp != nil })
						missing := int(replicas(db)) - len(have)
						if missing <= 0 {
							return deleteSurplus(ctx, p, db, have)
						}
						exp.expect(key.String(), missing)
						for range missing {
							if _, err := p.Client.CoreV1().Pods(db.GetNamespace()).Create(ctx, pod(db), metav1.CreateOptions{}); err != nil {
								exp.observed(key.String()) // this one will not show
								return controller.Result{}, err
							}
						}
						if fixed {
							// The fix comes back when the expectations expire, in case no event does.
							return controller.Result{RequeueAfter: lib.TTL()}, nil
						}
						return controller.Result{}, nil
					}), oneWorker())
					if err != nil {
						return err
					}
					if err := controller.Watch(c, dbs, controller.EnqueueObject); err != nil {
						return err
					}
					seen := informer.HandlerFuncs[*corev1.Pod]{OnAdd: func(pod *corev1.Pod, _ bool) {
						if ref := metav1.GetControllerOf(pod); ref != nil {
							exp.observed(controller.Key{Namespace: pod.Namespace, Name: ref.Name}.String())
						}
					}}
					if err := controller.Watch(c, pods, controller.EnqueueControllerOf[*corev1.Pod](dbs), controller.WithObserver[*corev1.Pod](seen)); err != nil {
						return err
					}
					p.Run(c)
					return nil
				},
				Workload: []sim.Step{create("web", 2, ""), {Name: "scale web to 3; the new Pod is evicted at once", Do: func(ctx context.Context, u *sim.User) error {
					if err := scale("web", 3).Do(ctx, u); err != nil {
						return err
					}
					time.Sleep(100 * time.Millisecond) // virtual: the controller creates the Pod
					list, err := u.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
					if err != nil || len(list.Items) == 0 {
						return err
					}
					newest := slices.MaxFunc(list.Items, func(a, b corev1.Pod) int {
						if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
							return c
						}
						return cmpName(a.ResourceVersion, b.ResourceVersion)
					})
					return u.Client.CoreV1().Pods(ns).Delete(ctx, newest.Name, metav1.DeleteOptions{})
				}}},
			}
		},
	}
}
