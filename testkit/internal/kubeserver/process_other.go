//go:build !linux

package kubeserver

import "syscall"

// sysProcAttr: outside Linux there is no parent-death signal; children are stopped by the
// test's cleanup, and a test binary killed outright can leave them running.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
