// Package kubeserver runs a throw-away etcd and kube-apiserver on loopback for testkit's
// real-API-server Env: it finds the binaries hack/install-kube.sh builds (FindBinaries), writes
// fresh key material (a CA, a serving certificate, a service-account key and an admin token),
// starts both processes and waits until they answer healthy, restarts kube-apiserver on the same
// etcd, and stops and reaps them. On Linux the children die with the test binary (Pdeathsig).
//
// It is internal: tests reach it through testkit.NewAPIServer and SharedAPIServer.
package kubeserver
