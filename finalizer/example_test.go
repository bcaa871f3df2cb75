package finalizer_test

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/finalizer"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
)

// Add and Remove write through the typed client as it is; a second Add sends nothing, and a
// stale copy conflicts instead of overwriting a newer finalizer list.
func ExampleAdd() {
	ctx := context.Background()
	cluster, _ := fakecluster.New(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "settings"}})
	cms := cluster.Clientset().CoreV1().ConfigMaps("demo")
	cm, _ := cms.Get(ctx, "settings", metav1.GetOptions{})

	added, err := finalizer.Add(ctx, cms, cm, "example.com/cleanup")
	fmt.Println(added.Finalizers, err, finalizer.Has(added, "example.com/cleanup"))

	same, _ := finalizer.Add(ctx, cms, added, "example.com/cleanup")
	fmt.Println("no request:", same == added)

	_, err = finalizer.Add(ctx, cms, cm, "example.com/other") // cm is older than added
	fmt.Println("stale copy conflicts:", apierrors.IsConflict(err))

	removed, err := finalizer.Remove(ctx, cms, added, "example.com/cleanup")
	fmt.Println(removed.Finalizers, err)

	_, err = finalizer.Add(ctx, cms, removed, "cleanup")
	fmt.Println(errors.Is(err, finalizer.ErrInvalidName))
	// Output:
	// [example.com/cleanup] <nil> true
	// no request: true
	// stale copy conflicts: true
	// [] <nil>
	// true
}

// ValidateName accepts what the API server accepts in metadata.finalizers of built-in types.
func ExampleValidateName() {
	for _, name := range []string{"example.com/cleanup", "orphan", "cleanup", "example.com/Bad Name"} {
		fmt.Printf("%q valid: %v\n", name, finalizer.ValidateName(name) == nil)
	}
	// Output:
	// "example.com/cleanup" valid: true
	// "orphan" valid: true
	// "cleanup" valid: false
	// "example.com/Bad Name" valid: false
}

// A registry with two finalizers, as a Reconcile uses it: on a live object Finalize adds them;
// on an object being deleted it runs their functions in registration order, removes each after
// it succeeded, and stops at a failure, which the controller retries.
func ExampleFinalizers() {
	ctx := context.Background()
	now := metav1.Now()
	// The in-memory cluster keeps a seeded deletionTimestamp: "old" is being deleted.
	cluster, _ := fakecluster.New(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "new"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "old", DeletionTimestamp: &now,
			Finalizers: []string{"example.com/bucket", "example.com/dns"}}},
	)
	cms := cluster.Clientset().CoreV1().ConfigMaps("demo")

	dnsDown := true
	fins := finalizer.New[*corev1.ConfigMap]()
	_ = fins.Register("example.com/dns", func(_ context.Context, cm *corev1.ConfigMap) error {
		if dnsDown {
			return errors.New("dns api unavailable")
		}
		fmt.Println("  removed the DNS record of", cm.Name)
		return nil
	})
	_ = fins.Register("example.com/bucket", func(_ context.Context, cm *corev1.ConfigMap) error {
		fmt.Println("  deleted the bucket of", cm.Name)
		return nil
	})

	reconcile := func(name string) {
		cm, _ := cms.Get(ctx, name, metav1.GetOptions{}) // a Reconcile reads its lister
		cm, res, err := fins.Finalize(ctx, cms, cm)
		fmt.Printf("%s: %+v finalizers=%v err=%v\n", name, res, cm.Finalizers, err)
		if err != nil || res.Deleting {
			return // the controller retries err with backoff
		}
		// ... normal work: create the DNS record and the bucket ...
	}
	reconcile("new")
	reconcile("old")
	dnsDown = false
	reconcile("old")
	// Output:
	// new: {Updated:true Deleting:false Finalized:false} finalizers=[example.com/dns example.com/bucket] err=<nil>
	// old: {Updated:false Deleting:true Finalized:false} finalizers=[example.com/bucket example.com/dns] err=finalizer "example.com/dns" of demo/old failed: dns api unavailable
	//   removed the DNS record of old
	//   deleted the bucket of old
	// old: {Updated:true Deleting:true Finalized:true} finalizers=[] err=<nil>
}
