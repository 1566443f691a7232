//go:build unix

package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/cairnhq/cairn"
)

// fileLock is an operating-system lock (flock) on a file: the kernel
// releases it when the process exits, however it exits.
type fileLock struct{ f *os.File }

// lockFile takes the exclusive lock of path without waiting, writing the
// holder's name into the file. While another process (or another Claim of
// this one) holds it, the error is a *cairn.LeaseHeldError naming the
// holder written there, with no expiry: it lasts as long as that process.
func lockFile(path, id, holder string) (*fileLock, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("lock file: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		b, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			who := strings.TrimSpace(string(b))
			if who == "" {
				who = "another process"
			}
			return nil, &cairn.LeaseHeldError{Session: id, Holder: who}
		}
		return nil, fmt.Errorf("lock file %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(holder+"\n"), 0)
	}
	return &fileLock{f: f}, nil
}

func (l *fileLock) unlock() error {
	_ = l.f.Truncate(0)
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	return l.f.Close()
}

// lockFilesWork says that lock files are taken on this system.
const lockFilesWork = true

// holderAlive reports whether the holder of a lease may be alive: always,
// unless it is named as this machine's host and a process ID (as
// DefaultHolder names it) and that process is gone.
func holderAlive(holder string) bool {
	host, pidText, ok := strings.Cut(holder, ":")
	if !ok {
		return true
	}
	me, err := os.Hostname()
	if err != nil || me != host {
		return true
	}
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid <= 0 {
		return true
	}
	err = syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
