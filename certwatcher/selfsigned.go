package certwatcher

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/utils/clock"
)

// The file names of a kubernetes.io/tls Secret, which WriteFiles writes and which
// controller-runtime's CertName and KeyName default to.
const (
	CertFileName = "tls.crt"
	KeyFileName  = "tls.key"
	CAFileName   = "ca.crt"
)

// DefaultHosts are the names SelfSigned certifies when SelfSignedOptions.Hosts is empty.
var DefaultHosts = []string{"localhost", "127.0.0.1", "::1"}

// SelfSignedOptions configure SelfSigned.
type SelfSignedOptions struct {
	// Hosts are the DNS names and IP addresses the serving certificate is valid for (an entry
	// that parses as an IP is an IP SAN, else a DNS SAN). Empty means DefaultHosts.
	Hosts []string
	// CommonName is the serving certificate's subject CN. "" means the first host.
	CommonName string
	// Validity is how long both certificates are valid from now. 0 means one year.
	Validity time.Duration
	// Clock gives "now". nil means the real clock.
	Clock clock.PassiveClock
}

// Bundle is a CA and a serving certificate signed by it, in PEM and ready to serve.
type Bundle struct {
	// CAPEM is the CA certificate: what a client trusts to verify Certificate.
	CAPEM []byte
	// CertPEM and KeyPEM are the serving certificate and its private key (PKCS #8).
	CertPEM, KeyPEM []byte
	// Certificate is CertPEM and KeyPEM parsed, Leaf set, for tls.Config.Certificates.
	Certificate tls.Certificate
}

// SelfSigned makes a fresh CA and a serving certificate signed by it, both with ECDSA P-256
// keys (fast to generate), valid from an hour ago (to tolerate clock skew) for
// opts.Validity. The CA's key is discarded: nothing else can be signed by it.
func SelfSigned(opts SelfSignedOptions) (*Bundle, error) {
	if opts.Validity < 0 {
		return nil, fmt.Errorf("%w: Validity %v is negative", ErrInvalidOptions, opts.Validity)
	}
	hosts := opts.Hosts
	if len(hosts) == 0 {
		hosts = DefaultHosts
	}
	validity := opts.Validity
	if validity == 0 {
		validity = 365 * 24 * time.Hour
	}
	var now time.Time
	if opts.Clock != nil {
		now = opts.Clock.Now()
	} else {
		now = time.Now()
	}
	cn := opts.CommonName
	if cn == "" {
		cn = hosts[0]
	}

	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("certwatcher: generating the CA key: %w", err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: cn + "-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		return nil, fmt.Errorf("certwatcher: creating the CA certificate: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("certwatcher: parsing the CA certificate: %w", err)
	}

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("certwatcher: generating the serving key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, key.Public(), caKey)
	if err != nil {
		return nil, fmt.Errorf("certwatcher: creating the serving certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("certwatcher: encoding the serving key: %w", err)
	}
	b := &Bundle{
		CAPEM:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}
	if b.Certificate, err = tls.X509KeyPair(b.CertPEM, b.KeyPEM); err != nil {
		return nil, fmt.Errorf("certwatcher: loading the serving pair: %w", err)
	}
	if b.Certificate.Leaf == nil {
		if b.Certificate.Leaf, err = x509.ParseCertificate(der); err != nil {
			return nil, fmt.Errorf("certwatcher: parsing the serving certificate: %w", err)
		}
	}
	return b, nil
}

// CertPool returns a pool trusting b's CA, for a client's tls.Config.RootCAs.
func (b *Bundle) CertPool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(b.CAPEM)
	return pool
}

// WriteFiles writes CertFileName, KeyFileName (mode 0600) and CAFileName into dir, creating
// it when missing. Each file is replaced atomically (written aside, then renamed), so a reader
// never sees half a file; the pair as a whole is not, and a CertWatcher retries a mismatched
// pair on its next tick.
func (b *Bundle) WriteFiles(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("certwatcher: %w", err)
	}
	for _, f := range []struct {
		name string
		data []byte
		mode os.FileMode
	}{
		{CertFileName, b.CertPEM, 0o644},
		{KeyFileName, b.KeyPEM, 0o600},
		{CAFileName, b.CAPEM, 0o644},
	} {
		if err := writeAtomic(filepath.Join(dir, f.name), f.data, f.mode); err != nil {
			return err
		}
	}
	return nil
}

func writeAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("certwatcher: %w", err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename there is nothing left to remove
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(mode)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("certwatcher: writing %s: %w", path, err)
	}
	return nil
}

// serial is a random 128-bit serial number, as RFC 5280 recommends for uniqueness.
func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		// crypto/rand does not fail on supported platforms (it panics itself when it cannot
		// read); a fixed serial is still a valid certificate.
		return big.NewInt(1)
	}
	return n.Add(n, big.NewInt(1))
}
