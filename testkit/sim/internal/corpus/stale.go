package corpus

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/ctrlkit/ctrlkit/client"
	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
	"github.com/ctrlkit/ctrlkit/testkit/sim"
)

const (
	finalizer = "example.com/cleanup"
	dbLabel   = "example.com/database"
	staleHold = 30 * time.Second
)

// dbController wires a Database controller: reconcile over the Databases, re-run for the
// Databases' children of type C (through their controller reference).
func dbController[C informer.Object](p *sim.Process, name string, reconcile func(ctx context.Context, dbs informer.Informer[*unstructured.Unstructured], children informer.Informer[C], key controller.Key) (controller.Result, error)) error {
	dbs, err := informer.ForResource[*unstructured.Unstructured](p.Factory, dbGVR)
	if err != nil {
		return err
	}
	children, err := informer.For[C](p.Factory)
	if err != nil {
		return err
	}
	c, err := controller.New(name, controller.ReconcilerFunc[controller.Key](func(ctx context.Context, key controller.Key) (controller.Result, error) {
		return reconcile(ctx, dbs, children, key)
	}), oneWorker())
	if err != nil {
		return err
	}
	if err := controller.Watch(c, dbs, controller.EnqueueObject); err != nil {
		return err
	}
	if err := controller.Owns(c, children, dbs); err != nil {
		return err
	}
	p.Run(c)
	return nil
}

// cachedDB returns the Database of key from the cache, nil when there is none.
func cachedDB(dbs informer.Informer[*unstructured.Unstructured], key controller.Key) (*unstructured.Unstructured, error) {
	db, err := dbs.Lister().Get(key.Namespace, key.Name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return db, err
}

// addFinalizer adds the cleanup finalizer to db; true when it wrote.
func addFinalizer(ctx context.Context, p *sim.Process, db *unstructured.Unstructured) (bool, error) {
	if slices.Contains(db.GetFinalizers(), finalizer) {
		return false, nil
	}
	db = db.DeepCopy()
	db.SetFinalizers(append(db.GetFinalizers(), finalizer))
	_, err := p.Dynamic.Resource(dbGVR).Namespace(db.GetNamespace()).Update(ctx, db, metav1.UpdateOptions{})
	return true, err
}

// removeFinalizer removes the cleanup finalizer from db.
func removeFinalizer(ctx context.Context, p *sim.Process, db *unstructured.Unstructured) error {
	db = db.DeepCopy()
	db.SetFinalizers(slices.DeleteFunc(db.GetFinalizers(), func(f string) bool { return f == finalizer }))
	_, err := p.Dynamic.Resource(dbGVR).Namespace(db.GetNamespace()).Update(ctx, db, metav1.UpdateOptions{})
	return err
}

func pvc(db *unstructured.Unstructured, name string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: db.GetNamespace(), Labels: map[string]string{dbLabel: db.GetName()},
			OwnerReferences: []metav1.OwnerReference{ownerRef(db)}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
}

func ignoreExists(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// staleFinalizerCleanup: a Database's finalizer deletes its data PVC by name. Deleted and
// created again under the same name, a controller restarted onto a lagging API server sees the
// old Database still being deleted and deletes the new one's PVC (pravega/zookeeper-operator#314,
// instaclustr/cassandra-operator#402, Orange-OpenSource/casskop#316). The fix deletes only the
// PVC the deleting Database owns, by its UID, with a UID precondition, and, as every fix of a
// stale-state bug here, writes nothing until a quorum read shows its cached Database is the
// API server's (freshEnough).
func staleFinalizerCleanup() Bug {
	return Bug{
		Name: "stale-finalizer-cleanup", Origin: "pravega/zookeeper-operator#314, instaclustr/cassandra-operator#402", Pattern: "stale state",
		Fault: sim.StaleRestart(staleHold),
		Scenario: func(fixed bool) sim.Scenario {
			return sim.Scenario{
				Resources: []fakecluster.Resource{dbResource},
				Start: func(p *sim.Process) error {
					return dbController(p, "zookeeper", func(ctx context.Context, dbs informer.Informer[*unstructured.Unstructured], pvcs informer.Informer[*corev1.PersistentVolumeClaim], key controller.Key) (controller.Result, error) {
						db, err := cachedDB(dbs, key)
						if db == nil || err != nil {
							return controller.Result{}, err
						}
						if fresh, err := freshEnough(ctx, p, db, fixed); !fresh || err != nil {
							return controller.Result{RequeueAfter: requeueSoon}, err
						}
						name := "data-" + db.GetName()
						if db.GetDeletionTimestamp() != nil {
							if !slices.Contains(db.GetFinalizers(), finalizer) {
								return controller.Result{}, nil
							}
							var del error
							if !fixed {
								del = p.Client.CoreV1().PersistentVolumeClaims(db.GetNamespace()).Delete(ctx, name, metav1.DeleteOptions{})
							} else if c, err := pvcs.Lister().Get(db.GetNamespace(), name); err == nil && metav1.IsControlledBy(c, db) {
								del = p.Client.CoreV1().PersistentVolumeClaims(db.GetNamespace()).Delete(ctx, name,
									metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(c.UID))})
								if apierrors.IsConflict(del) {
									del = nil // not the PVC this Database owned: that one is gone
								}
							}
							if err := client.IgnoreNotFound(del); err != nil {
								return controller.Result{}, err
							}
							return controller.Result{}, removeFinalizer(ctx, p, db)
						}
						if wrote, err := addFinalizer(ctx, p, db); wrote || err != nil {
							return controller.Result{}, err
						}
						_, err = p.Client.CoreV1().PersistentVolumeClaims(db.GetNamespace()).Create(ctx, pvc(db, name), metav1.CreateOptions{})
						return controller.Result{}, ignoreExists(err)
					})
				},
				Workload: []sim.Step{create("zk", 1, ""), remove("zk"), create("zk", 1, "")},
			}
		},
	}
}

