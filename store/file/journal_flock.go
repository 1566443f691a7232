//go:build darwin || (linux && journalflock)

package file

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"syscall"
)

// halfLocks are the write locks of a journal's halves (see journal.go):
// on macOS, a flock on a file of their own for each half,
// .journal/.halves/NAME.0 and NAME.1 for the journal NAME.
//
// macOS keeps every advisory lock of a file in one list, flock and
// fcntl's byte-range locks alike, and a flock covers the whole file: the
// owner's flock on the journal would block any other open's lock on a
// byte of it, for as long as the owner runs. macOS has no public
// open-file-description locks either, and fcntl's F_SETLK locks belong to
// the process (one process's opens do not exclude each other, and closing
// any of its opens of the file drops them all). A flock belongs to the
// open file, as on Linux: two opens of one lock file, in one process or
// two, exclude each other, closing one releases only its own lock, and
// the system releases it when the process dies. So the half locks are
// flocks on files that nothing else locks. They are created on first use
// and never removed (a journal is never removed either); Open's tidying
// of the journal folder passes over .halves.
//
// The build tag journalflock gives Linux these locks instead of its own,
// so that the tests run them: go test -tags journalflock ./store/file.
type halfLocks struct{ f [2]*os.File }

// openHalfLocks opens the lock files of the halves of the journal name,
// creating them if they are missing.
func (s *Store) openHalfLocks(_ *os.File, name string) (halfLocks, error) {
	dir := journalDir + "/" + halfLockDir
	if err := s.ns.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return halfLocks{}, fmt.Errorf("half locks: %w", err)
	}
	var l halfLocks
	for i := range l.f {
		f, err := s.ns.OpenFile(dir+"/"+name+"."+strconv.Itoa(i), os.O_RDONLY|os.O_CREATE, journalFileMode)
		if err != nil {
			l.close()
			return halfLocks{}, fmt.Errorf("half locks: %w", err)
		}
		l.f[i] = f
	}
	return l, nil
}

func (l halfLocks) lock(i int) error {
	for {
		err := syscall.Flock(int(l.f[i].Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			if err != nil {
				return fmt.Errorf("lock journal: %w", err)
			}
			return nil
		}
	}
}

func (l halfLocks) unlock(i int) {
	_ = syscall.Flock(int(l.f[i].Fd()), syscall.LOCK_UN)
}

// close closes the lock files, releasing any lock still held.
func (l halfLocks) close() {
	for _, f := range l.f {
		if f != nil {
			f.Close()
		}
	}
}
