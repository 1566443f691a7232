//go:build !linux && !darwin

package fault

import (
	"fmt"
	"os"
	"runtime"
)

// freeSpace fails: the tests read a file system's free space on Linux and
// macOS only.
func freeSpace(string) (int64, error) {
	return 0, fmt.Errorf("fault: reading a file system's free space is not done on %s", runtime.GOOS)
}

// stop panics: stopping a process and letting it go on needs SIGSTOP and
// SIGCONT, which this system lacks.
func stop(*os.Process) { panic("fault: Stop needs SIGSTOP, which " + runtime.GOOS + " lacks") }

func cont(*os.Process) {}
