package bench

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/ctrlkit/ctrlkit/testkit"
)

// The ReplicaSet controller side by side with kube-controller-manager's own, issue 51's
// measurement: examples/replicaset and kube-controller-manager (built by
// `WITH_KCM=1 bash hack/install-kube.sh`; without it the benchmark is skipped) each run as a
// process of its own with kube-controller-manager's defaults (QPS 20, burst 30, 5 workers, no
// leader election, no HTTP serving), each op on a fresh kube-apiserver, against one workload:
// 50 ReplicaSets of 10 Pods created, converged, scaled to 1, converged (no kubelet: the Pods
// stay Pending; converged means status.replicas and the Pods the API server holds are the
// spec's).
//
//	cd hack/bench && go test -c -o /tmp/bench.test . &&
//	/tmp/bench.test -test.run '^$' -test.bench ReplicaSetVersusKCM -test.benchtime 1x -test.count 4
//
// ns/op is the workload's time (the process's start and cache sync included); cpu-s/op the
// process's user and system CPU from start to exit, and peak-rss-MB its maximum resident set.
// Each run of the binary runs one pair, ctrlkit then kube-controller-manager: loop over runs
// for pairs (-test.count repeats one implementation before the other). With
// CTRLKIT_BENCH_PROFILE=<dir>, each process's CPU profile of the workload (its
// /debug/pprof/profile, served on a loopback port) is written to <dir>/<impl>-<n>.cpu.prof,
// and its allocations from its start to the workload's end (/debug/pprof/allocs) to
// <dir>/<impl>-<n>.allocs.prof.
const (
	kcmSets     = 50
	kcmReplicas = 10
)

func BenchmarkReplicaSetVersusKCM(b *testing.B) {
	dir := os.Getenv("CTRLKIT_KUBE_DIR")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "ctrlkit", "kube", "v1.37.2")
	}
	kcm := filepath.Join(dir, "kube-controller-manager")
	if _, err := os.Stat(kcm); err != nil {
		b.Skipf("no kube-controller-manager at %s: build it with WITH_KCM=1 bash hack/install-kube.sh", kcm)
	}
	bin := filepath.Join(b.TempDir(), "replicaset")
	if out, err := exec.Command("go", "build", "-o", bin, "../../examples/replicaset").CombinedOutput(); err != nil {
		b.Fatalf("building examples/replicaset: %v\n%s", err, out)
	}
	profiles := os.Getenv("CTRLKIT_BENCH_PROFILE")
	impls := []struct {
		name string
		args func(kubeconfig string) []string
		bin  string
		// pprof is the URL of the process's /debug/pprof/, with the flags that serve it.
		pprof string
		serve []string
	}{
		{"ctrlkit", func(kc string) []string {
			return []string{"--kubeconfig=" + kc, "--leader-elect=false", "--health-addr=",
				"--kube-api-qps=20", "--kube-api-burst=30", "--workers=5"}
		}, bin, "http://127.0.0.1:18080/debug/pprof/", []string{"--profiling", "--metrics-secure=false", "--metrics-addr=127.0.0.1:18080"}},
		{"kube-controller-manager", func(kc string) []string {
			return []string{"--kubeconfig=" + kc, "--leader-elect=false", "--controllers=replicaset-controller",
				"--kube-api-qps=20", "--kube-api-burst=30", "--concurrent-replicaset-syncs=5"}
		}, kcm, "https://127.0.0.1:18257/debug/pprof/", []string{"--secure-port=18257", "--bind-address=127.0.0.1",
			"--authentication-skip-lookup", "--authorization-always-allow-paths=/debug/pprof,/debug/pprof/*"}},
	}
	for _, im := range impls {
		b.Run("impl="+im.name, func(b *testing.B) {
			var cpu, rss float64
			ops := 0
			for b.Loop() {
				b.StopTimer()
				env := testkit.NewAPIServer(b)
				kc := writeKubeconfig(b, env)
				ctx, cancel := context.WithCancel(context.Background())
				args := im.args(kc)
				switch {
				case profiles != "":
					args = append(args, im.serve...)
				case im.name == "ctrlkit":
					args = append(args, "--metrics-addr=")
				default:
					args = append(args, "--secure-port=0")
				}
				cmd := exec.CommandContext(ctx, im.bin, args...)
				cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
				cmd.WaitDelay = 30 * time.Second
				logs, err := os.Create(filepath.Join(b.TempDir(), im.name+".log"))
				if err != nil {
					b.Fatal(err)
				}
				cmd.Stdout, cmd.Stderr = logs, logs
				b.StartTimer()
				if err := cmd.Start(); err != nil {
					b.Fatal(err)
				}
				profiled := make(chan struct{})
				if profiles != "" {
					go func() {
						defer close(profiled)
						fetchProfile(ctx, im.pprof+"profile?seconds=50", filepath.Join(profiles, fmt.Sprintf("%s-%d.cpu.prof", im.name, ops)))
					}()
				} else {
					close(profiled)
				}
				runKCMWorkload(b, env.Client(), env.Namespace())
				b.StopTimer()
				if profiles != "" {
					fetchProfile(ctx, im.pprof+"allocs", filepath.Join(profiles, fmt.Sprintf("%s-%d.allocs.prof", im.name, ops)))
				}
				<-profiled
				cancel()
				_ = cmd.Wait()
				_ = logs.Close()
				st := cmd.ProcessState
				if st == nil {
					b.Fatalf("%s did not run; log in %s", im.name, logs.Name())
				}
				cpu += (st.UserTime() + st.SystemTime()).Seconds()
				if ru, ok := st.SysUsage().(*syscall.Rusage); ok && runtime.GOOS == "linux" {
					rss += float64(ru.Maxrss) / 1024 // kilobytes on Linux
				}
				ops++
				b.StartTimer()
			}
			b.ReportMetric(cpu/float64(ops), "cpu-s/op")
			b.ReportMetric(rss/float64(ops), "peak-rss-MB")
		})
	}
}

