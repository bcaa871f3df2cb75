package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// envGenerate turns TestGenerateInUserModule on: it builds controller-gen, about 1.5 minutes
// on 2 cores the first time (seconds once Go's build cache has it).
const envGenerate = "CTRLKIT_TEST_GENERATE"

// TestGenerateInUserModule runs docs/custom-resources.md's generate path where a user would:
// in a new module outside the repository that requires ctrlkit (replaced by this checkout),
// with the doc's doc.go (its go:generate lines) and Tenant types, go generate must write the
// deepcopy functions and crd.yaml, and the package, a VerifyCRD test and the doc's Tenant
// controller must build. It uses only the module cache (as GOPROXY), and skips, saying what
// to fetch, when the cache lacks a module.
func TestGenerateInUserModule(t *testing.T) {
	if os.Getenv(envGenerate) == "" {
		t.Skipf("set %s=1 to run docs/custom-resources.md's go:generate lines in a user's module (builds controller-gen)", envGenerate)
	}
	if testing.Short() {
		t.Skip("builds controller-gen; not in -short mode")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	doc := readFile(t, filepath.Join(root, "docs", "custom-resources.md"))
	docGo := goBlock(t, doc, "//go:generate go run sigs.k8s.io/controller-tools/cmd/controller-gen@")
	typesGo := goBlock(t, doc, "+kubebuilder:resource:scope=Cluster")
	controllerGo := goBlock(t, doc, "func NewTenantController(")

	// The doc's controller-gen is the one hack/tools pins for make generate.
	pinned := regexp.MustCompile(`(?m)^(?:require)?\s+sigs\.k8s\.io/controller-tools (v\S+)`).FindStringSubmatch(readFile(t, filepath.Join(root, "hack", "tools", "go.mod")))
	if pinned == nil {
		t.Fatal("hack/tools/go.mod requires no sigs.k8s.io/controller-tools")
	}
	controllerGen := "sigs.k8s.io/controller-tools/cmd/controller-gen@" + pinned[1]
	if !strings.Contains(docGo, controllerGen+" ") {
		t.Fatalf("docs/custom-resources.md runs another controller-gen than hack/tools/go.mod's %s:\n%s", pinned[1], docGo)
	}

	mod := t.TempDir()
	api := filepath.Join(mod, "api", "v1")
	writeFile(t, filepath.Join(mod, "go.mod"), `module example.com/tenancy

go 1.26.0

require (
	github.com/ctrlkit/ctrlkit v0.0.0-00010101000000-000000000000
	k8s.io/api v0.37.2
	k8s.io/apimachinery v0.37.2
	k8s.io/client-go v0.37.2
)

replace github.com/ctrlkit/ctrlkit => `+root+"\n")
	writeFile(t, filepath.Join(api, "doc.go"), docGo)
	writeFile(t, filepath.Join(api, "types.go"), typesGo)
	writeFile(t, filepath.Join(api, "register.go"), `package v1

import "k8s.io/apimachinery/pkg/runtime/schema"

// GVR is the Tenant resource.
var GVR = schema.GroupVersionResource{Group: "tenancy.example.com", Version: "v1", Resource: "tenants"}
`)
	writeFile(t, filepath.Join(api, "crd.go"), `package v1

import _ "embed"

// CRDManifest is the generated CustomResourceDefinition.
//
//go:embed crd.yaml
var CRDManifest []byte
`)
	writeFile(t, filepath.Join(api, "crd_test.go"), `package v1

import (
	"testing"

	"github.com/ctrlkit/ctrlkit/customresource"
)

func TestCRDMatchesGoTypes(t *testing.T) {
	if err := customresource.VerifyCRD(CRDManifest, "v1", &Tenant{}); err != nil {
		t.Fatal(err)
	}
}
`)
	writeFile(t, filepath.Join(mod, "tenant", "controller.go"), `package tenant

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	"github.com/ctrlkit/ctrlkit/client"
	"github.com/ctrlkit/ctrlkit/controller"
	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/manager"
	"github.com/ctrlkit/ctrlkit/ownerref"
	"github.com/ctrlkit/ctrlkit/predicate"

	tenancyv1 "example.com/tenancy/api/v1"
)

`+controllerGo)

	// A user's go commands, kept to the module cache by serving it as their proxy (GOPROXY=off
	// is not enough: go run pkg@version asks the proxy for the module's deprecation). The
	// cache's zips were checked against go.sum or the checksum database when downloaded.
	modCache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatalf("go env GOMODCACHE: %v", err)
	}
	proxy := "file://" + filepath.ToSlash(filepath.Join(strings.TrimSpace(string(modCache)), "cache", "download"))
	env := append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY="+proxy, "GOSUMDB=off", "GOWORK=off", "GOTOOLCHAIN=local")
	run := func(dir string, args ...string) {
		t.Helper()
		start := time.Now()
		cmd := exec.Command("go", args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		t.Logf("go %s: %v", strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
		switch {
		case err != nil && bytes.Contains(out, []byte(proxy)):
			t.Skipf("the module cache lacks a module go %s needs; fetch controller-gen's once with `go run %s --version` "+
				"(hack/tools' go mod download is not enough: controller-gen@%s alone selects other k8s.io versions):\n%s",
				strings.Join(args, " "), controllerGen, pinned[1], out)
		case err != nil:
			t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
		}
	}
	run(mod, "run", controllerGen, "--version")
	run(api, "generate", ".")

	if _, err := os.Stat(filepath.Join(api, "tenancy.example.com_tenants.yaml")); !os.IsNotExist(err) {
		t.Errorf("crdmanifest left controller-gen's file behind (stat: %v)", err)
	}
	deepcopy := readFile(t, filepath.Join(api, "zz_generated.deepcopy.go"))
	if !strings.Contains(deepcopy, "func (in *Tenant) DeepCopyObject() runtime.Object") {
		t.Errorf("zz_generated.deepcopy.go has no Tenant.DeepCopyObject:\n%s", deepcopy)
	}
	crd := readFile(t, filepath.Join(api, "crd.yaml"))
	for _, want := range []string{header, "  scope: Cluster\n", "    kind: Tenant\n", "    plural: tenants\n"} {
		if !strings.Contains(crd, want) {
			t.Errorf("crd.yaml lacks %q:\n%s", want, crd)
		}
	}
	run(mod, "build", "./...")
	run(mod, "test", "-count=1", "./api/v1")
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// goBlock returns the one ```go block of a Markdown document that contains marker.
func goBlock(t *testing.T, doc, marker string) string {
	t.Helper()
	var found []string
	for _, block := range strings.Split(doc, "```go\n")[1:] {
		body, _, ok := strings.Cut(block, "\n```")
		if ok && strings.Contains(body, marker) {
			found = append(found, body+"\n")
		}
	}
	if len(found) != 1 {
		t.Fatalf("docs/custom-resources.md has %d go blocks containing %q, want 1", len(found), marker)
	}
	return found[0]
}
