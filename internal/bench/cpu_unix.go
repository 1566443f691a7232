//go:build linux || darwin

package bench

import (
	"time"

	"golang.org/x/sys/unix"
)

// processCPU is the user and system CPU time the process has used.
func processCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
