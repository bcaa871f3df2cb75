package manager_test

import (
	"context"
	"fmt"
	"runtime"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/manager"
)

// A controller records events.k8s.io/v1 Events through the Manager's
// recorder for its name; they are written while the Manager runs.
func ExampleManager_EventRecorder() {
	client := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-0"}})
	mgr, err := manager.New(manager.Options{Client: client})
	if err != nil {
		fmt.Println(err)
		return
	}
	pods, _ := informer.For[*corev1.Pod](mgr.Factory())
	recorder := mgr.EventRecorder("pod-audit")
	audit, _ := controller.New("pod-audit", controller.ReconcilerFunc[controller.Key](
		func(ctx context.Context, key controller.Key) (controller.Result, error) {
			pod, err := pods.Lister().Get(key.Namespace, key.Name)
			if err != nil {
				return controller.Result{}, err
			}
			recorder.Eventf(pod, nil, corev1.EventTypeWarning, "NoResources", "Auditing", "container %d has no resource requests", 0)
			return controller.Result{}, nil
		}), controller.Options[controller.Key]{})
	_ = controller.Watch(audit, pods, controller.EnqueueObject)
	_ = mgr.Add(audit)

	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan error)
	go func() { started <- mgr.Start(ctx) }()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); runtime.Gosched() {
		events, err := client.EventsV1().Events("default").List(ctx, metav1.ListOptions{})
		if err == nil && len(events.Items) > 0 {
			ev := events.Items[0]
			fmt.Println(ev.Type, ev.Reason, ev.Action, ev.Regarding.Kind, ev.Regarding.Name)
			fmt.Println(ev.Note)
			fmt.Println("reported by", ev.ReportingController)
			break
		}
	}
	cancel()
	fmt.Println("start returned:", <-started)
	// Output:
	// Warning NoResources Auditing Pod web-0
	// container 0 has no resource requests
	// reported by pod-audit
	// start returned: <nil>
}
