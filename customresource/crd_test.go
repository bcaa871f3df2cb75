package customresource_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ctrlkit/ctrlkit/customresource"
	"github.com/ctrlkit/ctrlkit/examples/podset/api/v1alpha1"
)

// The fake has no apiextensions controller, so nothing ever sets a CRD's conditions.
// Tests play that controller: setConditions writes status.conditions into the tracker,
// as the API server's establishing controller does a moment after the create.
func setConditions(t *testing.T, dyn *dynamicfake.FakeDynamicClient, name string, conds ...map[string]any) {
	t.Helper()
	obj, err := dyn.Tracker().Get(customresource.CRDResource, "", name)
	require.NoError(t, err)
	u := obj.(*unstructured.Unstructured)
	list := make([]any, len(conds))
	for i, c := range conds {
		list[i] = c
	}
	require.NoError(t, unstructured.SetNestedSlice(u.Object, list, "status", "conditions"))
	require.NoError(t, dyn.Tracker().Update(customresource.CRDResource, u, ""))
}

func condition(typ, status string) map[string]any {
	return map[string]any{"type": typ, "status": status, "reason": "Test", "message": typ + " is " + status}
}

func verbs(dyn *dynamicfake.FakeDynamicClient) []string {
	var out []string
	for _, a := range dyn.Actions() {
		if a.GetResource() == customresource.CRDResource {
			out = append(out, a.GetVerb())
		}
	}
	return out
}

// ensureAsync runs EnsureCRDFromYAMLWithOptions on a fake clock in a goroutine and
// returns the channel of its result. Tests follow its progress through dyn.Actions()
// and move it on with clk.Step.
func ensureAsync(t *testing.T, ctx context.Context, dyn *dynamicfake.FakeDynamicClient, clk *clocktesting.FakeClock, opts customresource.EnsureCRDOptions) <-chan error {
	t.Helper()
	opts.Clock = clk
	done := make(chan error, 1)
	go func() { done <- customresource.EnsureCRDFromYAMLWithOptions(ctx, dyn, v1alpha1.CRDManifest, opts) }()
	return done
}

func TestEnsureCRDCreatesOnceAndWaitsForEstablished(t *testing.T) {
	ctx := context.Background()
	dyn := newFake(t)
	clk := clocktesting.NewFakeClock(time.Unix(1700000000, 0))
	done := ensureAsync(t, ctx, dyn, clk, customresource.EnsureCRDOptions{PollInterval: time.Second})

	// The CRD appears without conditions; the call polls.
	require.Eventually(t, func() bool { return len(verbs(dyn)) >= 2 }, 10*time.Second, time.Millisecond)
	require.Equal(t, []string{"get", "create"}, verbs(dyn))
	created, err := dyn.Tracker().Get(customresource.CRDResource, "", v1alpha1.CRDName) // records no action
	require.NoError(t, err)
	group, _, _ := unstructured.NestedString(created.(*unstructured.Unstructured).Object, "spec", "group")
	require.Equal(t, v1alpha1.GroupName, group, "the manifest's CRD is what was created")

	// Still not established at the next poll.
	setConditions(t, dyn, v1alpha1.CRDName, condition("NamesAccepted", "True"), condition("Established", "False"))
	clk.Step(time.Second)
	require.Eventually(t, func() bool { return len(verbs(dyn)) >= 3 }, 10*time.Second, time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("returned before Established: %v", err)
	default:
	}

	setConditions(t, dyn, v1alpha1.CRDName, condition("NamesAccepted", "True"), condition("Established", "True"))
	require.Eventually(t, func() bool { return clk.HasWaiters() }, 10*time.Second, time.Millisecond)
	clk.Step(time.Second)
	require.NoError(t, <-done)
	require.Equal(t, []string{"get", "create", "get", "get"}, verbs(dyn))

	// Idempotent: a second call finds the CRD established and neither creates nor waits.
	dyn.ClearActions()
	require.NoError(t, customresource.EnsureCRDFromYAMLWithOptions(ctx, dyn, v1alpha1.CRDManifest, customresource.EnsureCRDOptions{Clock: clk}))
	require.Equal(t, []string{"get"}, verbs(dyn))
}

