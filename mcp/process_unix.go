//go:build unix && !linux

package mcp

import (
	"os/exec"
	"syscall"
)

// prepare runs cmd in a process group of its own. These systems have no
// parent-death signal: a command outlives a cairn that is killed (one
// that exits closes it).
func prepare(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return nil
}

func start(cmd *exec.Cmd) error { return cmd.Start() }

// exitedUnreaped reports false: these systems cannot wait for a process
// without reaping it, so what is left of a group whose first process
// exited is not killed (its ID may be another's by then).
func exitedUnreaped(int) bool { return false }

// signalGroup terminates (SIGTERM) or kills (SIGKILL) cmd's process group.
func signalGroup(cmd *exec.Cmd, kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	syscall.Kill(-cmd.Process.Pid, sig)
}
