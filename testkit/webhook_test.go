package testkit_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/ctrlkit/ctrlkit/certwatcher"
	"github.com/ctrlkit/ctrlkit/testkit"
)

func TestWebhookCertsServe127001(t *testing.T) {
	dir, b := testkit.WebhookCerts(t)
	for _, name := range []string{certwatcher.CertFileName, certwatcher.KeyFileName, certwatcher.CAFileName} {
		_, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err)
	}
	require.NoError(t, b.Certificate.Leaf.VerifyHostname("127.0.0.1"))
}

// A fake cluster calls no webhook: installing one is an error, not a silent no-op.
func TestWebhooksNeedAnAPIServer(t *testing.T) {
	env := testkit.NewFake(t)
	_, b := testkit.WebhookCerts(t)
	s := testkit.WebhookServer{URL: "https://127.0.0.1:1", CABundle: b.CAPEM}
	_, err := env.InstallValidatingWebhook(s, &admissionregistrationv1.ValidatingWebhookConfiguration{})
	assert.ErrorContains(t, err, "webhooks need an API server Env")
	_, err = env.InstallMutatingWebhook(s, &admissionregistrationv1.MutatingWebhookConfiguration{})
	assert.ErrorContains(t, err, "webhooks need an API server Env")
	assert.ErrorContains(t, env.SetCRDConversion("podsets.examples.ctrlkit.dev", s, "/convert"), "webhooks need an API server Env")
}
