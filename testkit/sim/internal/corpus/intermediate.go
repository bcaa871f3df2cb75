package corpus

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/ctrlkit/ctrlkit/client"
	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
	"github.com/ctrlkit/ctrlkit/testkit/sim"
)

// setStatus writes db's status field to v (a write of the status subresource).
func setStatus(ctx context.Context, p *sim.Process, db *unstructured.Unstructured, field, v string) error {
	db = db.DeepCopy()
	if err := unstructured.SetNestedField(db.Object, v, "status", field); err != nil {
		return err
	}
	_, err := p.Dynamic.Resource(dbGVR).Namespace(db.GetNamespace()).UpdateStatus(ctx, db, metav1.UpdateOptions{})
	return err
}

func status(db *unstructured.Unstructured, field string) string {
	v, _, _ := unstructured.NestedString(db.Object, "status", field)
	return v
}

func configMap(db *unstructured.Unstructured, name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: db.GetNamespace(), Labels: map[string]string{dbLabel: db.GetName()},
			OwnerReferences: []metav1.OwnerReference{ownerRef(db)}},
		Data: map[string]string{"value": value(db)},
	}
}

// statusBeforeAction: the reconcile records the Database as provisioned, then provisions it
// (creates its ConfigMap), and skips a Database already recorded as provisioned. A crash between
// the two writes leaves a Database that says it is provisioned and never will be
// (k8ssandra/cass-operator K8SSAND-1023, percona/percona-server-mongodb-operator K8SPSMDB-578:
// progress recorded before the work). The fix does the work first, idempotently, and records
// it after; it checks what exists rather than trusting what it recorded.
func statusBeforeAction() Bug {
	return Bug{
		Name: "status-before-action", Origin: "k8ssandra/cass-operator K8SSAND-1023, percona/percona-server-mongodb-operator K8SPSMDB-578", Pattern: "intermediate state",
		Fault: sim.Crash(),
		Scenario: func(fixed bool) sim.Scenario {
			return sim.Scenario{
				Resources: []fakecluster.Resource{dbResource},
				Start: func(p *sim.Process) error {
					return dbController(p, "provisioner", func(ctx context.Context, dbs informer.Informer[*unstructured.Unstructured], _ informer.Informer[*corev1.ConfigMap], key controller.Key) (controller.Result, error) {
						db, err := cachedDB(dbs, key)
						if db == nil || err != nil {
							return controller.Result{}, err
						}
						provisioned := status(db, "phase") == "Provisioned"
						if !fixed {
							if provisioned {
								return controller.Result{}, nil
							}
							if err := setStatus(ctx, p, db, "phase", "Provisioned"); err != nil {
								return controller.Result{}, err
							}
						}
						_, err = p.Client.CoreV1().ConfigMaps(db.GetNamespace()).Create(ctx, configMap(db, "config-"+db.GetName()), metav1.CreateOptions{})
						if err := ignoreExists(err); err != nil || !fixed || provisioned {
							return controller.Result{}, err
						}
						return controller.Result{}, setStatus(ctx, p, db, "phase", "Provisioned")
					})
				},
				Workload: []sim.Step{create("a", 1, "x"), create("b", 1, "y")},
			}
		},
	}
}

