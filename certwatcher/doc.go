// Package certwatcher serves a TLS certificate that is replaced on disk while the process runs
// (a cert-manager renewal, a rotated Secret volume), and makes throw-away certificates for
// development and tests. The name is controller-runtime's; the methods users call
// (GetCertificate, Start, ReadCertificate) are too.
//
// # Watching
//
//	w, err := certwatcher.New(certwatcher.Options{CertFile: "/certs/tls.crt", KeyFile: "/certs/tls.key"})
//	go w.Start(ctx) // the owner cancels ctx and waits for Start to return
//	srv.TLSConfig = &tls.Config{GetCertificate: w.GetCertificate}
//
// New loads the pair once and fails when it cannot: a server must not start without a
// certificate. Start then re-reads both files every Options.Interval (10 s by default) on a
// k8s.io/utils/clock ticker and swaps the served pair when their content changed. A new pair
// that does not load (a key that does not match the certificate, half-written PEM) is logged
// once and the previous pair keeps being served; the next tick tries again. GetCertificate is a
// lock-free atomic load, so handshakes never wait on a reload and never see a torn pair.
//
// Why polling, and on a ticker rather than on handshakes: a kubelet updates a Secret volume by
// swapping a symlink (..data) to a new directory, which file-event watchers (fsnotify) see as a
// remove of the watched path, and which controller-runtime therefore backs with polling anyway;
// comparing the files' bytes catches every kind of update, in-place writes, renames and
// symlink swaps alike, with no dependency. Reading on a ticker instead of inside
// GetCertificate keeps disk I/O and parsing off the handshake path (a burst of connections
// cannot turn into a burst of reads), picks up a new certificate even while nobody connects,
// and gives the reload a goroutine with an owner, a logger and a clock tests can step. The
// cost is up to one Interval of delay, well inside the overlap every rotation scheme leaves
// between the new certificate's NotBefore and the old one's NotAfter.
//
// # Throw-away certificates
//
// SelfSigned makes a CA and a serving certificate signed by it, in memory, for the DNS names
// and IP addresses given (localhost, 127.0.0.1 and ::1 by default); WriteFiles writes them as
// tls.crt, tls.key and ca.crt, the names of a kubernetes.io/tls Secret. A server with no
// certificate configured serves such a pair (clients then skip verification or trust
// Bundle.CAPEM); tests use them to serve and verify real TLS.
package certwatcher
