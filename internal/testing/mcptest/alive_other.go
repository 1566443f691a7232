//go:build !unix

package mcptest

import "os"

// alive reports whether process pid runs.
func alive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	p.Release()
	return true
}
