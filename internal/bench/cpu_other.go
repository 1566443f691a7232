//go:build !linux && !darwin && !windows

package bench

import "time"

// processCPU is 0: cairn does not read a process's CPU time on these
// systems, so the CPU figures read 0.
func processCPU() time.Duration { return 0 }