func TestEnsureCRDTimesOut(t *testing.T) {
	dyn := newFake(t)
	clk := clocktesting.NewFakeClock(time.Unix(1700000000, 0))
	done := ensureAsync(t, context.Background(), dyn, clk, customresource.EnsureCRDOptions{PollInterval: time.Second, Timeout: 5 * time.Second})
	require.Eventually(t, func() bool { return len(verbs(dyn)) >= 2 }, 10*time.Second, time.Millisecond)
	clk.Step(5 * time.Second)
	err := <-done
	require.ErrorIs(t, err, customresource.ErrCRDNotEstablished)
	require.ErrorContains(t, err, `CustomResourceDefinition "podsets.examples.ctrlkit.dev" not established within 5s`)
}

func TestEnsureCRDStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	dyn := newFake(t)
	clk := clocktesting.NewFakeClock(time.Unix(1700000000, 0))
	done := ensureAsync(t, ctx, dyn, clk, customresource.EnsureCRDOptions{})
	require.Eventually(t, func() bool { return len(verbs(dyn)) >= 2 }, 10*time.Second, time.Millisecond)
	cancel()
	err := <-done
	require.ErrorIs(t, err, customresource.ErrCRDNotEstablished)
	require.ErrorIs(t, err, context.Canceled)
}

func TestEnsureCRDFailsFastWhenNamesAreRefused(t *testing.T) {
	ctx := context.Background()
	crd := parseManifest(t)
	crd.Object["status"] = map[string]any{"conditions": []any{
		condition("NamesAccepted", "False"), condition("Established", "False"),
	}}
	dyn := newFake(t, crd)
	// No clock steps: the answer must come without waiting.
	err := customresource.EnsureCRDFromYAMLWithOptions(ctx, dyn, v1alpha1.CRDManifest, customresource.EnsureCRDOptions{Clock: clocktesting.NewFakeClock(time.Now())})
	require.ErrorIs(t, err, customresource.ErrCRDNotEstablished)
	require.ErrorContains(t, err, "names not accepted: Test NamesAccepted is False")
	require.Equal(t, []string{"get"}, verbs(dyn))
}

func TestEnsureCRDLosesTheCreateRaceGracefully(t *testing.T) {
	ctx := context.Background()
	dyn := newFake(t)
	// Another installer creates the CRD between our Get and our Create.
	dyn.PrependReactor("create", "customresourcedefinitions", func(a clienttesting.Action) (bool, runtime.Object, error) {
		crd := parseManifest(t)
		crd.Object["status"] = map[string]any{"conditions": []any{condition("Established", "True")}}
		require.NoError(t, dyn.Tracker().Add(crd))
		return true, nil, apierrors.NewAlreadyExists(schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}, v1alpha1.CRDName)
	})
	clk := clocktesting.NewFakeClock(time.Unix(1700000000, 0))
	done := ensureAsync(t, ctx, dyn, clk, customresource.EnsureCRDOptions{PollInterval: time.Second})
	require.Eventually(t, func() bool { return len(verbs(dyn)) >= 2 && clk.HasWaiters() }, 10*time.Second, time.Millisecond)
	clk.Step(time.Second)
	require.NoError(t, <-done)
	require.Equal(t, []string{"get", "create", "get"}, verbs(dyn))
}

func TestEnsureCRDReportsAPIErrors(t *testing.T) {
	ctx := context.Background()
	for _, verb := range []string{"get", "create"} {
		t.Run(verb, func(t *testing.T) {
			dyn := newFake(t)
			dyn.PrependReactor(verb, "customresourcedefinitions", func(clienttesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}, v1alpha1.CRDName, errors.New("no RBAC"))
			})
			err := customresource.EnsureCRDFromYAML(ctx, dyn, v1alpha1.CRDManifest)
			require.True(t, apierrors.IsForbidden(err), "got %v", err)
			require.ErrorContains(t, err, verb+` CustomResourceDefinition "podsets.examples.ctrlkit.dev"`)
		})
	}
}

