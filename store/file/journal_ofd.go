//go:build linux && !journalflock

package file

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// halfLocks are the write locks of a journal's halves (see journal.go):
// on Linux, open-file-description locks on the journal file itself, one
// byte each past any journal's end. They belong to the open file, as the
// journal needs, and Linux keeps them apart from the owner's flock on the
// same file.
type halfLocks struct{ f *os.File }

// lockByte is where the byte of half 0's lock is; half 1's follows it.
const lockByte = 1 << 40

// openHalfLocks returns the half locks of journal f: f's own.
func (s *Store) openHalfLocks(f *os.File, _ string) (halfLocks, error) {
	return halfLocks{f}, nil
}

func (l halfLocks) lock(i int) error {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart, Start: lockByte + int64(i), Len: 1}
	for {
		err := unix.FcntlFlock(l.f.Fd(), unix.F_OFD_SETLKW, &lk)
		if !errors.Is(err, syscall.EINTR) {
			if err != nil {
				return fmt.Errorf("lock journal: %w", err)
			}
			return nil
		}
	}
}

func (l halfLocks) unlock(i int) {
	lk := unix.Flock_t{Type: unix.F_UNLCK, Whence: io.SeekStart, Start: lockByte + int64(i), Len: 1}
	_ = unix.FcntlFlock(l.f.Fd(), unix.F_OFD_SETLK, &lk)
}

// close has nothing to close: the locks are the journal file's.
func (halfLocks) close() {}
