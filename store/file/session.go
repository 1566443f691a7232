package file

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cairnhq/cairn"
)

// session is what the store knows of one session while it is open: its
// in-process lock, its open files and the state of its log as last seen
// under the file lock.
type session struct {
	mu   sync.Mutex // the in-process lock of the session
	refs int        // callers holding or waiting for mu; guarded by Store.mu

	// The fields below are guarded by mu.

	// lockF is the open lock file. Keeping it open pins its inode, so
	// comparing it with the file at the session's path tells exactly
	// whether the folder is still the one these files came from.
	lockF  *os.File
	lockID fileID   // lockF's device and inode
	token  string   // lockF's content: tells this session from others of its ID
	logF   *os.File // the log, opened after lockF from the same folder
	infoF  *os.File // info.json, overwritten in place after each append

	infoLen int64 // info.json's length, which only grows

	known    bool              // whether size, metaSize and info are set
	size     int64             // the log's committed length: the end of its last whole append
	metaSize int64             // the log length the durable meta.json covers
	info     cairn.SessionInfo // the session's info at size
}

// acquire returns the session's entry with its in-process lock held.
func (s *Store) acquire(id string) *session {
	s.mu.Lock()
	ss := s.sessions[id]
	if ss == nil {
		ss = &session{}
		s.sessions[id] = ss
	}
	ss.refs++
	s.mu.Unlock()
	ss.mu.Lock()
	return ss
}

// release unlocks the entry. An entry nobody waits for is forgotten, its
// files closed, when its session is gone or too many are open.
func (s *Store) release(id string, ss *session) {
	ss.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	ss.refs--
	if ss.refs == 0 && (ss.lockF == nil || len(s.sessions) > maxOpenSessions) {
		ss.closeFiles()
		delete(s.sessions, id)
	}
}

// closeFiles closes the entry's files, which releases its file lock, and
// forgets what it knew.
func (ss *session) closeFiles() {
	if ss.lockF != nil {
		ss.lockF.Close()
	}
	if ss.logF != nil {
		ss.logF.Close()
	}
	if ss.infoF != nil {
		ss.infoF.Close()
	}
	ss.lockF, ss.logF, ss.infoF, ss.known = nil, nil, nil, false
}

// unlock releases the file lock, if the files are still open.
func (ss *session) unlock() {
	if ss.lockF != nil {
		_ = syscall.Flock(int(ss.lockF.Fd()), syscall.LOCK_UN)
	}
}

// lock takes the session's file lock, exclusive or shared, checks that the
// session's folder is still the one its files were opened from, and brings
// ss up to date with the files (recovering from a crash if it must). It
// returns an error wrapping cairn.ErrNotFound when the session does not
// exist. On success the caller runs ss.unlock.
func (s *Store) lock(ctx context.Context, ss *session, id string, exclusive bool) error {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	for attempt := 0; ; attempt++ {
		if ss.lockF == nil {
			if err := s.openFiles(ss, id); err != nil {
				return err
			}
		}
		if err := flock(ctx, ss.lockF, how); err != nil {
			return err
		}
		same, err := s.current(ss, id)
		if err != nil || !same {
			// Deleted, or deleted and created again, since the files
			// were opened: start over with the folder that is there now.
			ss.closeFiles()
			if err != nil {
				return err
			}
			if attempt == 8 {
				return errors.New("session folder keeps being replaced")
			}
			continue
		}
		if err := s.refresh(ss, id, exclusive); err != nil {
			ss.unlock()
			return err
		}
		return nil
	}
}

// openFiles opens the session's lock file, then its log and info.json
// (which it makes again if it went missing: it is a cache).
func (s *Store) openFiles(ss *session, id string) error {
	lockF, err := s.ns.OpenFile(id+"/"+lockName, os.O_RDWR, 0)
	if err != nil {
		return notFound(err)
	}
	logF, err := s.ns.OpenFile(id+"/"+logName, os.O_RDWR, 0)
	if err != nil {
		lockF.Close()
		return notFound(err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(lockF.Fd()), &st); err != nil {
		lockF.Close()
		logF.Close()
		return err
	}
	lockID := fileID{dev: st.Dev, ino: st.Ino}
	token, err := readToken(lockF)
	if err != nil {
		lockF.Close()
		logF.Close()
		return err
	}
	infoF, err := s.ns.OpenFile(id+"/"+infoName, os.O_RDWR|os.O_CREATE, 0o600)
	var fi os.FileInfo
	if err == nil {
		fi, err = infoF.Stat()
	}
	if err != nil {
		lockF.Close()
		logF.Close()
		if infoF != nil {
			infoF.Close()
		}
		return notFound(err)
	}
	ss.lockF, ss.lockID, ss.token, ss.logF, ss.infoF, ss.infoLen, ss.known = lockF, lockID, token, logF, infoF, fi.Size(), false
	return nil
}

// fileID is what makes a file itself: its device and inode.
type fileID struct{ dev, ino uint64 }

// current reports whether the session's lock file path still names the
// file ss holds open. A missing path is cairn.ErrNotFound.
//
// It is one fstatat relative to the namespace folder, on every call of the
// session, rather than a walk through the os.Root. That is safe because the
// result only compares files: a symbolic link planted where the session's
// folder was leads to another inode, which counts as not current, and the
// files are then opened again through the Root, which refuses the link.
func (s *Store) current(ss *session, id string) (bool, error) {
	var st unix.Stat_t
	err := unix.Fstatat(int(s.nsDir.Fd()), id+"/"+lockName, &st, unix.AT_SYMLINK_NOFOLLOW)
	if err != nil {
		return false, notFound(&fs.PathError{Op: "lstat", Path: id + "/" + lockName, Err: err})
	}
	return fileID{dev: st.Dev, ino: st.Ino} == ss.lockID, nil
}

// notFound turns "no such file" (or a path through a non-folder) into
// cairn.ErrNotFound.
func notFound(err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return cairn.ErrNotFound
	}
	return err
}

