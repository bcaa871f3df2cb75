package testkit_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/testkit"
)

// backEnds are the two clusters a scenario runs on.
var backEnds = map[string]func(testing.TB) *testkit.Env{
	"fake":      func(t testing.TB) *testkit.Env { return testkit.NewFake(t).Env },
	"apiserver": func(t testing.TB) *testkit.Env { return testkit.SharedAPIServer(t) },
}

// code is an error's HTTP code and reason, "ok" for none: what the scenarios compare.
func code(err error) string {
	if err == nil {
		return "ok"
	}
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return "non-API error: " + err.Error()
	}
	return fmt.Sprintf("%d %s", st.Status().Code, st.Status().Reason)
}

func deployment(name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			},
		},
	}
}

// Written scenarios for the rules the fake's documentation claims, each run on the fake and on
// kube-apiserver with the outcomes compared (the random sequences of
// TestDifferentialFakeVersusAPIServer cover the combinations; these name the rules).
func TestFakeRulesMatchAPIServer(t *testing.T) {
	scenarios := map[string]func(ctx context.Context, t *testing.T, env *testkit.Env) []string{
		"create assigns identity, generation only where tracked": func(ctx context.Context, t *testing.T, env *testkit.Env) []string {
			cm, err := env.Client().CoreV1().ConfigMaps(env.Namespace()).Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{GenerateName: "gen-"}}, metav1.CreateOptions{})
			require.NoError(t, err)
			d, err := env.Client().AppsV1().Deployments(env.Namespace()).Create(ctx, deployment("d"), metav1.CreateOptions{})
			require.NoError(t, err)
			return []string{
				fmt.Sprint(strings.HasPrefix(cm.Name, "gen-") && len(cm.Name) == len("gen-")+5, cm.UID != "", !cm.CreationTimestamp.IsZero(), cm.Generation),
				fmt.Sprint(d.Generation, d.Status.Replicas),
			}
		},
		"create refuses a resourceVersion and a namespace mismatch": func(ctx context.Context, t *testing.T, env *testkit.Env) []string {
			cms := env.Client().CoreV1().ConfigMaps(env.Namespace())
			_, withRV := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "rv", ResourceVersion: "5"}}, metav1.CreateOptions{})
			_, otherNS := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ns", Namespace: "elsewhere"}}, metav1.CreateOptions{})
			_, twice := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "rv"}}, metav1.CreateOptions{})
			_, again := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "rv"}}, metav1.CreateOptions{})
			_, noName := cms.Create(ctx, &corev1.ConfigMap{}, metav1.CreateOptions{})
			return []string{code(withRV), code(otherNS), code(twice), code(again), code(noName)}
		},
		"status subresource: dropped on create, kept by update, only status through it": func(ctx context.Context, t *testing.T, env *testkit.Env) []string {
			deps := env.Client().AppsV1().Deployments(env.Namespace())
			in := deployment("s")
			in.Status.Replicas = 3
			d, err := deps.Create(ctx, in, metav1.CreateOptions{})
			require.NoError(t, err)
			out := []string{fmt.Sprint("created with status replicas ", d.Status.Replicas)}
			d.Status.Replicas = 2
			d.Spec.Replicas = ptr.To[int32](5)
			d, err = deps.UpdateStatus(ctx, d, metav1.UpdateOptions{})
			require.NoError(t, err)
			out = append(out, fmt.Sprint("status update: spec ", *d.Spec.Replicas, " status ", d.Status.Replicas, " generation ", d.Generation))
			d.Status.Replicas = 0
			d.Spec.Replicas = ptr.To[int32](4)
			d, err = deps.Update(ctx, d, metav1.UpdateOptions{})
			require.NoError(t, err)
			out = append(out, fmt.Sprint("update: spec ", *d.Spec.Replicas, " status ", d.Status.Replicas, " generation ", d.Generation))
			cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "none"}}}
			cmRes := env.Dynamic().Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(env.Namespace())
			cm, err = cmRes.Create(ctx, cm, metav1.CreateOptions{})
			require.NoError(t, err)
			_, err = cmRes.UpdateStatus(ctx, cm, metav1.UpdateOptions{})
			return append(out, "configmaps/status: "+code(err))
		},
		"a write that changes nothing is not written": func(ctx context.Context, t *testing.T, env *testkit.Env) []string {
			cms := env.Client().CoreV1().ConfigMaps(env.Namespace())
			cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "same"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
			require.NoError(t, err)
			again, err := cms.Update(ctx, cm, metav1.UpdateOptions{})
			require.NoError(t, err)
			patched, err := cms.Patch(ctx, "same", types.MergePatchType, []byte(`{"data":{"k":"v"}}`), metav1.PatchOptions{})
			require.NoError(t, err)
			return []string{fmt.Sprint(again.ResourceVersion == cm.ResourceVersion, patched.ResourceVersion == cm.ResourceVersion)}
		},
		"a Secret's stringData is written into data": func(ctx context.Context, t *testing.T, env *testkit.Env) []string {
			s, err := env.Client().CoreV1().Secrets(env.Namespace()).Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: "s"}, StringData: map[string]string{"password": "hunter2"}}, metav1.CreateOptions{})
			require.NoError(t, err)
			return []string{fmt.Sprint(string(s.Data["password"]), len(s.StringData), s.Type)}
		},
		"propagation policies set the garbage collector's finalizers": func(ctx context.Context, t *testing.T, env *testkit.Env) []string {
			cms := env.Client().CoreV1().ConfigMaps(env.Namespace())
			var out []string
			for _, policy := range []metav1.DeletionPropagation{metav1.DeletePropagationOrphan, metav1.DeletePropagationForeground, metav1.DeletePropagationBackground} {
				name := strings.ToLower(string(policy))
				_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
				require.NoError(t, err)
				require.NoError(t, cms.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &policy}))
				cm, err := cms.Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					out = append(out, string(policy)+": "+code(err))
					continue
				}
				out = append(out, fmt.Sprint(policy, ": ", cm.Finalizers, " deleting ", cm.DeletionTimestamp != nil))
				// A Background delete drops the garbage collector's finalizer: the object goes.
				require.NoError(t, cms.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}))
				_, err = cms.Get(ctx, name, metav1.GetOptions{})
				out = append(out, string(policy)+" then Background: "+code(err))
			}
			return out
		},
		"paginated lists": func(ctx context.Context, t *testing.T, env *testkit.Env) []string {
			cms := env.Client().CoreV1().ConfigMaps(env.Namespace())
			for _, n := range []string{"p1", "p2", "p3"} {
				_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"page": "yes"}}}, metav1.CreateOptions{})
				require.NoError(t, err)
			}
			var names []string
			opts := metav1.ListOptions{LabelSelector: "page=yes", Limit: 2}
			for {
				l, err := cms.List(ctx, opts)
				require.NoError(t, err)
				for _, i := range l.Items {
					names = append(names, i.Name)
				}
				if l.Continue == "" {
					break
				}
				opts.Continue = l.Continue
			}
			_, bad := cms.List(ctx, metav1.ListOptions{Continue: "not-a-token"})
			return []string{strings.Join(names, ","), code(bad)}
		},
		"DeleteCollection deletes, or marks what has finalizers": func(ctx context.Context, t *testing.T, env *testkit.Env) []string {
			cms := env.Client().CoreV1().ConfigMaps(env.Namespace())
			for _, cm := range []*corev1.ConfigMap{
				{ObjectMeta: metav1.ObjectMeta{Name: "plain", Labels: map[string]string{"batch": "x"}}},
				{ObjectMeta: metav1.ObjectMeta{Name: "guarded", Labels: map[string]string{"batch": "x"}, Finalizers: []string{"example.com/keep"}}},
				{ObjectMeta: metav1.ObjectMeta{Name: "other", Labels: map[string]string{"batch": "y"}}},
			} {
				_, err := cms.Create(ctx, cm, metav1.CreateOptions{})
				require.NoError(t, err)
			}
			require.NoError(t, cms.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "batch=x"}))
			l, err := cms.List(ctx, metav1.ListOptions{})
			require.NoError(t, err)
			var out []string
			for _, cm := range l.Items {
				if cm.Labels["batch"] != "" {
					out = append(out, fmt.Sprint(cm.Name, " deleting ", cm.DeletionTimestamp != nil))
				}
			}
			return out
		},
		"pods/binding assigns a Pod to a node once": func(ctx context.Context, t *testing.T, env *testkit.Env) []string {
			pods := env.Client().CoreV1().Pods(env.Namespace())
			_, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{})
			require.NoError(t, err)
			bind := func(node string) error {
				return pods.Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p"},
					Target: corev1.ObjectReference{Kind: "Node", Name: node}}, metav1.CreateOptions{})
			}
			first := bind("node-1")
			second := bind("node-2")
			p, err := pods.Get(ctx, "p", metav1.GetOptions{})
			require.NoError(t, err)
			scheduled := ""
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodScheduled {
					scheduled = string(c.Status)
				}
			}
			return []string{code(first), code(second), p.Spec.NodeName, string(p.Status.Phase), "PodScheduled=" + scheduled}
		},
		"a label change moves an object out of a watch's selector and back": func(ctx context.Context, t *testing.T, env *testkit.Env) []string {
			cms := env.Client().CoreV1().ConfigMaps(env.Namespace())
			l, err := cms.List(ctx, metav1.ListOptions{LabelSelector: "watched=yes"})
			require.NoError(t, err)
			w, err := cms.Watch(ctx, metav1.ListOptions{LabelSelector: "watched=yes", ResourceVersion: l.ResourceVersion})
			require.NoError(t, err)
			defer w.Stop()
			_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "w", Labels: map[string]string{"watched": "yes"}}}, metav1.CreateOptions{})
			require.NoError(t, err)
			for _, v := range []string{"no", "yes"} {
				_, err = cms.Patch(ctx, "w", types.MergePatchType, []byte(`{"metadata":{"labels":{"watched":"`+v+`"}}}`), metav1.PatchOptions{})
				require.NoError(t, err)
			}
			require.NoError(t, cms.Delete(ctx, "w", metav1.DeleteOptions{}))
			var out []string
			for len(out) < 4 {
				select {
				case ev := <-w.ResultChan():
					cm, _ := ev.Object.(*corev1.ConfigMap)
					require.NotNil(t, cm, "%s event with %T", ev.Type, ev.Object)
					out = append(out, string(ev.Type)+" watched="+cm.Labels["watched"])
				case <-time.After(30 * time.Second):
					t.Fatalf("events so far: %v", out)
				}
			}
			return out
		},
		"updates without a resourceVersion": func(ctx context.Context, t *testing.T, env *testkit.Env) []string {
			cms := env.Client().CoreV1().ConfigMaps(env.Namespace())
			_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "u"}}, metav1.CreateOptions{})
			require.NoError(t, err)
			_, cmErr := cms.Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "u"}, Data: map[string]string{"k": "v"}}, metav1.UpdateOptions{})
			leases := env.Client().CoordinationV1().Leases(env.Namespace())
			l, err := leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "l"}}, metav1.CreateOptions{})
			require.NoError(t, err)
			l.ResourceVersion = ""
			_, leaseErr := leases.Update(ctx, l, metav1.UpdateOptions{})
			return []string{"ConfigMap: " + code(cmErr), "Lease: " + code(leaseErr)}
		},
	}
	for name, scenario := range scenarios {
		t.Run(name, func(t *testing.T) {
			got := map[string][]string{}
			for backEnd, newEnv := range backEnds {
				env := newEnv(t)
				got[backEnd] = scenario(env.Context(), t, env)
			}
			assert.Equal(t, got["apiserver"], got["fake"], "the fake answers as kube-apiserver")
		})
	}
}

