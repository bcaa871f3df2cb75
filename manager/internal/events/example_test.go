package events_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/manager/internal/events"
)

// Events recorded between Start and Stop are written, stamped with the
// Manager's identity; Stop waits for the writes in flight.
func Example() {
	client := fake.NewClientset()
	recs := events.New(client, scheme.Scheme, klog.Background)
	recs.Start(klog.Background(), "replica-a")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}
	recs.For("web-controller").Eventf(pod, nil, corev1.EventTypeNormal, "Scaled", "Scaling", "to %d replicas", 3)

	// The broadcaster writes asynchronously.
	var list []string
	for deadline := time.Now().Add(10 * time.Second); len(list) == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		evs, err := client.EventsV1().Events("default").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, e := range evs.Items {
			list = append(list, fmt.Sprintf("%s %s %s: %s", e.ReportingController, e.ReportingInstance, e.Reason, e.Note))
		}
	}
	recs.Stop()
	fmt.Println(list)
	// Output: [web-controller replica-a Scaled: to 3 replicas]
}
