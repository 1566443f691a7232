//go:build linux || darwin

package cli

import (
	"os"

	"golang.org/x/sys/unix"
)

// IsTerminal reports whether w is a terminal: a file whose terminal
// attributes can be read (a character device such as /dev/null is not).
func IsTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), ioctlReadTermios)
	return err == nil
}