// ordinalPVCs reconciles one data PVC per replica ("data-<db>-<i>"), deleting the ones past
// spec.replicas.
func ordinalPVCs(ctx context.Context, p *sim.Process, db *unstructured.Unstructured, pvcs informer.Informer[*corev1.PersistentVolumeClaim]) (controller.Result, error) {
	n := replicas(db)
	for i := range n {
		_, err := p.Client.CoreV1().PersistentVolumeClaims(db.GetNamespace()).Create(ctx, pvc(db, fmt.Sprintf("data-%s-%d", db.GetName(), i)), metav1.CreateOptions{})
		if err := ignoreExists(err); err != nil {
			return controller.Result{}, err
		}
	}
	owned, err := pvcs.Lister().Namespace(db.GetNamespace()).List(labels.SelectorFromSet(labels.Set{dbLabel: db.GetName()}))
	if err != nil {
		return controller.Result{}, err
	}
	for _, c := range owned {
		i, err := strconv.ParseInt(c.Name[len("data-"+db.GetName()+"-"):], 10, 64)
		if err != nil || i < n {
			continue
		}
		if err := client.IgnoreNotFound(p.Client.CoreV1().PersistentVolumeClaims(c.Namespace).Delete(ctx, c.Name, metav1.DeleteOptions{})); err != nil {
			return controller.Result{}, err
		}
	}
	return controller.Result{}, nil
}

func cmpName(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// staleScaleDown: scaling down deletes the data PVCs of the replicas removed, going by the
// cached spec. A controller restarted onto a lagging view of the Database (an old, smaller
// replica count) while its PVCs are current deletes the PVCs of live replicas
// (k8ssandra/cass-operator K8SSAND-559, instaclustr/cassandra-operator#407). The fix reads the
// writes nothing until a quorum read shows its cached Database is the API server's
// (freshEnough).
func staleScaleDown() Bug {
	return Bug{
		Name: "stale-scale-down", Origin: "k8ssandra/cass-operator K8SSAND-559, instaclustr/cassandra-operator#407", Pattern: "stale state",
		Fault: sim.StaleRestart(staleHold),
		Scenario: func(fixed bool) sim.Scenario {
			return sim.Scenario{
				Resources: []fakecluster.Resource{dbResource},
				Start: func(p *sim.Process) error {
					return dbController(p, "cassandra", func(ctx context.Context, dbs informer.Informer[*unstructured.Unstructured], pvcs informer.Informer[*corev1.PersistentVolumeClaim], key controller.Key) (controller.Result, error) {
						db, err := cachedDB(dbs, key)
						if db == nil || err != nil {
							return controller.Result{}, err
						}
						if fresh, err := freshEnough(ctx, p, db, fixed); !fresh || err != nil {
							return controller.Result{RequeueAfter: requeueSoon}, err
						}
						return ordinalPVCs(ctx, p, db, pvcs)
					})
				},
				Workload: []sim.Step{create("cass", 1, ""), scale("cass", 3), scale("cass", 2)},
			}
		},
	}
}

// staleChildren: a ReplicaSet-like controller counts its Pods in its cache and creates the
// missing ones with generated names. Restarted onto a view of the Pods that lags (the Pods
// created last are not in it yet), it creates replicas that exist, and deletes the surplus once
// it catches up (a pattern of percona/percona-xtradb-cluster-operator K8SPXC-716 and
// rabbitmq/cluster-operator#648, where stale state drove creations). The fix counts the Pods
// with a quorum list before it creates any, and writes nothing until a quorum read shows its
// cached Database is the API server's (freshEnough).
func staleChildren() Bug {
	return Bug{
		Name: "stale-children", Origin: "percona/percona-xtradb-cluster-operator K8SPXC-716, rabbitmq/cluster-operator#648", Pattern: "stale state",
		Fault: sim.StaleRestart(staleHold),
		Scenario: func(fixed bool) sim.Scenario {
			return sim.Scenario{
				Resources: []fakecluster.Resource{dbResource},
				Start: func(p *sim.Process) error {
					return dbController(p, "replicas", func(ctx context.Context, dbs informer.Informer[*unstructured.Unstructured], pods informer.Informer[*corev1.Pod], key controller.Key) (controller.Result, error) {
						db, err := cachedDB(dbs, key)
						if db == nil || err != nil {
							return controller.Result{}, err
						}
						if fresh, err := freshEnough(ctx, p, db, fixed); !fresh || err != nil {
							return controller.Result{RequeueAfter: requeueSoon}, err
						}
						sel := labels.SelectorFromSet(labels.Set{dbLabel: db.GetName()})
						have, err := pods.Lister().Namespace(db.GetNamespace()).List(sel)
						if err != nil {
							return controller.Result{}, err
						}
						live := len(have)
						if fixed && live < int(replicas(db)) {
							list, err := p.Client.CoreV1().Pods(db.GetNamespace()).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
							if err != nil {
								return controller.Result{}, err
							}
							live = len(list.Items)
						}
						for range int(replicas(db)) - live {
							if _, err := p.Client.CoreV1().Pods(db.GetNamespace()).Create(ctx, pod(db), metav1.CreateOptions{}); err != nil {
								return controller.Result{}, err
							}
						}
						return deleteSurplus(ctx, p, db, have)
					})
				},
				Workload: []sim.Step{create("web", 1, ""), scale("web", 3)},
			}
		},
	}
}

func pod(db *unstructured.Unstructured) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: db.GetName() + "-", Namespace: db.GetNamespace(), Labels: map[string]string{dbLabel: db.GetName()},
			OwnerReferences: []metav1.OwnerReference{ownerRef(db)}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "db"}}},
	}
}

