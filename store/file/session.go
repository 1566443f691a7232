//go:build linux || darwin

package file

import (
	"bytes"
	"container/list"
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
	"github.com/cairnhq/cairn/driver"
)

// session is what the store knows of one session while it is open: its
// in-process lock, its open files and the state of its log as last seen
// under the file lock.
type session struct {
	mu   sync.Mutex    // the in-process lock of the session
	refs int           // callers holding or waiting for mu; guarded by Store.mu
	id   string        // the session's ID
	idle *list.Element // its place in Store.idle while nobody uses it; guarded by Store.mu

	// The fields below are guarded by mu.

	// lockF is the open lock file. Keeping it open pins its inode, so
	// comparing it with the file at the session's path tells exactly
	// whether the folder is still the one these files came from.
	lockF  *os.File
	lockID fileID   // lockF's device and inode
	token  string   // lockF's content: tells this session from others of its ID
	logF   *os.File // the log, opened after lockF from the same folder
	infoF  *os.File // info.json, overwritten in place after each append
	ackF   *os.File // ack.json, overwritten in place after each append

	infoLen int64 // info.json's length, which only grows
	ackLen  int64 // ack.json's length, which only grows

	// search.jsonl (search_file.go), once an append or a catch-up opened
	// it, its length as this store last wrote or read it, and the last
	// seq and the log length its last line records.
	searchF    *os.File
	searchSize int64
	searchLast int64
	searchLog  int64

	known    bool              // whether size, metaSize and info are set
	size     int64             // the log's committed length: the end of its last whole append
	metaSize int64             // the log length the durable meta.json covers
	info     cairn.SessionInfo // the session's info at size
	ack      ackRecord         // ack.json as loadBase read it: what the log must hold
}

// acquire returns the session's entry with its in-process lock held.
func (s *Store) acquire(id string) *session {
	s.mu.Lock()
	ss := s.sessions[id]
	if ss == nil {
		ss = &session{id: id}
		s.sessions[id] = ss
	}
	if ss.idle != nil {
		s.idle.Remove(ss.idle)
		ss.idle = nil
	}
	ss.refs++
	s.mu.Unlock()
	ss.mu.Lock()
	return ss
}

