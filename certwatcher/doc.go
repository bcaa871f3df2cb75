// Package certwatcher serves a TLS certificate that is replaced on disk while the process runs
// (a cert-manager renewal, a rotated Secret volume), and makes throw-away certificates for
// development and tests. The name is controller-runtime's; the methods users call
// (GetCertificate, Start, ReadCertificate, RegisterCallback) and its metric names are too.
//
// # Watching
//
//	w, err := certwatcher.New(certwatcher.Options{CertFile: "/certs/tls.crt", KeyFile: "/certs/tls.key"})
//	go w.Start(ctx) // the owner cancels ctx and waits for Start to return
//	srv.TLSConfig = &tls.Config{GetCertificate: w.GetCertificate}
//
// New loads the pair once and fails when it cannot: a server must not start without a
// certificate. Start then re-reads both files on every file-system notification about them
// (fsnotify, the watcher controller-runtime uses) and, as the fallback, every Options.Interval
// (10 s by default) on a k8s.io/utils/clock ticker, and swaps the served pair when their
// content changed. A new pair that does not load (a key that does not match the certificate,
// half-written PEM) is logged once and the previous pair keeps being served; the next event or
// tick tries again. GetCertificate is a lock-free atomic load, so handshakes never wait on a
// reload and never see a torn pair.
//
// Notifications watch the directories holding the files, not the files: a kubelet updates a
// Secret volume by swapping a symlink (..data) to a new directory, and a file replaced by a
// rename is a new inode; both are events in the directory. Events on the files' names, on
// kubelet's ..-prefixed entries and on the directories themselves trigger a read; a change of
// permissions alone does not. The ticker stays because notifications can be missed: a
// file-system without them (some network and FUSE mounts), an inotify limit reached (New
// still works and Start logs that it polls only), a watched directory removed and recreated, a
// file that is a symlink into another directory. Comparing the files' bytes makes a read
// that finds nothing new cheap, so reading on both is harmless. Reading in Start's goroutine
// rather than inside GetCertificate keeps disk I/O and parsing off the handshake path.
//
// # Reload callback, metrics, Manager
//
// RegisterCallback (controller-runtime's name and semantics) sets a function called with each
// pair that was loaded, for example to restart connections or export the new NotAfter.
// Options.Registerer receives controller-runtime's counters,
// certwatcher_read_certificate_total and certwatcher_read_certificate_errors_total; nothing is
// registered globally. A CertWatcher is a manager.Runnable (Name, Run) that runs on every
// replica (NeedLeaderElection is false):
//
//	mgr.Add(w) // w's Run is Start
//
// # Throw-away certificates
//
// SelfSigned makes a CA and a serving certificate signed by it, in memory, for the DNS names
// and IP addresses given (localhost, 127.0.0.1 and ::1 by default); WriteFiles writes them as
// tls.crt, tls.key and ca.crt, the names of a kubernetes.io/tls Secret. A server with no
// certificate configured serves such a pair (clients then skip verification or trust
// Bundle.CAPEM); tests use them to serve and verify real TLS.
package certwatcher
