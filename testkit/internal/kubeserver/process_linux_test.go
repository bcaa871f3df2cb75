package kubeserver

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const helperEnv = "CONTROLLERTEST_PDEATHSIG_HELPER"

// TestChildDiesWithTheTestBinary re-runs this test binary as a helper that starts a child the way
// NewAPIServer starts etcd, then SIGKILLs the helper — no cleanup can run — and checks that the
// kernel killed the child (Pdeathsig).
func TestChildDiesWithTheTestBinary(t *testing.T) {
	if dir := os.Getenv(helperEnv); dir != "" {
		p, err := startProcess("sleep", "sleep", []string{"300"}, filepath.Join(dir, "sleep.log"))
		if err != nil {
			t.Fatal(err)
		}
		os.Stdout.WriteString("PID " + strconv.Itoa(p.pid()) + "\n")
		time.Sleep(5 * time.Minute) // until the parent test kills us
		return
	}
	if _, err := exec.LookPath("sleep"); err != nil {
		t.Skip("needs sleep(1)")
	}
	helper := exec.Command(os.Args[0], "-test.run=^TestChildDiesWithTheTestBinary$", "-test.count=1")
	helper.Env = append(os.Environ(), helperEnv+"="+t.TempDir())
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = helper.Process.Kill(); _ = helper.Wait() })

	var pid int
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "PID "); ok {
			pid, _ = strconv.Atoi(rest)
			break
		}
	}
	if pid <= 0 {
		t.Fatalf("helper printed no child pid (scan error: %v)", sc.Err())
	}
	if !alive(pid) {
		t.Fatalf("child %d is not running before the helper dies", pid)
	}
	if err := helper.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = helper.Wait()

	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("child %d outlived its killed parent by 10s", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// alive reports whether pid runs. An orphan that was killed is a zombie until init reaps it;
// that counts as dead.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// Format: pid (comm) state ...; comm may contain spaces, so look after the last ')'.
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}
