package certwatcher_test

import (
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ctrlkit/ctrlkit/certwatcher"
	"github.com/ctrlkit/ctrlkit/manager"
)

var (
	_ manager.Runnable               = (*certwatcher.CertWatcher)(nil)
	_ manager.LeaderElectionRunnable = (*certwatcher.CertWatcher)(nil)
)

// notifyDeadline is how long a test waits for a notification to be acted on: far below the
// poll interval the tests configure (pollInterval on a fake clock nobody steps), so that a
// pass proves the notification, not the ticker, did it.
const (
	notifyDeadline = 30 * time.Second
	pollInterval   = time.Hour
)

// started runs w until the test ends and returns once its watches are in place (Start makes
// its ticker after them).
func started(t *testing.T, w *certwatcher.CertWatcher, clk *clocktesting.FakeClock) {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { assert.NoError(t, w.Start(ctx)) })
	t.Cleanup(func() {
		cancel()
		wg.Wait() // Start returned, its file-system watcher closed (goleak checks the rest)
	})
	require.Eventually(t, clk.HasWaiters, notifyDeadline, time.Millisecond, "Start's ticker")
}

// recorder is a reload callback that keeps the serials it was given.
type recorder struct {
	mu      sync.Mutex
	serials []string
}

func (r *recorder) callback(c tls.Certificate) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.serials = append(r.serials, serialOf(&c))
}

func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.serials...)
}

func counter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("metric %s not registered", name)
	return 0
}

// secretVolume lays out dir as a kubelet lays out a Secret volume: the files are symlinks
// through ..data to a timestamped directory, and an update swaps ..data in one rename.
type secretVolume struct {
	t   *testing.T
	dir string
	n   int
}

func (v *secretVolume) update(certPEM, keyPEM []byte) {
	v.t.Helper()
	v.n++
	ts := filepath.Join(v.dir, "..2026_12_04_"+string(rune('a'+v.n)))
	require.NoError(v.t, os.Mkdir(ts, 0o755))
	require.NoError(v.t, os.WriteFile(filepath.Join(ts, certwatcher.CertFileName), certPEM, 0o644))
	require.NoError(v.t, os.WriteFile(filepath.Join(ts, certwatcher.KeyFileName), keyPEM, 0o600))
	tmp := filepath.Join(v.dir, "..data_tmp")
	require.NoError(v.t, os.Symlink(filepath.Base(ts), tmp))
	require.NoError(v.t, os.Rename(tmp, filepath.Join(v.dir, "..data")))
	for _, f := range []string{certwatcher.CertFileName, certwatcher.KeyFileName} {
		if _, err := os.Lstat(filepath.Join(v.dir, f)); os.IsNotExist(err) {
			require.NoError(v.t, os.Symlink(filepath.Join("..data", f), filepath.Join(v.dir, f)))
		}
	}
}

