package memcluster_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/controller/controllertest/memcluster"
)

// A Pod created with generateName gets a name, a UID and a resourceVersion, as from an API
// server; the plain fake clientset would store it nameless.
func ExampleNew() {
	client, err := memcluster.New()
	if err != nil {
		panic(err)
	}
	pod, err := client.CoreV1().Pods("default").Create(context.Background(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "web-", Namespace: "default"},
	}, metav1.CreateOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Println(len(pod.Name) == len("web-")+5, pod.UID != "", pod.ResourceVersion != "", pod.Status.Phase)
	// Output: true true true Pending
}
