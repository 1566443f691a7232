//go:build !unix

package cairn_test

import "time"

// processCPU is 0: the benchmarks read the process's CPU time on Unix
// systems only, and report 0 cpu-ns/op elsewhere.
func processCPU() time.Duration { return 0 }