// A Secret volume update (the ..data symlink swap) is served through a notification, the
// callback fires with it, and the read counter counts; a bad pair swapped in keeps the
// previous one, counts an error and calls nobody; the pair that follows it is served.
func TestNotifySecretVolumeSwap(t *testing.T) {
	first, second, third := selfSigned(t), selfSigned(t), selfSigned(t)
	vol := &secretVolume{t: t, dir: t.TempDir()}
	vol.update(first.CertPEM, first.KeyPEM)
	reg := prometheus.NewRegistry()
	clk := clocktesting.NewFakeClock(time.Now())
	w, err := certwatcher.New(certwatcher.Options{
		CertFile:   filepath.Join(vol.dir, certwatcher.CertFileName),
		KeyFile:    filepath.Join(vol.dir, certwatcher.KeyFileName),
		Interval:   pollInterval,
		Clock:      clk,
		Registerer: reg,
	})
	require.NoError(t, err)
	assert.Equal(t, 1.0, counter(t, reg, certwatcher.MetricReadCertificateTotal), "New's read")
	var rec recorder
	w.RegisterCallback(rec.callback)
	assert.Equal(t, []string{serialOf(&first.Certificate)}, rec.got(), "the served pair, at once")
	started(t, w, clk)

	serves := func(b *certwatcher.Bundle) func() bool {
		return func() bool {
			got, err := w.GetCertificate(nil)
			return err == nil && serialOf(got) == serialOf(&b.Certificate)
		}
	}
	vol.update(second.CertPEM, second.KeyPEM)
	require.Eventually(t, serves(second), notifyDeadline, time.Millisecond, "the swapped pair, before any tick")
	// The callback runs just after the pair is stored: wait for it too.
	require.Eventually(t, func() bool { return len(rec.got()) == 2 }, notifyDeadline, time.Millisecond, "the callback")
	assert.Equal(t, []string{serialOf(&first.Certificate), serialOf(&second.Certificate)}, rec.got())
	reads := counter(t, reg, certwatcher.MetricReadCertificateTotal)
	assert.GreaterOrEqual(t, reads, 3.0, "New's, Start's and the notification's reads")

	// (A read racing a swap may see one file from each side and count an error, harmlessly:
	// count from here.)
	errs := counter(t, reg, certwatcher.MetricReadCertificateErrorsTotal)
	vol.update(third.CertPEM, second.KeyPEM) // a key that does not match
	require.Eventually(t, func() bool {
		return counter(t, reg, certwatcher.MetricReadCertificateErrorsTotal) > errs
	}, notifyDeadline, time.Millisecond, "the bad pair is read and counted")
	assert.True(t, serves(second)(), "the previous pair is kept")
	assert.Len(t, rec.got(), 2, "no callback for a pair that did not load")

	vol.update(third.CertPEM, third.KeyPEM)
	require.Eventually(t, serves(third), notifyDeadline, time.Millisecond)
	require.Eventually(t, func() bool { return len(rec.got()) == 3 }, notifyDeadline, time.Millisecond, "the callback")
	assert.Equal(t, serialOf(&third.Certificate), rec.got()[2])
}

// Files written in place of the old ones (WriteFiles: a temporary file renamed over each) are
// picked up through notifications too, and two watchers on one registry share the counters.
func TestNotifyRewrittenFiles(t *testing.T) {
	first, second := selfSigned(t), selfSigned(t)
	dir := t.TempDir()
	require.NoError(t, first.WriteFiles(dir))
	reg := prometheus.NewRegistry()
	clk := clocktesting.NewFakeClock(time.Now())
	opts := certwatcher.Options{
		CertFile:   filepath.Join(dir, certwatcher.CertFileName),
		KeyFile:    filepath.Join(dir, certwatcher.KeyFileName),
		Interval:   pollInterval,
		Clock:      clk,
		Registerer: reg,
	}
	w, err := certwatcher.New(opts)
	require.NoError(t, err)
	_, err = certwatcher.New(opts)
	require.NoError(t, err, "a second watcher on the same registry")
	assert.Equal(t, 2.0, counter(t, reg, certwatcher.MetricReadCertificateTotal), "both New's reads, one counter")
	reloaded := make(chan string, 10)
	w.RegisterCallback(func(c tls.Certificate) { reloaded <- serialOf(&c) })
	assert.Equal(t, serialOf(&first.Certificate), <-reloaded)
	started(t, w, clk)

	require.NoError(t, second.WriteFiles(dir))
	select {
	case s := <-reloaded:
		assert.Equal(t, serialOf(&second.Certificate), s)
	case <-time.After(notifyDeadline):
		t.Fatal("no reload within the deadline, well before the poll interval")
	}
	assert.Equal(t, "certwatcher:"+opts.CertFile, w.Name())
	assert.False(t, w.NeedLeaderElection())
}

// A Registerer that refuses the metrics fails New, naming them.
func TestNewRegistererError(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, selfSigned(t).WriteFiles(dir))
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: certwatcher.MetricReadCertificateTotal, Help: "h"}))
	_, err := certwatcher.New(certwatcher.Options{
		CertFile:   filepath.Join(dir, certwatcher.CertFileName),
		KeyFile:    filepath.Join(dir, certwatcher.KeyFileName),
		Registerer: reg,
	})
	assert.ErrorContains(t, err, "certwatcher: registering metrics")
}