// deleteSurplus deletes the Pods past spec.replicas, newest names last.
func deleteSurplus(ctx context.Context, p *sim.Process, db *unstructured.Unstructured, have []*corev1.Pod) (controller.Result, error) {
	live := slices.DeleteFunc(slices.Clone(have), func(p *corev1.Pod) bool { return p.DeletionTimestamp != nil })
	slices.SortFunc(live, func(a, b *corev1.Pod) int { return cmpName(a.Name, b.Name) })
	for i := int(replicas(db)); i < len(live); i++ {
		if err := client.IgnoreNotFound(p.Client.CoreV1().Pods(db.GetNamespace()).Delete(ctx, live[i].Name, metav1.DeleteOptions{})); err != nil {
			return controller.Result{}, err
		}
	}
	return controller.Result{}, nil
}

// freshEnough reports, for the fixed version, whether the cached db is the API server's
// (a quorum read: same resourceVersion); the buggy version trusts its cache.
func freshEnough(ctx context.Context, p *sim.Process, db *unstructured.Unstructured, fixed bool) (bool, error) {
	if !fixed {
		return true, nil
	}
	live, err := p.Dynamic.Resource(dbGVR).Namespace(db.GetNamespace()).Get(ctx, db.GetName(), metav1.GetOptions{})
	if err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return live.GetResourceVersion() == db.GetResourceVersion(), nil
}

// staleDestructiveResize: the Database's value goes into an immutable ConfigMap, so a change
// of value deletes the ConfigMap and creates it anew. A controller restarted onto a lagging
// view of the Database (the old value) "changes" it back, and then forward again: needless
// destructive rounds (rabbitmq/cluster-operator#653, a StatefulSet deleted to resize its volume
// claims). The fix writes nothing until a quorum read shows its cached Database is the API
// server's (freshEnough), and waits for its cache otherwise.
func staleDestructiveResize() Bug {
	return Bug{
		Name: "stale-destructive-resize", Origin: "rabbitmq/cluster-operator#653", Pattern: "stale state",
		Fault: sim.StaleRestart(staleHold),
		Scenario: func(fixed bool) sim.Scenario {
			return sim.Scenario{
				Resources: []fakecluster.Resource{dbResource},
				Start: func(p *sim.Process) error {
					return dbController(p, "rabbitmq", func(ctx context.Context, dbs informer.Informer[*unstructured.Unstructured], cms informer.Informer[*corev1.ConfigMap], key controller.Key) (controller.Result, error) {
						db, err := cachedDB(dbs, key)
						if db == nil || err != nil {
							return controller.Result{}, err
						}
						if fresh, err := freshEnough(ctx, p, db, fixed); !fresh || err != nil {
							return controller.Result{RequeueAfter: requeueSoon}, err
						}
						name := "config-" + db.GetName()
						cm, err := cms.Lister().Get(db.GetNamespace(), name)
						switch {
						case apierrors.IsNotFound(err):
						case err != nil:
							return controller.Result{}, err
						case cm.Data["value"] == value(db):
							return controller.Result{}, nil
						default:
							err := p.Client.CoreV1().ConfigMaps(cm.Namespace).Delete(ctx, cm.Name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(cm.UID))})
							if err := client.IgnoreNotFound(err); err != nil {
								return controller.Result{}, err
							}
						}
						_, err = p.Client.CoreV1().ConfigMaps(db.GetNamespace()).Create(ctx, &corev1.ConfigMap{
							ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: db.GetNamespace(),
								OwnerReferences: []metav1.OwnerReference{ownerRef(db)}},
							Immutable: new(true),
							Data:      map[string]string{"value": value(db)},
						}, metav1.CreateOptions{})
						return controller.Result{}, ignoreExists(err)
					})
				},
				Workload: []sim.Step{create("rmq", 1, "10Gi"), update("rmq", "resize", func(db *unstructured.Unstructured) {
					_ = unstructured.SetNestedField(db.Object, "15Gi", "spec", "value")
				})},
			}
		},
	}
}
