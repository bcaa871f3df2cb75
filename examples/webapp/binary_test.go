package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The everyday operator links only what it uses (issue 51): not client-go's
// informer factory, whose constructor alone links every generated informer
// and lister, nor the apply configurations of every built-in type, nor the
// generated listers. docs/performance.md ("Binary size") says what each
// cost.
func TestBinaryLinksOnlyWhatItUses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "webapp")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	syms, err := exec.Command("go", "tool", "nm", bin).Output()
	require.NoError(t, err)
	for _, prefix := range []string{
		"k8s.io/client-go/informers.",
		"k8s.io/client-go/informers/",
		"k8s.io/client-go/listers/",
		"k8s.io/client-go/applyconfigurations/",
	} {
		for line := range strings.Lines(string(syms)) {
			if f := strings.Fields(line); len(f) == 3 && strings.HasPrefix(f[2], prefix) {
				t.Errorf("the binary links %s (first: %s)", prefix, f[2])
				break
			}
		}
	}
}