// What stays different on purpose (the fakecluster package doc lists it), each pinned on both
// back ends so that a change on either side is noticed.
func TestFakeDifferencesArePinned(t *testing.T) {
	differences := map[string]struct {
		run          func(ctx context.Context, t *testing.T, env *testkit.Env) string
		fake, server string
	}{
		"no validation of built-in kinds": {
			run: func(ctx context.Context, t *testing.T, env *testkit.Env) string {
				_, err := env.Client().CoreV1().ConfigMaps(env.Namespace()).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "Bad_Name"}}, metav1.CreateOptions{})
				return code(err)
			},
			fake: "ok", server: "422 Invalid",
		},
		"no defaulting of built-in kinds": {
			run: func(ctx context.Context, t *testing.T, env *testkit.Env) string {
				d, err := env.Client().AppsV1().Deployments(env.Namespace()).Create(ctx, deployment("defaults"), metav1.CreateOptions{})
				require.NoError(t, err)
				return string(d.Spec.Strategy.Type)
			},
			fake: "", server: string(appsv1.RollingUpdateDeploymentStrategyType),
		},
		"field selectors on any field": {
			run: func(ctx context.Context, t *testing.T, env *testkit.Env) string {
				_, err := env.Client().CoreV1().ConfigMaps(env.Namespace()).List(ctx, metav1.ListOptions{FieldSelector: "data.k=v"})
				return code(err)
			},
			fake: "ok", server: "400 BadRequest",
		},
		"no namespace existence check": {
			run: func(ctx context.Context, t *testing.T, env *testkit.Env) string {
				_, err := env.Client().CoreV1().ConfigMaps("no-such-namespace").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
				return code(err)
			},
			fake: "ok", server: "404 NotFound",
		},
		"pages cut from the objects as they are now": {
			run: func(ctx context.Context, t *testing.T, env *testkit.Env) string {
				cms := env.Client().CoreV1().ConfigMaps(env.Namespace())
				for _, n := range []string{"a", "b"} {
					_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"snap": "yes"}}, Data: map[string]string{"v": "old"}}, metav1.CreateOptions{})
					require.NoError(t, err)
				}
				first, err := cms.List(ctx, metav1.ListOptions{LabelSelector: "snap=yes", Limit: 1})
				require.NoError(t, err)
				_, err = cms.Patch(ctx, "b", types.MergePatchType, []byte(`{"data":{"v":"new"}}`), metav1.PatchOptions{})
				require.NoError(t, err)
				second, err := cms.List(ctx, metav1.ListOptions{LabelSelector: "snap=yes", Limit: 1, Continue: first.Continue})
				require.NoError(t, err)
				require.Len(t, second.Items, 1)
				return second.Items[0].Data["v"]
			},
			fake: "new", server: "old",
		},
	}
	for name, d := range differences {
		t.Run(name, func(t *testing.T) {
			for backEnd, newEnv := range backEnds {
				env := newEnv(t)
				want := map[string]string{"fake": d.fake, "apiserver": d.server}[backEnd]
				assert.Equal(t, want, d.run(env.Context(), t, env), backEnd)
			}
		})
	}
}
