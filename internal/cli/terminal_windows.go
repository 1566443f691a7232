package cli

import (
	"os"

	"golang.org/x/sys/windows"
)

// IsTerminal reports whether w is a terminal: a file that is a console,
// whose console mode can be read (a file or a pipe is not).
func IsTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	var mode uint32
	return windows.GetConsoleMode(windows.Handle(f.Fd()), &mode) == nil
}