// release unlocks the entry. An entry nobody waits for is forgotten when
// its session is gone, and otherwise keeps its files open as the most
// recently used of the idle ones; past maxOpenSessions idle entries, the
// least recently used is closed and forgotten. (Closing the entry just
// released instead would keep the first sessions a store met open for
// good, and have every other one open its files, read its meta.json and
// info.json and take its lock afresh on each call.)
func (s *Store) release(id string, ss *session) {
	ss.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	ss.refs--
	if ss.refs > 0 {
		return
	}
	if ss.lockF == nil {
		delete(s.sessions, id)
		return
	}
	ss.idle = s.idle.PushFront(ss)
	if s.idle.Len() > maxOpenSessions {
		old := s.idle.Remove(s.idle.Back()).(*session)
		old.idle = nil
		old.closeFiles() // nobody holds or waits for its mu: refs is 0, under s.mu
		delete(s.sessions, old.id)
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
	if ss.ackF != nil {
		ss.ackF.Close()
	}
	ss.closeSearch()
	ss.lockF, ss.logF, ss.infoF, ss.ackF, ss.known = nil, nil, nil, nil, false
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
// exist, and a *driver.DamagedError when it is damaged. On success the
// caller runs ss.unlock.
func (s *Store) lock(ctx context.Context, ss *session, id string, exclusive bool) error {
	damage, err := s.lockAny(ctx, ss, id, exclusive)
	if err != nil {
		return err
	}
	if damage != nil {
		ss.unlock()
		return damage
	}
	return nil
}

// withSession runs fn on the session with its lock held (exclusive when
// fn writes), once the session is found live at now, the time fn is
// given: ErrNotFound for one missing, deleted or expired, the damage of a
// damaged one.
func (s *Store) withSession(ctx context.Context, id string, exclusive bool, fn func(ss *session, now time.Time) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ss := s.acquire(id)
	defer s.release(id, ss)
	if err := s.lock(ctx, ss, id, exclusive); err != nil {
		return err
	}
	defer ss.unlock()
	now := s.opts.Now().UTC()
	if s.expired(ss.info, now) {
		return cairn.ErrNotFound
	}
	return fn(ss, now)
}

// lockAny is lock for the calls that take a damaged session as it is
// (Delete, Check): a damaged session's damage is returned apart, with the
// lock held and ss.info as far as it is known. An error is returned with
// the lock released.
func (s *Store) lockAny(ctx context.Context, ss *session, id string, exclusive bool) (*driver.DamagedError, error) {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	for attempt := 0; ; attempt++ {
		if ss.lockF == nil {
			if err := s.openFiles(ss, id); err != nil {
				if d, ok := errors.AsType[*driver.DamagedError](err); ok {
					s.noteDamage(id, fileID{}, d)
				}
				return nil, err
			}
		}
		if err := flock(ctx, ss.lockF, how); err != nil {
			return nil, err
		}
		same, err := s.current(ss, id)
		if err != nil || !same {
			// Deleted, or deleted and created again, since the files
			// were opened: start over with the folder that is there now.
			ss.closeFiles()
			if err != nil {
				return nil, err
			}
			if attempt == 8 {
				return nil, errors.New("session folder keeps being replaced")
			}
			continue
		}
		if d := s.damageOf(id, ss.lockID); d != nil {
			return d, nil
		}
		if err := s.refresh(ss, id, exclusive); err != nil {
			if d, ok := errors.AsType[*driver.DamagedError](err); ok {
				s.noteDamage(id, ss.lockID, d)
				return d, nil
			}
			ss.unlock()
			return nil, err
		}
		return nil, nil
	}
}

// openFiles opens the session's lock file, then its log, info.json and
// ack.json (which it makes if they are missing: ack.json is new with the
// session's first append, and each is one of the records the log is
// checked against, which another can stand in for).
//
// A session folder whose lock file or log is missing is damaged: a session
// is created whole, and deleted by renaming its folder away.
func (s *Store) openFiles(ss *session, id string) error {
	s.opens.Add(1)
	for try := 0; ; try++ {
		err := s.openFilesOnce(ss, id)
		if !errors.Is(err, errReplaced) {
			return err
		}
		if try == 100 {
			return fmt.Errorf("%w: session %s was deleted and created again %d times while it was being opened", cairn.ErrUnavailable, id, try+1)
		}
	}
}

// errReplaced says that a session's folder was replaced (deleted and
// created again) while its files were being opened: open them again.
var errReplaced = errors.New("the session's folder was replaced")

func (s *Store) openFilesOnce(ss *session, id string) error {
	lockF, err := s.ns.OpenFile(id+"/"+lockName, os.O_RDWR, 0)
	if err != nil {
		return s.missing(id, lockName, err)
	}
	logF, err := s.ns.OpenFile(id+"/"+logName, os.O_RDWR, 0)
	if err != nil {
		lockF.Close()
		return s.missing(id, logName, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(lockF.Fd()), &st); err != nil {
		lockF.Close()
		logF.Close()
		return err
	}
	lockID := fileID{dev: uint64(st.Dev), ino: st.Ino}
	token, err := readToken(lockF)
	if err != nil {
		lockF.Close()
		logF.Close()
		return err
	}
	infoF, infoLen, err := s.openInPlace(id + "/" + infoName)
	if err != nil {
		lockF.Close()
		logF.Close()
		return notFound(err)
	}
	ackF, ackLen, err := s.openInPlace(id + "/" + ackName)
	if err != nil {
		lockF.Close()
		logF.Close()
		infoF.Close()
		return notFound(err)
	}
	ss.lockF, ss.lockID, ss.token, ss.logF, ss.known = lockF, lockID, token, logF, false
	ss.infoF, ss.infoLen, ss.ackF, ss.ackLen = infoF, infoLen, ackF, ackLen
	return nil
}

// openInPlace opens (or makes) a file the store overwrites in place, and
// returns its length.
func (s *Store) openInPlace(name string) (*os.File, int64, error) {
	f, err := s.ns.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, fi.Size(), nil
}

// missing returns cairn.ErrNotFound when a session's file could not be
// opened because its folder is not there, and a *driver.DamagedError when
// the folder is there without the file.
//
// A folder is created whole and deleted whole (each by a rename), so a
// file missing from a folder that is there is damage only if the same
// folder, looked at twice, lacks it. Otherwise the folder the open went
// through was deleted and another took its place meanwhile: errReplaced,
// and the caller opens the new one.
func (s *Store) missing(id, name string, err error) error {
	err = notFound(err)
	if !errors.Is(err, cairn.ErrNotFound) {
		return err
	}
	before, serr := s.ns.Lstat(id)
	if serr != nil || !before.IsDir() {
		return err
	}
	_, ferr := s.ns.Lstat(id + "/" + name)
	after, aerr := s.ns.Lstat(id)
	if ferr == nil || aerr != nil || !os.SameFile(before, after) {
		return errReplaced
	}
	return &driver.DamagedError{Session: id, Where: id + "/" + name, Msg: "the session's folder has no " + name}
}

// fileID is what makes a file itself: its device and inode. (Stat_t.Dev
// is an int32 on macOS: it is widened, the same way every time.)
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
	return s.isLockFile(id, ss.lockID)
}

// isLockFile reports whether session id's lock file path names the file
// lockID, as current does for a session's files.
func (s *Store) isLockFile(id string, lockID fileID) (bool, error) {
	var st unix.Stat_t
	err := unix.Fstatat(int(s.nsDir.Fd()), id+"/"+lockName, &st, unix.AT_SYMLINK_NOFOLLOW)
	if err != nil {
		return false, notFound(&fs.PathError{Op: "lstat", Path: id + "/" + lockName, Err: err})
	}
	return fileID{dev: uint64(st.Dev), ino: st.Ino} == lockID, nil
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
//
// A log shorter than what the store acknowledged is damaged: a
// *driver.DamagedError, and nothing is written to it (see recoverTail for
// the rule). What was acknowledged is what this store last saw, and
// otherwise the most that meta.json, info.json and ack.json say.
func (s *Store) refresh(ss *session, id string, exclusive bool) error {
	fi, err := ss.logF.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	if ss.known && size == ss.size {
		return nil
	}
	if ss.known && size < ss.size {
		return s.shortLog(id, size, ss.size, "this store read or wrote")
	}
	if !ss.known {
		if err := s.loadBase(ss, id, size); err != nil {
			return err
		}
	}
	if size > ss.size {
		if m, err := s.readCache(id); err == nil && m.LogSize > size {
			return s.shortLog(id, size, m.LogSize, infoName+" says were acknowledged")
		} else if err == nil && m.LogSize > ss.size {
			ss.info, ss.size = m.SessionInfo, m.LogSize
		}
	}
	if size == ss.size {
		return s.checkAcked(ss, id)
	}
	return s.recoverTail(ss, id, fi, exclusive)
}

// checkAcked checks ss, brought up to date with the log, against the
// ack.json that loadBase read; on damage ss is forgotten, so that nothing
// goes on from it.
func (s *Store) checkAcked(ss *session, id string) error {
	if err := ackAgrees(id, ss.ack, ss.size, ss.info.LastSeq); err != nil {
		ss.known = false
		return err
	}
	return nil
}

// shortLog is the damage of a log of size bytes where the store
// acknowledged ack.
func (s *Store) shortLog(id string, size, ack int64, who string) error {
	return &driver.DamagedError{Session: id, Where: id + "/" + logName, Msg: fmt.Sprintf(
		"the log is %d bytes, shorter than the %d bytes %s: acknowledged events were cut off its end; nothing is written to it",
		size, ack, who)}
}

// loadBase sets ss from meta.json, or from info.json where that covers
// more, and keeps ack.json's record for checkAcked. All three record the
// log length they describe, which the store acknowledged: a log shorter
// than any of them, or one that does not end an event there, is damaged.
// So is a meta.json that is missing or does not read: it is only ever
// replaced whole. info.json and ack.json are overwritten in place without
// an fsync, which a crash can tear: one that is missing or fails its
// checksum is passed over, and the other stands in for it (see ackName).
func (s *Store) loadBase(ss *session, id string, size int64) error {
	meta, err := s.readMeta(id)
	if err != nil {
		return &driver.DamagedError{Session: id, Where: id + "/" + metaName, Msg: "unreadable: " + err.Error()}
	}
	base, from := meta, metaName
	if info, err := s.readCache(id); err == nil && info.LogSize >= meta.LogSize {
		base, from = info, infoName
	}
	ack, err := s.readAck(id)
	if err != nil {
		ack = ackRecord{}
	}
	for _, r := range []struct {
		size int64
		who  string
	}{{base.LogSize, from}, {ack.LogSize, fmt.Sprintf("%s (events to seq %d)", ackName, ack.LastSeq)}} {
		if size < r.size {
			return s.shortLog(id, size, r.size, r.who+" says were acknowledged")
		}
		if err := s.endsEvent(ss, id, r.size, r.who); err != nil {
			return err
		}
	}
	ss.metaSize = meta.LogSize
	ss.info, ss.size, ss.ack, ss.known = base.SessionInfo, base.LogSize, ack, true
	return nil
}

// endsEvent checks that an event of the log ends at byte at, where the
// record who says the acknowledged events end.
func (s *Store) endsEvent(ss *session, id string, at int64, who string) error {
	if at == 0 {
		return nil
	}
	end := make([]byte, min(2, at))
	if _, err := ss.logF.ReadAt(end, at-int64(len(end))); err != nil {
		return fmt.Errorf("read log: %w", err)
	}
	if !bytes.HasSuffix([]byte("}\n"), end) {
		return &driver.DamagedError{Session: id, Where: id + "/" + logName, Msg: fmt.Sprintf(
			"no event ends at byte %d, where %s says the acknowledged events end", at, who)}
	}
	return nil
}

// recoverTail reads the log past ss.size, adds the whole appends it finds
// to ss and, with the exclusive lock, truncates a torn tail and saves the
// recovered info durably. The recovered appends are dated by the log's
// modification time, the best the files know.
//
// The rule, which keeps recovery from cutting acknowledged events: an
// Append returns only once its lines are whole in the log and durable
// (the journal's fdatasync, or the log's fsync), and writes info.json and
// ack.json after that. So the bytes up to the length that info.json,
// ack.json, meta.json or this store last acknowledged are acknowledged
// events: the store never cuts or rewrites them, and a log shorter than
// that, or whose whole appends end before it, is damage (refresh,
// loadBase, checkAcked). Past that length the log may hold whole appends
// that were acknowledged just before their process died, before it wrote
// info.json: they are kept. What follows the last whole append (an incomplete line,
// a line that does not check, the first lines of an append without its
// last) was never acknowledged, since its Append had not returned: that
// is a torn tail, which a crash leaves, and it is cut. A line that checks
// after one that does not, or a seq out of order, is not what a crash
// leaves: that is damage, and nothing is cut.
func (s *Store) recoverTail(ss *session, id string, fi os.FileInfo, exclusive bool) error {
	size := fi.Size()
	buf := make([]byte, size-ss.size)
	if _, err := ss.logF.ReadAt(buf, ss.size); err != nil {
		return fmt.Errorf("read log: %w", err)
	}
	evs, n, err := scanTail(buf, ss.info.LastSeq+1)
	if err != nil {
		return &driver.DamagedError{Session: id, Where: fmt.Sprintf("%s/%s, byte %d", id, logName, ss.size), Msg: err.Error()}
	}
	if len(evs) > 0 {
		updated := ss.info.UpdatedAt
		if mt := fi.ModTime().UTC(); mt.After(updated) {
			updated = mt
		}
		driver.Summarize(evs).Apply(&ss.info, evs[len(evs)-1].Seq, updated)
		ss.size += int64(n)
	}
	// What ack.json says was acknowledged must be among the whole appends
	// read, before anything is cut.
	if err := s.checkAcked(ss, id); err != nil {
		return err
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
