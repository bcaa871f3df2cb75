package manager_test

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/ctrlkit/ctrlkit/manager"
)

// A main registers the Manager's flags, parses them, and exits 2 on a malformed value, naming
// the flag; Options then loads the cluster's config (here, with --kube-api-qps) and New builds
// the Manager.
func ExampleFlags() {
	var flags manager.Flags
	flags.LeaderElection.Name = "my-controller" // the Lease; --leader-elect-resource-name
	fs := pflag.NewFlagSet("my-controller", pflag.ContinueOnError)
	flags.AddFlags(fs)
	// os.Args[1:] in a main.
	if err := fs.Parse([]string{"--kube-api-qps=NaN"}); err != nil {
		os.Exit(2)
	}
	if err := flags.Validate(); err != nil {
		fmt.Println(err) // and os.Exit(2)
	}

	kubeconfig := exampleKubeconfig()
	defer os.Remove(kubeconfig)
	_ = fs.Parse([]string{"--kube-api-qps=20", "--kube-api-burst=30", "--kubeconfig=" + kubeconfig})
	opts, err := flags.Options() // Validate, then the config
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(opts.Config.Host, opts.Config.QPS, opts.Config.Burst, opts.MetricsAddr)
	// mgr, err := manager.New(opts) and so on.

	// Output:
	// --kube-api-qps NaN: want a finite number of requests per second, or 0 for no client-side limit
	// https://prod.example:6443 20 30 :8080
}

// exampleKubeconfig writes a kubeconfig for the example, as kubectl's would be.
func exampleKubeconfig() string {
	f, _ := os.CreateTemp("", "kubeconfig")
	defer f.Close()
	_, _ = f.WriteString(`apiVersion: v1
kind: Config
clusters: [{name: prod, cluster: {server: "https://prod.example:6443"}}]
users: [{name: me, user: {token: secret}}]
contexts: [{name: prod, context: {cluster: prod, user: me}}]
current-context: prod
`)
	return f.Name()
}
