//go:build linux || darwin

package fault

import (
	"os"
	"syscall"
)

// freeSpace returns the bytes free for an unprivileged user in dir's file
// system.
func freeSpace(dir string) (int64, error) {
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		return 0, err
	}
	return int64(fs.Bavail) * int64(fs.Bsize), nil
}

// stop sends SIGSTOP, cont SIGCONT.
func stop(p *os.Process) { _ = p.Signal(syscall.SIGSTOP) }

func cont(p *os.Process) { _ = p.Signal(syscall.SIGCONT) }
