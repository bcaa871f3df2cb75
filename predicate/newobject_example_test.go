package predicate_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/ctrlkit/ctrlkit/predicate"
)

// Side by side with Matching: a Pod that leaves Running is still seen once by Matching, and
// not at all by MatchingNewObject (controller-runtime's NewPredicateFuncs).
func ExampleMatchingNewObject() {
	isRunning := func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning }
	both := predicate.Matching(isRunning)
	newOnly := predicate.MatchingNewObject(isRunning)
	running, failed := pod(nil, nil), pod(nil, nil)
	running.Status.Phase, failed.Status.Phase = corev1.PodRunning, corev1.PodFailed
	fmt.Println("Running -> Failed:", both.Update(update(running, failed)), newOnly.Update(update(running, failed)))
	fmt.Println("Failed -> Running:", both.Update(update(failed, running)), newOnly.Update(update(failed, running)))
	// Output:
	// Running -> Failed: true false
	// Failed -> Running: true true
}

// A Pod relabelled out of the selection: LabelSelector passes the update (the old object
// matched), LabelSelectorNewObject (controller-runtime's LabelSelectorPredicate) drops it.
func ExampleLabelSelectorNewObject() {
	sel := labels.SelectorFromSet(labels.Set{"app": "web"})
	both := predicate.LabelSelector[*corev1.Pod](sel)
	newOnly := predicate.LabelSelectorNewObject[*corev1.Pod](sel)
	web, db := pod(map[string]string{"app": "web"}, nil), pod(map[string]string{"app": "db"}, nil)
	fmt.Println("web -> db:", both.Update(update(web, db)), newOnly.Update(update(web, db)))
	fmt.Println("db -> web:", both.Update(update(db, web)), newOnly.Update(update(db, web)))
	fmt.Println("create db:", both.Create(predicate.CreateEvent[*corev1.Pod]{Object: db}),
		newOnly.Create(predicate.CreateEvent[*corev1.Pod]{Object: db}))
	// Output:
	// web -> db: true false
	// db -> web: true true
	// create db: false false
}

// controller-runtime's predicate.LabelSelectorPredicate(s), ported as it is.
func ExampleFromLabelSelectorNewObject() {
	s := metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	p, err := predicate.FromLabelSelectorNewObject[*corev1.Pod](&s)
	if err != nil {
		fmt.Println(err)
		return
	}
	web, db := pod(map[string]string{"app": "web"}, nil), pod(map[string]string{"app": "db"}, nil)
	fmt.Println(p.Update(update(web, db)), p.Update(update(db, web)))
	// Output: false true
}
