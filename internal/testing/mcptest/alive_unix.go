//go:build unix

package mcptest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"syscall"
)

// alive reports whether process pid runs: it exists and, where /proc
// tells, is not a zombie.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !os.IsNotExist(err) || !procMounted()
	}
	// pid (comm) STATE …: the name may hold anything but the last ')'.
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z' && stat[i+2] != 'X'
	}
	return true
}

func procMounted() bool {
	_, err := os.Stat("/proc/self/stat")
	return err == nil
}
