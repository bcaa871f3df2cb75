package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// controllerGenOutput is what controller-gen wrote for a committed crd.yaml: the manifest
// without its header, after a document separator.
func controllerGenOutput(t *testing.T, committed []byte) []byte {
	t.Helper()
	var body []byte
	for line := range bytes.Lines(committed) {
		if !bytes.HasPrefix(line, []byte("#")) {
			body = append(body, line...)
		}
	}
	return append([]byte("---\n"), body...)
}

// Rewriting controller-gen's output changes nothing but the header, so make generate on
// unchanged types leaves crd.yaml as it is.
func TestConvertKeepsControllerGensBytes(t *testing.T) {
	for _, tc := range []struct {
		file string
		opts options
	}{
		{"../../examples/webapp/api/v1/crd.yaml", options{}},
		{"../../examples/podset/api/v1alpha1/crd.yaml", options{}},
		{"../../examples/podset/api/v1beta1/crd.yaml", options{conversionService: "podset-system/podset-webhook", conversionPath: "/convert"}},
	} {
		committed, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		got, err := convert(controllerGenOutput(t, committed), tc.opts)
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if !bytes.Equal(got, committed) {
			t.Errorf("%s: converting it again changed it:\n%s", tc.file, got)
		}
	}
}

const twoVersions = `---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  versions:
  - name: v1
    served: true
    storage: true
  - name: v2
    served: true
    storage: false
`

func TestConvertAddsConversion(t *testing.T) {
	got, err := convert([]byte(twoVersions), options{conversionService: "ns/svc", conversionPath: "/convert"})
	if err != nil {
		t.Fatal(err)
	}
	want := `  conversion:
    strategy: Webhook
    webhook:
      clientConfig:
        service:
          name: svc
          namespace: ns
          path: /convert
      conversionReviewVersions:
      - v1
`
	if !strings.Contains(string(got), want) {
		t.Errorf("no conversion stanza in\n%s", got)
	}
	if !strings.HasPrefix(string(got), header+"# spec.conversion is crdmanifest's: -conversion-service ns/svc -conversion-path /convert.\n") {
		t.Errorf("header missing in\n%s", got)
	}
}

func TestConvertRefusesBadInput(t *testing.T) {
	oneVersion := strings.Split(twoVersions, "  - name: v2")[0]
	for name, tc := range map[string]struct {
		in   string
		opts options
		want string
	}{
		"not a CRD":       {"apiVersion: v1\nkind: ConfigMap\n", options{}, "is v1 ConfigMap"},
		"two documents":   {twoVersions + "---\n" + twoVersions, options{}, "more than one YAML document"},
		"not YAML":        {"{{{", options{}, "yaml"},
		"service":         {twoVersions, options{conversionService: "svc", conversionPath: "/convert"}, "want namespace/name"},
		"service slashes": {twoVersions, options{conversionService: "a/b/c", conversionPath: "/convert"}, "want namespace/name"},
		"path":            {twoVersions, options{conversionService: "ns/svc", conversionPath: "convert"}, "want an absolute path"},
		"one version":     {oneVersion, options{conversionService: "ns/svc", conversionPath: "/convert"}, "serves 1 version(s)"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := convert([]byte(tc.in), tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// run writes the output and removes controller-gen's file, so only crd.yaml is committed.
func TestRunReplacesTheInput(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "example.com_widgets.yaml"), filepath.Join(dir, "crd.yaml")
	if err := os.WriteFile(in, []byte(twoVersions), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(options{in: in, out: out}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(in); !os.IsNotExist(err) {
		t.Errorf("input still there: %v", err)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(got), header+"apiVersion: apiextensions.k8s.io/v1\n") {
		t.Errorf("output:\n%s", got)
	}

	// A second run without controller-gen's file fails and leaves crd.yaml alone.
	if err := run(options{in: in, out: out}); err == nil {
		t.Error("run without its input succeeded")
	}
	if again, _ := os.ReadFile(out); !bytes.Equal(again, got) {
		t.Error("a failed run changed the output")
	}
	if err := run(options{out: out}); err == nil || !strings.Contains(err.Error(), "-in and -out are required") {
		t.Errorf("err = %v", err)
	}
}