// A poll that fails is retried; the CRD being readable again ends the wait.
func TestEnsureCRDRetriesAFailedPoll(t *testing.T) {
	ctx := context.Background()
	dyn := newFake(t)
	clk := clocktesting.NewFakeClock(time.Unix(1700000000, 0))
	// Reactors run under the fake's lock, so count here instead of calling Actions().
	var gets atomic.Int32
	dyn.PrependReactor("get", "customresourcedefinitions", func(clienttesting.Action) (bool, runtime.Object, error) {
		if gets.Add(1) == 2 { // the first poll after the create
			return true, nil, apierrors.NewServiceUnavailable("etcd is having a moment")
		}
		return false, nil, nil
	})
	done := ensureAsync(t, ctx, dyn, clk, customresource.EnsureCRDOptions{PollInterval: time.Second})
	require.Eventually(t, func() bool { return len(verbs(dyn)) >= 2 && clk.HasWaiters() }, 10*time.Second, time.Millisecond)
	clk.Step(time.Second) // poll 1 fails
	require.Eventually(t, func() bool { return len(verbs(dyn)) >= 3 && clk.HasWaiters() }, 10*time.Second, time.Millisecond)
	setConditions(t, dyn, v1alpha1.CRDName, condition("Established", "True"))
	clk.Step(time.Second) // poll 2 succeeds
	require.NoError(t, <-done)
}

func TestEnsureCRDRefusesBadManifests(t *testing.T) {
	cases := map[string]string{
		"empty":            "",
		"only comments":    "# nothing\n---\n# here\n",
		"not yaml":         "{{{",
		"not an object":    "- a\n- b\n",
		"no kind":          "apiVersion: apiextensions.k8s.io/v1\nmetadata:\n  name: x\n",
		"wrong kind":       "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
		"old apiVersion":   "apiVersion: apiextensions.k8s.io/v1beta1\nkind: CustomResourceDefinition\nmetadata:\n  name: x\n",
		"no name":          "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {}\n",
		"two documents":    string(v1alpha1.CRDManifest) + "\n---\n" + string(v1alpha1.CRDManifest),
		"binary":           "\x00\xff\xfe",
		"tab indentation":  "apiVersion: v1\n\tkind: x\n",
		"metadata is list": "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: [1]\n",
	}
	for name, manifest := range cases {
		t.Run(name, func(t *testing.T) {
			dyn := newFake(t)
			err := customresource.EnsureCRDFromYAML(context.Background(), dyn, []byte(manifest))
			require.ErrorIs(t, err, customresource.ErrInvalidManifest)
			require.Empty(t, dyn.Actions(), "nothing is sent for a bad manifest")
		})
	}
	require.ErrorIs(t, customresource.EnsureCRDFromYAML(context.Background(), nil, v1alpha1.CRDManifest), customresource.ErrInvalidInput)
}

// The manifest may be JSON, and may carry separators and comments around its document.
func TestEnsureCRDAcceptsJSONAndSeparators(t *testing.T) {
	crd := parseManifest(t)
	js, err := crd.MarshalJSON()
	require.NoError(t, err)
	for name, manifest := range map[string][]byte{
		"json":       js,
		"separators": append([]byte("# PodSet\n---\n"), append(v1alpha1.CRDManifest, []byte("\n---\n")...)...),
	} {
		t.Run(name, func(t *testing.T) {
			established := parseManifest(t)
			established.Object["status"] = map[string]any{"conditions": []any{condition("Established", "True")}}
			require.NoError(t, customresource.EnsureCRDFromYAML(context.Background(), newFake(t, established), manifest))
		})
	}
}

func parseManifest(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	js, err := yamlToJSON(v1alpha1.CRDManifest)
	require.NoError(t, err)
	require.NoError(t, u.UnmarshalJSON(js))
	return u
}
