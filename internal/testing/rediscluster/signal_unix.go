//go:build unix

package rediscluster

import (
	"os"
	"syscall"
)

// pause stops a process (SIGSTOP); resume lets it go on (SIGCONT).
func pause(p *os.Process) error { return p.Signal(syscall.SIGSTOP) }

func resume(p *os.Process) error { return p.Signal(syscall.SIGCONT) }
