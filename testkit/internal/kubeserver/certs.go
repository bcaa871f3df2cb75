package kubeserver

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/ctrlkit/ctrlkit/certwatcher"
)

// pki is the throw-away key material of one API server: a CA, a serving certificate signed by
// it, a service-account key pair and a bearer token for a system:masters user. Everything lives
// in dir and dies with it.
type pki struct {
	caPEM []byte // what clients trust

	servingCert string // --tls-cert-file
	servingKey  string // --tls-private-key-file
	saPublic    string // --service-account-key-file
	saPrivate   string // --service-account-signing-key-file
	tokenFile   string // --token-auth-file
	token       string // the admin's bearer token
}

// adminUser is the identity behind the token: system:masters bypasses RBAC, as a cluster admin
// does, so tests need no role bindings.
const adminUser = "ctrlkit-admin"

// newPKI writes the key material into dir. The TLS keys are ECDSA P-256 (certwatcher's, fast to
// generate); the service-account key is RSA because that is what every token consumer accepts.
func newPKI(dir string) (*pki, error) {
	p := &pki{
		servingCert: filepath.Join(dir, "serving.crt"),
		servingKey:  filepath.Join(dir, "serving.key"),
		saPublic:    filepath.Join(dir, "sa.pub"),
		saPrivate:   filepath.Join(dir, "sa.key"),
		tokenFile:   filepath.Join(dir, "tokens.csv"),
	}
	// The serving pair is certwatcher's throw-away pair, for the names clients in and out of
	// the cluster use.
	b, err := certwatcher.SelfSigned(certwatcher.SelfSignedOptions{
		Hosts:      []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "127.0.0.1", "::1"},
		CommonName: "kube-apiserver",
		Validity:   24 * time.Hour,
	})
	if err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	p.caPEM = b.CAPEM
	// The CA goes after the leaf so clients that only trust a bundle still see the chain.
	chain := append(slices.Clip(b.CertPEM), b.CAPEM...)
	if err := os.WriteFile(p.servingCert, chain, 0o600); err != nil {
		return nil, fmt.Errorf("write serving certificate: %w", err)
	}
	if err := os.WriteFile(p.servingKey, b.KeyPEM, 0o600); err != nil {
		return nil, fmt.Errorf("write serving key: %w", err)
	}

	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("generate service-account key: %w", err)
	}
	if err := writeKey(p.saPrivate, saKey); err != nil {
		return nil, err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(saKey.Public())
	if err != nil {
		return nil, fmt.Errorf("marshal service-account public key: %w", err)
	}
	if err := os.WriteFile(p.saPublic, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o600); err != nil {
		return nil, fmt.Errorf("write service-account public key: %w", err)
	}

	tok := make([]byte, 24)
	if _, err := rand.Read(tok); err != nil {
		return nil, fmt.Errorf("generate token: %w", err)
	}
	p.token = hex.EncodeToString(tok)
	// Token file format: token,user,uid,"group1,group2".
	line := fmt.Sprintf("%s,%s,%s-uid,\"system:masters\"\n", p.token, adminUser, adminUser)
	if err := os.WriteFile(p.tokenFile, []byte(line), 0o600); err != nil {
		return nil, fmt.Errorf("write token file: %w", err)
	}
	return p, nil
}

func writeKey(path string, key crypto.Signer) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("marshal key %s: %w", filepath.Base(path), err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return fmt.Errorf("write key %s: %w", filepath.Base(path), err)
	}
	return nil
}
