package kubeserver

import "syscall"

// sysProcAttr makes the kernel kill the child when the forking thread dies (see startProcess).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
