package predicate_test

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/predicate"
)

func deployment(generation int64, resourceVersion string) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{
		Namespace: "default", Name: "web", Generation: generation, ResourceVersion: resourceVersion}}
}

func update[T informer.Object](oldObj, newObj T) predicate.UpdateEvent[T] {
	return predicate.UpdateEvent[T]{ObjectOld: oldObj, ObjectNew: newObj}
}

// A spec change bumps generation and passes; the controller's own status
// write and a resync keep it and are dropped. Creates and deletes pass.
func ExampleGenerationChanged() {
	p := predicate.GenerationChanged[*appsv1.Deployment]()
	fmt.Println("spec change: ", p.Update(update(deployment(1, "10"), deployment(2, "11"))))
	fmt.Println("status write:", p.Update(update(deployment(2, "11"), deployment(2, "12"))))
	fmt.Println("resync:      ", p.Update(update(deployment(2, "12"), deployment(2, "12"))))
	fmt.Println("create:      ", p.Create(predicate.CreateEvent[*appsv1.Deployment]{Object: deployment(1, "10")}))
	fmt.Println("delete:      ", p.Delete(predicate.DeleteEvent[*appsv1.Deployment]{Object: deployment(2, "12")}))
	// Output:
	// spec change:  true
	// status write: false
	// resync:       false
	// create:       true
	// delete:       true
}

// Resyncs re-deliver an unchanged object (same resourceVersion): dropped.
func ExampleResourceVersionChanged() {
	p := predicate.ResourceVersionChanged[*appsv1.Deployment]()
	fmt.Println("status write:", p.Update(update(deployment(1, "10"), deployment(1, "11"))))
	fmt.Println("resync:      ", p.Update(update(deployment(1, "11"), deployment(1, "11"))))
	// Output:
	// status write: true
	// resync:       false
}

func pod(labels, annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-0", Labels: labels, Annotations: annotations}}
}

func ExampleLabelsChanged() {
	p := predicate.LabelsChanged[*corev1.Pod]()
	fmt.Println(p.Update(update(pod(nil, nil), pod(map[string]string{"app": "web"}, nil))))
	fmt.Println(p.Update(update(pod(nil, nil), pod(map[string]string{}, nil))), "(nil and empty are equal)")
	fmt.Println(p.Update(update(pod(nil, nil), pod(nil, map[string]string{"note": "x"}))), "(annotations do not count)")
	// Output:
	// true
	// false (nil and empty are equal)
	// false (annotations do not count)
}

func ExampleAnnotationsChanged() {
	p := predicate.AnnotationsChanged[*corev1.Pod]()
	fmt.Println(p.Update(update(pod(nil, map[string]string{"note": "x"}), pod(nil, map[string]string{"note": "y"}))))
	fmt.Println(p.Update(update(pod(nil, nil), pod(map[string]string{"app": "web"}, nil))))
	// Output:
	// true
	// false
}

// A Pod relabelled out of the selection is seen once more (the old object
// matches), so the controller can let go of it; after that it is filtered.
func ExampleLabelSelector() {
	p := predicate.LabelSelector[*corev1.Pod](labels.SelectorFromSet(labels.Set{"app": "web"}))
	web, db := pod(map[string]string{"app": "web"}, nil), pod(map[string]string{"app": "db"}, nil)
	fmt.Println("create web:   ", p.Create(predicate.CreateEvent[*corev1.Pod]{Object: web}))
	fmt.Println("create db:    ", p.Create(predicate.CreateEvent[*corev1.Pod]{Object: db}))
	fmt.Println("web -> db:    ", p.Update(update(web, db)))
	fmt.Println("db -> db:     ", p.Update(update(db, db)))
	// A delete inferred on relist whose object is unknown: nothing to judge.
	fmt.Println("lost tombstone:", p.Delete(predicate.DeleteEvent[*corev1.Pod]{
		Object:     &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-1"}},
		DeleteInfo: informer.DeleteInfo{Key: "default/web-1", FinalStateUnknown: true, ObjectMissing: true},
	}))
	// Output:
	// create web:    true
	// create db:     false
	// web -> db:     true
	// db -> db:      false
	// lost tombstone: true
}

// An API selector, such as a spec.selector, with its parse errors.
func ExampleFromLabelSelector() {
	p, err := predicate.FromLabelSelector[*corev1.Pod](&metav1.LabelSelector{
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"front"}}},
	})
	fmt.Println(err, p.Create(predicate.CreateEvent[*corev1.Pod]{Object: pod(map[string]string{"tier": "front"}, nil)}))
	_, err = predicate.FromLabelSelector[*corev1.Pod](&metav1.LabelSelector{
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Sometimes"}},
	})
	fmt.Println(err)
	// Output:
	// <nil> true
	// invalid predicate: label selector: "Sometimes" is not a valid label selector operator
}

// Funcs filters only the events it has a function for.
func ExampleFuncs() {
	skipInitial := predicate.Funcs[*corev1.Pod]{
		CreateFunc: func(e predicate.CreateEvent[*corev1.Pod]) bool { return !e.IsInInitialList },
	}
	fmt.Println(skipInitial.Create(predicate.CreateEvent[*corev1.Pod]{Object: pod(nil, nil), IsInInitialList: true}))
	fmt.Println(skipInitial.Update(update(pod(nil, nil), pod(nil, nil))))
	// Output:
	// false
	// true
}

func ExampleMatching() {
	running := predicate.Matching(func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	before, after := pod(nil, nil), pod(nil, nil)
	before.Status.Phase, after.Status.Phase = corev1.PodRunning, corev1.PodFailed
	fmt.Println("Running -> Failed:", running.Update(update(before, after)))
	fmt.Println("Failed -> Failed: ", running.Update(update(after, after)))
	// Output:
	// Running -> Failed: true
	// Failed -> Failed:  false
}

// Reconcile on spec changes and on label changes, but not for objects
// labelled to be ignored.
func ExampleOr() {
	p := predicate.And(
		predicate.Or(predicate.GenerationChanged[*appsv1.Deployment](), predicate.LabelsChanged[*appsv1.Deployment]()),
		predicate.Not(predicate.Matching(func(d *appsv1.Deployment) bool { return d.Labels["ignore"] == "true" })),
	)
	relabelled := deployment(1, "11")
	relabelled.Labels = map[string]string{"team": "a"}
	ignored := deployment(2, "12")
	ignored.Labels = map[string]string{"ignore": "true"}
	fmt.Println("label change:  ", p.Update(update(deployment(1, "10"), relabelled)))
	fmt.Println("status write:  ", p.Update(update(deployment(1, "10"), deployment(1, "11"))))
	fmt.Println("ignored object:", p.Create(predicate.CreateEvent[*appsv1.Deployment]{Object: ignored}))
	// Output:
	// label change:   true
	// status write:   false
	// ignored object: false
}

func ExampleValidate() {
	var forgotten predicate.Predicate[*corev1.Pod]
	fmt.Println(predicate.Validate(predicate.Or(predicate.LabelsChanged[*corev1.Pod](), forgotten)))
	// Output: invalid predicate: Or[1]: nil
}
