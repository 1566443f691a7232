package file

import (
	"os"

	"golang.org/x/sys/unix"
)

// datasync makes what was written to f durable, with its size but not its
// other metadata (fdatasync): the journal's writes never change its size,
// so this is one flush of data.
func datasync(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }
