package rbactest_test

import (
	"fmt"

	"github.com/ctrlkit/ctrlkit/examples/internal/rbactest"
)

// Load reads and checks a deploy directory's files before anything is applied.
func ExampleLoad() {
	m, err := rbactest.Load("testdata/deploy.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.Namespace, m.ServiceAccount, len(m.Objects))
	c := m.Deployment.Spec.Template.Spec.Containers[0]
	fmt.Println(*c.SecurityContext.ReadOnlyRootFilesystem, c.SecurityContext.Capabilities.Drop)
	// Output:
	// ops widget-controller 6
	// true [ALL]
}

// What a binary logs when RBAC refuses it a request: the API server's message names the user,
// the verb, the resource and its group.
func ExampleForbiddenMessage() {
	fmt.Println(rbactest.ForbiddenMessage("system:serviceaccount:ops:widget-controller", "update", "podsets/status", "examples.ctrlkit.dev"))
	// Output:
	// is forbidden: User "system:serviceaccount:ops:widget-controller" cannot update resource "podsets/status" in API group "examples.ctrlkit.dev"
}
