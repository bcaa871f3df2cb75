package compat

import (
	"bytes"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"k8s.io/component-base/compatibility"
	"k8s.io/component-base/metrics/legacyregistry"
	featuremetrics "k8s.io/component-base/metrics/prometheus/feature"

	"github.com/ctrlkit/ctrlkit/featuregate"
)

// The gauge ctrlkit's collector exports is the one upstream's AddMetrics records: same
// name, help, labels, stage values and values.
func TestFeatureEnabledMetric(t *testing.T) {
	ck, up := newCtrlkit("1.33"), newUpstream("1.33")
	for _, d := range []driver{ck, up} {
		for _, o := range []op{base, versioned, set("AlphaOff=true,BetaOn=false,Dep=true"), setEmulation("1.33", "")} {
			if err := o.do(d, &side{}); err != "" {
				t.Fatalf("%s: %s", o.desc, err)
			}
		}
	}
	reg := prometheus.NewRegistry()
	if err := featuregate.RegisterMetrics(reg, ck.g); err != nil {
		t.Fatal(err)
	}
	featuremetrics.ResetFeatureInfoMetric()
	up.g.AddMetrics()

	got, want := gather(t, reg), gather(t, legacyregistry.DefaultGatherer)
	if got != want {
		t.Errorf("kubernetes_feature_enabled differs:\nctrlkit:\n%s\ncomponent-base:\n%s", got, want)
	}
	if want == "" {
		t.Fatal("component-base exported nothing: the comparison is empty")
	}
	t.Logf("both export:\n%s", want)
}

func gather(t *testing.T, g prometheus.Gatherer) string {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	for _, mf := range families {
		if mf.GetName() != featuregate.MetricName {
			continue
		}
		if _, err := expfmt.MetricFamilyToText(&buf, (*dto.MetricFamily)(mf)); err != nil {
			t.Fatal(err)
		}
	}
	return buf.String()
}

// A min compatibility version after the emulation version: ctrlkit's gate refuses it with
// the text component-base's compatibility package gives when it validates the same pair.
func TestMinCompatibilityAfterEmulation(t *testing.T) {
	ev := compatibility.NewEffectiveVersionFromString("1.37", "", "")
	ev.SetEmulationVersion(ver("1.31"))
	ev.SetMinCompatibilityVersion(ver("1.32"))
	errs := ev.Validate()
	if len(errs) != 1 {
		t.Fatalf("component-base: want one error, got %v", errs)
	}
	g := featuregate.New()
	err := g.SetEmulationVersionAndMinCompatibilityVersion(ver("1.31"), ver("1.32"))
	if err == nil || err.Error() != errs[0].Error() {
		t.Errorf("ctrlkit %v, component-base %v", err, errs[0])
	}
}
