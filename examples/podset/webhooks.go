package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/ctrlkit/ctrlkit/certwatcher"
	"github.com/ctrlkit/ctrlkit/examples/internal/demo"
	"github.com/ctrlkit/ctrlkit/examples/podset/podsetwebhook"
	"github.com/ctrlkit/ctrlkit/webhook"
)

// webhookOptions are the flags of the PodSet webhooks (defaulting, validation, conversion).
type webhookOptions struct {
	addr    string // --webhook-addr: serve the webhooks here; "" means none
	certDir string // --webhook-cert-dir: tls.crt, tls.key (and ca.crt); "" means a throw-away pair
	url     string // --webhook-url: where the API server reaches them; set means install
}

func (w *webhookOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&w.addr, "webhook-addr", "", `serve the PodSet webhooks (defaulting, validation, conversion) on this host:port ("" serves none)`)
	fs.StringVar(&w.certDir, "webhook-cert-dir", "", "directory of the webhooks' tls.crt and tls.key (and ca.crt, the caBundle, with --webhook-url), reloaded when they change; default a throw-away self-signed pair")
	fs.StringVar(&w.url, "webhook-url", "", "https base URL the API server reaches --webhook-addr at; when set, the webhook configurations and the two-version CRD are installed or updated to call it")
}

func (w *webhookOptions) complete(inMemory bool) error {
	switch {
	case w.addr == "" && (w.certDir != "" || w.url != ""):
		return errors.New("--webhook-cert-dir and --webhook-url need --webhook-addr")
	case w.addr != "" && inMemory:
		return errors.New("--webhook-addr needs a cluster (--kubeconfig): the in-memory cluster calls no webhook")
	}
	if err := demo.CheckAddr("--webhook-addr", w.addr); err != nil {
		return err
	}
	// With --webhook-url the webhook configurations carry ca.crt as their caBundle.
	if err := demo.CheckCertDir("--webhook-cert-dir", w.certDir, w.url != ""); err != nil {
		return err
	}
	if w.url != "" {
		u, err := url.Parse(w.url)
		if err != nil || u.Scheme != "https" || u.Host == "" || (u.Path != "" && u.Path != "/") {
			return fmt.Errorf("--webhook-url %q: want https://host[:port]", w.url)
		}
	}
	return nil
}

// setup serves the webhooks on env's Manager and, with --webhook-url, installs them.
func (w *webhookOptions) setup(ctx context.Context, env *demo.Env, namespace string) error {
	if w.addr == "" {
		return nil
	}
	logger := klog.FromContext(ctx)
	dir, caBundle := w.certDir, []byte(nil)
	if dir == "" {
		hosts := certwatcher.DefaultHosts
		if w.url != "" {
			u, _ := url.Parse(w.url) // checked by complete
			hosts = append([]string{u.Hostname()}, hosts...)
		}
		b, err := certwatcher.SelfSigned(certwatcher.SelfSignedOptions{Hosts: hosts})
		if err != nil {
			return err
		}
		if dir, err = os.MkdirTemp("", "podset-webhook-certs-"); err != nil {
			return err
		}
		if err := b.WriteFiles(dir); err != nil {
			return err
		}
		caBundle = b.CAPEM
		logger.Info("Serving the webhooks with a throw-away self-signed certificate", "certDir", dir, "hosts", hosts)
	} else if w.url != "" {
		var err error
		if caBundle, err = os.ReadFile(filepath.Join(dir, certwatcher.CAFileName)); err != nil {
			return fmt.Errorf("--webhook-url needs the caBundle, %s in --webhook-cert-dir: %w", certwatcher.CAFileName, err)
		}
	}
	srv, err := webhook.NewServer(webhook.ServerOptions{Addr: w.addr, CertDir: dir, Registerer: env.Manager.Registerer()})
	if err != nil {
		return err
	}
	if err := podsetwebhook.Register(srv); err != nil {
		return err
	}
	if err := webhook.AddToManager(env.Manager, srv); err != nil {
		return err
	}
	if w.url == "" {
		return nil
	}
	return demo.UntilAnswered(ctx, "installing the PodSet webhooks", func(ctx context.Context) error {
		return podsetwebhook.Install(ctx, env.Client, env.Dynamic, podsetwebhook.InstallOptions{
			URL: w.url, CABundle: caBundle, Namespace: namespace,
		})
	})
}
