package crcluster_test

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ctrlkit/ctrlkit/examples/podset/internal/crcluster"
)

// A status update through the fake changes only the status and leaves generation alone, as
// the status subresource of an API server does; a spec update bumps generation.
func ExampleNew() {
	ctx := context.Background()
	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	dyn, err := crcluster.New(map[schema.GroupVersionResource]string{gvr: "WidgetList"}, widget("w", 1))
	if err != nil {
		fmt.Println(err)
		return
	}
	widgets := dyn.Resource(gvr).Namespace("default")
	w, _ := widgets.Get(ctx, "w", metav1.GetOptions{})

	st := w.DeepCopy()
	st.Object["status"] = map[string]any{"seen": int64(1)}
	st.Object["spec"] = map[string]any{"size": int64(99)} // ignored by /status
	st, _ = widgets.UpdateStatus(ctx, st, metav1.UpdateOptions{})
	fmt.Println(st.Object["spec"], st.Object["status"], st.GetGeneration())

	st.Object["spec"] = map[string]any{"size": int64(2)}
	up, _ := widgets.Update(ctx, st, metav1.UpdateOptions{})
	fmt.Println(up.Object["spec"], up.GetGeneration())
	// Output:
	// map[size:1] map[seen:1] 1
	// map[size:2] 2
}
