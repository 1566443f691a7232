//go:build darwin || (linux && journalflock)

package file

import (
	"errors"
	"syscall"
)

// tryLock takes the lock of half i without waiting, and reports whether
// it did.
func (l halfLocks) tryLock(i int) (bool, error) {
	err := syscall.Flock(int(l.f[i].Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}
