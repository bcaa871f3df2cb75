// Package corpus holds small controllers with the bugs the research tools Sieve (OSDI'22) and
// Acto (SOSP'23) found in real operators, each beside its fix (the same code with Fixed set),
// for the simulator to find: the bug's pattern, written anew on ctrlkit, not the operator's
// code.
package corpus

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/testkit/fakecluster"
	"github.com/ctrlkit/ctrlkit/testkit/sim"
)

// Bug is one known bug: where it comes from, its pattern, the fault that exposes it, and the
// scenario with the buggy controller or the fixed one.
type Bug struct {
	Name    string // e.g. "stale-finalizer-cleanup"
	Origin  string // the issue in the original project
	Pattern string // "stale state", "intermediate state", "unobserved state"
	Fault   sim.Fault
	// Scenario returns the world with the buggy controller (fixed false) or the fixed one.
	Scenario func(fixed bool) sim.Scenario
}

// All is the corpus.
func All() []Bug {
	return []Bug{
		staleFinalizerCleanup(),
		staleScaleDown(),
		staleChildren(),
		staleDestructiveResize(),
		statusBeforeAction(),
		generatedChildName(),
		finalizerBeforeCleanup(),
		deleteHandlerCleanup(),
		expectationsWithoutExpiry(),
	}
}

// The corpus's custom resource: a Database (example.com/v1, namespaced, with status), with
// spec.replicas and spec.value.
var (
	dbGVR      = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "databases"}
	dbResource = fakecluster.Resource{GVR: dbGVR, Kind: "Database", Namespaced: true, StatusSubresource: true}
)

const ns = "default"

// database is a Database named name.
func database(name string, replicas int64, value string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Database",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"replicas": replicas, "value": value},
	}}
	return u
}

func replicas(db *unstructured.Unstructured) int64 {
	n, _, _ := unstructured.NestedInt64(db.Object, "spec", "replicas")
	return n
}

func value(db *unstructured.Unstructured) string {
	v, _, _ := unstructured.NestedString(db.Object, "spec", "value")
	return v
}

// ownerRef is a controller reference to db.
func ownerRef(db *unstructured.Unstructured) metav1.OwnerReference {
	return *metav1.NewControllerRef(db, schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Database"})
}

// Steps users take.

// create creates a Database; while one of that name is still being deleted (its finalizer
// waits for the controller), it tries again every second for up to ten minutes, as a user would.
func create(name string, n int64, v string) sim.Step {
	return sim.Step{Name: fmt.Sprintf("create database %s (replicas %d, value %q)", name, n, v), Do: func(ctx context.Context, u *sim.User) error {
		var err error
		for range 600 {
			if _, err = u.Dynamic.Resource(dbGVR).Namespace(ns).Create(ctx, database(name, n, v), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
				return err
			}
			time.Sleep(time.Second) // virtual
		}
		return err
	}}
}

func update(name string, what string, f func(db *unstructured.Unstructured)) sim.Step {
	return sim.Step{Name: fmt.Sprintf("%s database %s", what, name), Do: func(ctx context.Context, u *sim.User) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			db, err := u.Dynamic.Resource(dbGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			f(db)
			_, err = u.Dynamic.Resource(dbGVR).Namespace(ns).Update(ctx, db, metav1.UpdateOptions{})
			return err
		})
	}}
}

func scale(name string, n int64) sim.Step {
	return update(name, fmt.Sprintf("scale to %d", n), func(db *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(db.Object, n, "spec", "replicas")
	})
}

func remove(name string) sim.Step {
	return sim.Step{Name: "delete database " + name, Do: func(ctx context.Context, u *sim.User) error {
		return u.Dynamic.Resource(dbGVR).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{})
	}}
}

// oneWorker is the controller options of every corpus controller: one worker, so a run's trace
// is reproducible.
func oneWorker() controller.Options[controller.Key] {
	return controller.Options[controller.Key]{Workers: 1}
}

// requeueSoon is a short retry for a reconcile that waits on something.
const requeueSoon = time.Second
