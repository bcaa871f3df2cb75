// Package demo holds the few lines every example's main shares: choosing between a real cluster
// and the in-memory one (Kubeconfig, RESTConfig), a klog text logger for contextual logging
// (NewLogger), and waiting for a demo to converge (Await).
//
//	if path := demo.Kubeconfig(kubeconfigFlag); path != "" {
//		cfg, err := demo.RESTConfig(path) // a real cluster
//		...
//	} else {
//		cluster, err := fakecluster.New(seed...) // the in-memory cluster: cluster.Clientset()
//		...
//	}
package demo