// generatedChildName: the reconcile creates the Database's ConfigMap with a generated name
// and then records the name in the status. A crash between the two writes makes the next
// process create a second one (Orange-OpenSource/casskop#370, percona/percona-xtradb-cluster-operator
// K8SPXC-896: an object created again because its creation was not recorded yet). The fix
// adopts an existing ConfigMap of the Database (found by its label) before creating one.
func generatedChildName() Bug {
	return Bug{
		Name: "generated-child-name", Origin: "Orange-OpenSource/casskop#370, percona/percona-xtradb-cluster-operator K8SPXC-896", Pattern: "intermediate state",
		Fault: sim.Crash(),
		Scenario: func(fixed bool) sim.Scenario {
			return sim.Scenario{
				Resources: []fakecluster.Resource{dbResource},
				Start: func(p *sim.Process) error {
					return dbController(p, "generator", func(ctx context.Context, dbs informer.Informer[*unstructured.Unstructured], cms informer.Informer[*corev1.ConfigMap], key controller.Key) (controller.Result, error) {
						db, err := cachedDB(dbs, key)
						if db == nil || err != nil {
							return controller.Result{}, err
						}
						if status(db, "configMap") != "" {
							return controller.Result{}, nil
						}
						name := ""
						if fixed {
							owned, err := cms.Lister().Namespace(db.GetNamespace()).List(labels.SelectorFromSet(labels.Set{dbLabel: db.GetName()}))
							if err != nil {
								return controller.Result{}, err
							}
							owned = slices.DeleteFunc(owned, func(c *corev1.ConfigMap) bool { return !metav1.IsControlledBy(c, db) })
							if len(owned) > 0 {
								name = owned[0].Name
							}
						}
						if name == "" {
							cm := configMap(db, "")
							cm.GenerateName = "config-" + db.GetName() + "-"
							made, err := p.Client.CoreV1().ConfigMaps(db.GetNamespace()).Create(ctx, cm, metav1.CreateOptions{})
							if err != nil {
								return controller.Result{}, err
							}
							name = made.Name
						}
						return controller.Result{}, setStatus(ctx, p, db, "configMap", name)
					})
				},
				Workload: []sim.Step{create("a", 1, "x"), create("b", 1, "y")},
			}
		},
	}
}

// finalizerBeforeCleanup: a Database keeps a backup ConfigMap in another namespace (which an
// owner reference cannot reach, so the garbage collector does not either); its finalizer is
// removed first and the backup deleted after. A crash between the two leaves the backup behind
// for ever: nothing is left to reconcile (percona/percona-server-mongodb-operator K8SPSMDB-579,
// percona/percona-xtradb-cluster-operator K8SPXC-897: cleanup interrupted half-way). The fix
// deletes the backup first and removes the finalizer last.
func finalizerBeforeCleanup() Bug {
	return Bug{
		Name: "finalizer-before-cleanup", Origin: "percona/percona-server-mongodb-operator K8SPSMDB-579, percona/percona-xtradb-cluster-operator K8SPXC-897", Pattern: "intermediate state",
		Fault: sim.Crash(),
		Scenario: func(fixed bool) sim.Scenario {
			return sim.Scenario{
				Resources: []fakecluster.Resource{dbResource},
				Start: func(p *sim.Process) error {
					return dbController(p, "backups", func(ctx context.Context, dbs informer.Informer[*unstructured.Unstructured], _ informer.Informer[*corev1.ConfigMap], key controller.Key) (controller.Result, error) {
						db, err := cachedDB(dbs, key)
						if db == nil || err != nil {
							return controller.Result{}, err
						}
						backups := p.Client.CoreV1().ConfigMaps(backupNamespace)
						name := db.GetNamespace() + "." + db.GetName()
						if db.GetDeletionTimestamp() != nil {
							if !slices.Contains(db.GetFinalizers(), finalizer) {
								return controller.Result{}, nil
							}
							if !fixed {
								if err := removeFinalizer(ctx, p, db); err != nil {
									return controller.Result{}, err
								}
							}
							if err := client.IgnoreNotFound(backups.Delete(ctx, name, metav1.DeleteOptions{})); err != nil || !fixed {
								return controller.Result{}, err
							}
							return controller.Result{}, removeFinalizer(ctx, p, db)
						}
						if wrote, err := addFinalizer(ctx, p, db); wrote || err != nil {
							return controller.Result{}, err
						}
						_, err = backups.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: backupNamespace},
							Data: map[string]string{"value": value(db)}}, metav1.CreateOptions{})
						return controller.Result{}, ignoreExists(err)
					})
				},
				Workload: []sim.Step{create("a", 1, "x"), remove("a")},
			}
		},
	}
}

// backupNamespace is where finalizerBeforeCleanup and deleteHandlerCleanup keep what the
// Databases' owner references cannot reach.
const backupNamespace = "backups"
