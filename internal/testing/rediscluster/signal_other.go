//go:build !unix

package rediscluster

import (
	"fmt"
	"os"
	"runtime"
)

// pause fails: stopping a process and letting it go on needs SIGSTOP and
// SIGCONT, which these systems lack. resume has nothing to do.
func pause(*os.Process) error {
	return fmt.Errorf("pause a redis-server: %s has no SIGSTOP", runtime.GOOS)
}

func resume(*os.Process) error { return nil }
