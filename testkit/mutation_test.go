package testkit_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/testkit"
)

// errorTB records Errorf and runs its cleanups when asked, so a test can check what an Env
// reports when it ends.
type errorTB struct {
	testing.TB
	mu       sync.Mutex
	errors   []string
	cleanups []func()
}

func (e *errorTB) Errorf(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.errors = append(e.errors, fmt.Sprintf(format, args...))
}

func (e *errorTB) Cleanup(f func()) { e.cleanups = append(e.cleanups, f) }

func (e *errorTB) end() []string {
	for i := len(e.cleanups) - 1; i >= 0; i-- {
		e.cleanups[i]()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.errors
}

// An Env fails its test when a cached object was changed in place, naming the object and field,
// at the latest when the test ends.
func TestEnvReportsMutatedCachedObjects(t *testing.T) {
	tb := &errorTB{TB: t}
	env := testkit.NewFake(tb, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "x", ResourceVersion: "1"},
		Data:       map[string]string{"k": "v"},
	})
	cms, err := informer.For[*corev1.ConfigMap](env.Factory())
	require.NoError(t, err)
	env.Sync()
	cm, err := cms.Lister().Get("default", "x")
	require.NoError(t, err)
	cm.Data["k"] = "changed" // the bug the detector is for
	errs := tb.end()
	require.Len(t, errs, 1, "reported once, by the periodic or the final check")
	require.Contains(t, errs[0], `cached ConfigMap "default/x" was changed in place at data["k"] ("v" -> "changed")`)
}
