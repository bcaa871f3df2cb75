package certwatcher_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ctrlkit/ctrlkit/certwatcher"
)

// A throw-away CA and serving certificate for a Service's DNS name, written as the files of a
// kubernetes.io/tls Secret.
func ExampleSelfSigned() {
	b, err := certwatcher.SelfSigned(certwatcher.SelfSignedOptions{
		Hosts: []string{"metrics.my-system.svc", "127.0.0.1"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	dir, err := os.MkdirTemp("", "certs")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	if err := b.WriteFiles(dir); err != nil {
		fmt.Println(err)
		return
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		fmt.Println(e.Name())
	}
	fmt.Println(b.Certificate.Leaf.DNSNames, b.Certificate.Leaf.IPAddresses)
	// Output:
	// ca.crt
	// tls.crt
	// tls.key
	// [metrics.my-system.svc] [127.0.0.1]
}

// A server's certificate from files that are replaced while it runs: Start watches them,
// GetCertificate hands the current pair to every handshake.
func ExampleCertWatcher() {
	dir, err := os.MkdirTemp("", "certs")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	b, _ := certwatcher.SelfSigned(certwatcher.SelfSignedOptions{Hosts: []string{"webhook.example"}})
	_ = b.WriteFiles(dir)

	w, err := certwatcher.New(certwatcher.Options{
		CertFile: filepath.Join(dir, certwatcher.CertFileName),
		KeyFile:  filepath.Join(dir, certwatcher.KeyFileName),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = w.Start(ctx) })
	defer wg.Wait() // the owner stops the watcher and waits for it
	defer cancel()

	cfg := &tls.Config{GetCertificate: w.GetCertificate, MinVersion: tls.VersionTLS12}
	cert, _ := cfg.GetCertificate(&tls.ClientHelloInfo{ServerName: "webhook.example"})
	fmt.Println(cert.Leaf.DNSNames)
	// Output:
	// [webhook.example]
}

// A callback told of each new pair (here the rotation a cert-manager renewal would make), and
// the read metrics on a registry of the caller's.
func ExampleCertWatcher_RegisterCallback() {
	dir, err := os.MkdirTemp("", "certs")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	first, _ := certwatcher.SelfSigned(certwatcher.SelfSignedOptions{Hosts: []string{"v1.example"}})
	second, _ := certwatcher.SelfSigned(certwatcher.SelfSignedOptions{Hosts: []string{"v2.example"}})
	_ = first.WriteFiles(dir)

	reg := prometheus.NewRegistry()
	w, err := certwatcher.New(certwatcher.Options{
		CertFile:   filepath.Join(dir, certwatcher.CertFileName),
		KeyFile:    filepath.Join(dir, certwatcher.KeyFileName),
		Registerer: reg,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	reloaded := make(chan []string, 1)
	w.RegisterCallback(func(c tls.Certificate) { reloaded <- c.Leaf.DNSNames })
	fmt.Println("serving", <-reloaded) // the served pair is handed over at once

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = w.Start(ctx) })
	defer wg.Wait()
	defer cancel()

	_ = second.WriteFiles(dir)
	fmt.Println("reloaded", <-reloaded) // a notification, or the next tick at the latest

	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		fmt.Println(mf.GetName())
	}
	// Output:
	// serving [v1.example]
	// reloaded [v2.example]
	// certwatcher_read_certificate_errors_total
	// certwatcher_read_certificate_total
}
