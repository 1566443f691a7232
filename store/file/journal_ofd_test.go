//go:build linux && !journalflock

package file

import (
	"errors"
	"io"

	"golang.org/x/sys/unix"
)

// tryLock takes the lock of half i without waiting, and reports whether
// it did.
func (l halfLocks) tryLock(i int) (bool, error) {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart, Start: lockByte + int64(i), Len: 1}
	err := unix.FcntlFlock(l.f.Fd(), unix.F_OFD_SETLK, &lk)
	if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES) {
		return false, nil
	}
	return err == nil, err
}
