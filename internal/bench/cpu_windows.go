package bench

import (
	"time"

	"golang.org/x/sys/windows"
)

// processCPU is the user and system (kernel) CPU time the process has
// used.
func processCPU() time.Duration {
	var created, exited, kernel, user windows.Filetime
	if err := windows.GetProcessTimes(windows.CurrentProcess(), &created, &exited, &kernel, &user); err != nil {
		return 0
	}
	return ticks(kernel) + ticks(user)
}

// ticks is a Filetime that holds a duration, in its 100 ns units.
func ticks(t windows.Filetime) time.Duration {
	return time.Duration(int64(t.HighDateTime)<<32|int64(t.LowDateTime)) * 100
}