// flock takes a file lock, polling while another process holds it so that
// ctx can stop the wait.
func flock(ctx context.Context, f *os.File, how int) error {
	fd := int(f.Fd())
	delay := 20 * time.Microsecond
	for {
		err := syscall.Flock(fd, how|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case !errors.Is(err, syscall.EWOULDBLOCK):
			return fmt.Errorf("lock: %w", err)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		delay = min(delay*2, 5*time.Millisecond)
	}
}

// refresh brings ss up to date with the log, with the file lock held. In
// the common case the log has the length ss remembers and nothing is read.
// If another process appended, its info.json covers the new lines. What no
// info covers (lines made durable by an append whose process then died) is
// read and summarised; a torn tail is ignored, and with the exclusive lock
// cut off and the recovered info saved.
func (s *Store) refresh(ss *session, id string, exclusive bool) error {
	fi, err := ss.logF.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	if ss.known && size == ss.size {
		return nil
	}
	if !ss.known || size < ss.size {
		if err := s.loadBase(ss, id, size); err != nil {
			return err
		}
	}
	if size > ss.size {
		if m, err := s.readCache(id); err == nil && m.LogSize > ss.size && m.LogSize <= size {
			ss.info, ss.size = m.SessionInfo, m.LogSize
		}
	}
	if size == ss.size {
		return nil
	}
	return s.recoverTail(ss, id, fi, exclusive)
}

// loadBase sets ss from info.json or meta.json, whichever covers more of
// the log without claiming more than there is. When both claim more (the
// log lost what they describe) the info is rebuilt from the start.
func (s *Store) loadBase(ss *session, id string, size int64) error {
	info, ierr := s.readCache(id)
	meta, merr := s.readMeta(id)
	if ierr != nil && merr != nil {
		return fmt.Errorf("session info unreadable: %w", merr)
	}
	ss.metaSize = 0
	if merr == nil {
		ss.metaSize = meta.LogSize
	}
	iok := ierr == nil && info.LogSize <= size
	mok := merr == nil && meta.LogSize <= size
	var base metaFile
	switch {
	case iok && (!mok || info.LogSize >= meta.LogSize):
		base = info
	case mok:
		base = meta
	default:
		base = meta
		if merr != nil {
			base = info
		}
		base.SessionInfo = cairn.SessionInfo{ID: base.ID, CreatedAt: base.CreatedAt, UpdatedAt: base.CreatedAt,
			Status: cairn.StatusNew, Labels: base.Labels}
		base.LogSize, ss.metaSize = 0, 0
	}
	ss.info, ss.size, ss.known = base.SessionInfo, base.LogSize, true
	return nil
}

// recoverTail reads the log past ss.size, adds the whole appends it finds
// to ss and, with the exclusive lock, truncates a torn tail and saves the
// recovered info durably. The recovered appends are dated by the log's
// modification time, the best the files know.
func (s *Store) recoverTail(ss *session, id string, fi os.FileInfo, exclusive bool) error {
	size := fi.Size()
	buf := make([]byte, size-ss.size)
	if _, err := ss.logF.ReadAt(buf, ss.size); err != nil {
		return fmt.Errorf("read log: %w", err)
	}
	evs, n, err := scanTail(buf, ss.info.LastSeq+1)
	if err != nil {
		return fmt.Errorf("log at byte %d: %w", ss.size, err)
	}
	if len(evs) > 0 {
		updated := ss.info.UpdatedAt
		if mt := fi.ModTime().UTC(); mt.After(updated) {
			updated = mt
		}
		cairn.Summarize(evs).Apply(&ss.info, evs[len(evs)-1].Seq, updated)
		ss.size += int64(n)
	}
	if !exclusive {
		return nil
	}
	if ss.size < size {
		if err := ss.logF.Truncate(ss.size); err != nil {
			return fmt.Errorf("cut torn tail: %w", err)
		}
		if err := ss.logF.Sync(); err != nil {
			return fmt.Errorf("cut torn tail: %w", err)
		}
	}
	if len(evs) > 0 {
		return s.saveInfo(ss, id, true)
	}
	return nil
}
