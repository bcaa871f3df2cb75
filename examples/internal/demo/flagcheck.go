package demo

import (
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/ctrlkit/ctrlkit/certwatcher"
)

// The checks of the examples' own flags, so that a typo exits 2 naming the flag before anything
// starts rather than failing once the controllers run (manager.Flags checks the Manager's).

// CheckAddr checks the host:port value of flag (a numeric port, 0 to 65535); "" passes.
func CheckAddr(flag, addr string) error {
	if addr == "" {
		return nil
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%s %q: %w", flag, addr, err)
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || (n == 0 && port != "0") {
		return fmt.Errorf("%s %q: port %q is not a number from 0 to 65535", flag, addr, port)
	}
	return nil
}

// CheckCertDir checks that the directory of flag holds a TLS pair that loads (tls.crt, tls.key)
// and, with withCA, a ca.crt; "" passes.
func CheckCertDir(flag, dir string, withCA bool) error {
	if dir == "" {
		return nil
	}
	if _, err := tls.LoadX509KeyPair(filepath.Join(dir, certwatcher.CertFileName), filepath.Join(dir, certwatcher.KeyFileName)); err != nil {
		return fmt.Errorf("%s %q: %w", flag, dir, err)
	}
	if withCA {
		if _, err := os.Stat(filepath.Join(dir, certwatcher.CAFileName)); err != nil {
			return fmt.Errorf("%s %q: the caBundle: %w", flag, dir, err)
		}
	}
	return nil
}

// CheckNamespace checks that the value of flag is a namespace name (a DNS-1123 label); ""
// passes (the flag's own rules say whether it may be empty).
func CheckNamespace(flag, ns string) error {
	if ns == "" {
		return nil
	}
	if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
		return fmt.Errorf("%s %q: not a namespace name: %s", flag, ns, msgs[0])
	}
	return nil
}