// fetchProfile saves the profile at url, retrying while the process is starting.
func fetchProfile(ctx context.Context, url, path string) {
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a loopback benchmark
	for ctx.Err() == nil {
		resp, err := client.Get(url)
		if err != nil {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		defer resp.Body.Close()
		f, err := os.Create(path)
		if err != nil {
			return
		}
		defer f.Close()
		_, _ = io.Copy(f, resp.Body)
		return
	}
}

// writeKubeconfig writes env's admin credentials as a kubeconfig file for a process.
func writeKubeconfig(b *testing.B, env *testkit.Env) string {
	cfg := env.Config()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData, TLSServerName: cfg.ServerName}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken, ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "c"
	path := filepath.Join(b.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		b.Fatal(err)
	}
	return path
}

// runKCMWorkload creates the ReplicaSets, waits for them, scales them to 1 and waits again.
func runKCMWorkload(b *testing.B, cs kubernetes.Interface, ns string) {
	ctx := context.Background()
	for i := range kcmSets {
		name := "rs-" + strconv.Itoa(i)
		sel := map[string]string{"set": name}
		rs := &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](kcmReplicas), Selector: &metav1.LabelSelector{MatchLabels: sel},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10",
						Resources: corev1.ResourceRequirements{}}}}}},
		}
		if _, err := cs.AppsV1().ReplicaSets(ns).Create(ctx, rs, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	awaitReplicaSets(b, cs, ns, kcmReplicas)
	for i := range kcmSets {
		patch := []byte(`{"spec":{"replicas":1}}`)
		if _, err := cs.AppsV1().ReplicaSets(ns).Patch(ctx, "rs-"+strconv.Itoa(i), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	awaitReplicaSets(b, cs, ns, 1)
}

// awaitReplicaSets polls the API server until every ReplicaSet of ns reports want replicas
// for its current generation and ns holds want live Pods of each.
func awaitReplicaSets(b *testing.B, cs kubernetes.Interface, ns string, want int32) {
	ctx := context.Background()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		ok, err := replicaSetsConverged(ctx, cs, ns, want)
		if err != nil {
			b.Fatal(err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("ReplicaSets of %s did not reach %d replicas in 5 minutes", ns, want)
		}
		time.Sleep(100 * time.Millisecond) // polling more often would load the server the controllers use
	}
}

func replicaSetsConverged(ctx context.Context, cs kubernetes.Interface, ns string, want int32) (bool, error) {
	rss, err := cs.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err
	}
	if len(rss.Items) != kcmSets {
		return false, fmt.Errorf("%d ReplicaSets in %s, want %d", len(rss.Items), ns, kcmSets)
	}
	for _, rs := range rss.Items {
		if rs.Status.Replicas != want || rs.Status.ObservedGeneration != rs.Generation {
			return false, nil
		}
	}
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err
	}
	live := 0
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			live++
		}
	}
	return live == kcmSets*int(want), nil
}
