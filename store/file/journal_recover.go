//go:build linux || darwin

package file

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
)

// Reading journals back: the replay of those a dead store left when a store
// opens, and the voiding of a deleted session's records in all of them.

// orphan is a journal file no store holds, locked by this one.
type orphan struct {
	name string
	f    *os.File
	recs []record // the appends its halves hold
	used [2]int64 // where each half's records end: zero for a clean journal
}

// record is one append a journal holds.
type record struct {
	id, token string
	off       int64
	data      []byte
	journal   string // the journal's file name, for messages; set by readRecords' callers
}

// lockJournals takes the namespace's journal lock, creating the journal
// folder if it is missing, and returns its release.
func (s *Store) lockJournals(ctx context.Context) (func(), error) {
	if err := s.ns.Mkdir(journalDir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("journal: %w", err)
	}
	f, err := s.ns.OpenFile(journalDir+"/"+journalLockName, os.O_RDWR|os.O_CREATE, journalFileMode)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	if err := flock(ctx, f, syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("journal: %w", err)
	}
	return func() { f.Close() }, nil
}

// tryLockJournals takes the namespace's journal lock if no one holds it,
// and returns its release, or nil when it is held.
func (s *Store) tryLockJournals() (func(), error) {
	f, err := s.ns.OpenFile(journalDir+"/"+journalLockName, os.O_RDWR|os.O_CREATE, journalFileMode)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		f.Close()
		return nil, nil
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("journal: %w", err)
	}
	return func() { f.Close() }, nil
}

// journalNames returns the names in the namespace's journal folder,
// sorted: the journals, the lock file and what is being made. Its error
// wraps fs.ErrNotExist when there is no journal folder.
func (s *Store) journalNames() ([]string, error) {
	d, err := s.ns.Open(journalDir)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	slices.Sort(names)
	return names, nil
}

// freeJournals locks and reads every journal file no other store holds.
// With tidy set it also removes what a crash left of making one.
func (s *Store) freeJournals(tidy bool) ([]orphan, error) {
	names, err := s.journalNames()
	if err != nil {
		return nil, err
	}
	var free []orphan
	for _, name := range names {
		if name == journalLockName || name == halfLockDir {
			continue
		}
		if name[0] == '.' {
			// A journal being made, or one a crash interrupted the making
			// of: only those abandoned long ago are removed.
			if fi, err := s.ns.Lstat(journalDir + "/" + name); tidy && err == nil && time.Since(fi.ModTime()) > staleTmpAge {
				s.ns.Remove(journalDir + "/" + name)
			}
			continue
		}
		path := journalDir + "/" + name
		f, err := s.ns.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			closeOrphans(free)
			return nil, fmt.Errorf("journal %s: %w", name, err)
		}
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close() // a live store's
			continue
		}
		o := orphan{name: name, f: f}
		if err == nil {
			o.recs, o.used, err = readRecords(f)
		}
		for i := range o.recs {
			o.recs[i].journal = name
		}
		if err != nil {
			f.Close()
			closeOrphans(free)
			return nil, fmt.Errorf("journal %s: %w", name, err)
		}
		free = append(free, o)
	}
	return free, nil
}

func closeOrphans(free []orphan) {
	for _, o := range free {
		o.f.Close()
	}
}

// recoverJournals replays the journals of stores that died, once, when the
// store opens: under the journal lock, so that no other store of the
// namespace reads a log before the replay is done.
func (s *Store) recoverJournals(ctx context.Context) error {
	if _, err := s.ns.Stat(journalDir); errors.Is(err, fs.ErrNotExist) {
		return nil // no store of the namespace has appended yet
	}
	unlock, err := s.lockJournals(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	free, err := s.freeJournals(true)
	if err != nil {
		return err
	}
	defer closeOrphans(free)
	return s.replay(ctx, free)
}

// replay brings every session's log up to what the journals hold, fsyncs
// the logs it wrote, and marks the journals clean. The records of a
// session are written in the order of their offsets, across journals: a
// session appended by several processes has records in each one's
// journal. A record is skipped when its session was deleted, or deleted
// and created again (the token in the session's lock file differs).
//
// A session whose records do not fit its log (the log ends before one of
// them: it lost what a checkpoint had made durable), or whose log cannot
// be written, is damaged: the store remembers it, and its records stay in
// their journal, which keeps what its log lost. The other sessions'
// records are replayed and voided, so that journal holds nothing of
// theirs; it stays unused until the damaged sessions are deleted (which
// voids their records) and the next Open zeroes it.
func (s *Store) replay(ctx context.Context, free []orphan) error {
	bySession := map[string][]record{}
	for _, o := range free {
		for _, r := range o.recs {
			bySession[r.id] = append(bySession[r.id], r)
		}
	}
	ids := slices.Sorted(func(yield func(string) bool) {
		for id := range bySession {
			if !yield(id) {
				return
			}
		}
	})
	damaged := map[string]bool{}
	for _, id := range ids {
		recs := bySession[id]
		slices.SortStableFunc(recs, func(a, b record) int { return cmp.Compare(a.off, b.off) })
		lockID, err := s.replaySession(ctx, id, recs)
		if err == nil {
			continue
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		d, ok := errors.AsType[*driver.DamagedError](err)
		if !ok {
			d = &driver.DamagedError{Session: id, Where: id + "/" + logName,
				Msg: "the journal's appends could not be written to the log: " + err.Error()}
		}
		s.noteDamage(id, lockID, d)
		damaged[id] = true
	}
	for _, o := range free {
		if err := s.cleanOrphan(o, damaged); err != nil {
			return fmt.Errorf("journal %s: %w", o.name, err)
		}
	}
	return nil
}

// cleanOrphan marks each used half of a replayed journal clean, or, if it
// holds appends of sessions found damaged, voids the others' records.
func (s *Store) cleanOrphan(o orphan, damaged map[string]bool) error {
	if o.used == [2]int64{} {
		return nil
	}
	locks, err := s.openHalfLocks(o.f, o.name)
	if err != nil {
		return err
	}
	defer locks.close()
	for i, used := range o.used {
		if used == 0 {
			continue
		}
		if len(damaged) > 0 && o.holds(i, damaged) {
			err = voidHalf(o.f, locks, i, func(id string) bool { return !damaged[id] })
		} else {
			err = clean(o.f, locks, i, used)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// holds reports whether half i of the journal holds appends of a session
// of ids.
func (o orphan) holds(i int, ids map[string]bool) bool {
	buf, err := readHalf(o.f, i)
	if err != nil {
		return true // keep it: it may
	}
	entries, _ := scanJournal(buf)
	for _, e := range entries {
		if e.kind == recAppend && ids[e.id] {
			return true
		}
	}
	return false
}

// clean zeroes the records of a journal's half i, under its write lock.
func clean(f *os.File, locks halfLocks, i int, used int64) error {
	base, _, err := halfBounds(f, i)
	if err != nil {
		return err
	}
	if err := locks.lock(i); err != nil {
		return err
	}
	defer locks.unlock(i)
	return zero(f, base, used)
}

// scrub voids the records of session id in every journal of the
// namespace, the live stores' too, under each journal's write lock: the
// record keeps its length, its bytes are zeroed, and it no longer names
// the session. It runs when a session is deleted, after its folder is
// gone, so that no file of the store holds its events.
func (s *Store) scrub(id string) error {
	names, err := s.journalNames()
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, name := range names {
		if name == journalLockName || name[0] == '.' {
			continue
		}
		if err := s.scrubFile(name, id); err != nil {
			errs = append(errs, fmt.Errorf("journal %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// scrubFile voids the records of session id in the journal name.
func (s *Store) scrubFile(name, id string) error {
	f, err := s.ns.OpenFile(journalDir+"/"+name, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	locks, err := s.openHalfLocks(f, name)
	if err != nil {
		return err
	}
	defer locks.close()
	var errs []error
	for i := range 2 {
		errs = append(errs, scrubHalf(f, locks, i, id))
	}
	return errors.Join(errs...)
}

// scrubHalf voids the records of session id in half i of a journal.
func scrubHalf(f *os.File, locks halfLocks, i int, id string) error {
	return voidHalf(f, locks, i, func(rid string) bool { return rid == id })
}

// voidHalf voids the records in half i of a journal whose session match
// reports, under the half's write lock: each keeps its length, its bytes
// are zeroed, and it no longer names the session.
func voidHalf(f *os.File, locks halfLocks, i int, match func(id string) bool) error {
	if err := locks.lock(i); err != nil {
		return err
	}
	defer locks.unlock(i)
	base, _, err := halfBounds(f, i)
	if err != nil {
		return err
	}
	buf, err := readHalf(f, i)
	if err != nil {
		return err
	}
	entries, _ := scanJournal(buf)
	wrote := false
	for _, e := range entries {
		if e.kind != recAppend || !match(e.id) {
			continue
		}
		gen := binary.LittleEndian.Uint64(buf[e.pos+8:])
		void := appendRecord(nil, gen, recVoid, "", "", 0, make([]byte, e.end-e.pos-recHeader))
		if _, err := f.WriteAt(void, base+int64(e.pos)); err != nil {
			return err
		}
		wrote = true
	}
	if !wrote {
		return nil
	}
	return datasync(f)
}

// replaySession writes one session's records into its log, under the
// session's exclusive file lock, and returns the session's lock file. A
// log that ends before a record is damaged (a *driver.DamagedError), and
// nothing is written to it.
func (s *Store) replaySession(ctx context.Context, id string, recs []record) (fileID, error) {
	lockF, err := s.ns.OpenFile(id+"/"+lockName, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return fileID{}, nil // deleted
	}
	if err != nil {
		return fileID{}, err
	}
	defer lockF.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(lockF.Fd()), &st); err != nil {
		return fileID{}, err
	}
	lockID := fileID{dev: uint64(st.Dev), ino: st.Ino}
	if err := flock(ctx, lockF, syscall.LOCK_EX); err != nil {
		return lockID, err
	}
	// A Delete holds the lock while it moves the folder away, and the
	// session may be created again before the lock is ours: the token read
	// from this file would then be the deleted session's, and the log
	// opened by its path the new session's. With the lock held, the path
	// names this file only while the folder is the one it was in.
	if same, err := s.isLockFile(id, lockID); err != nil || !same {
		if errors.Is(err, cairn.ErrNotFound) {
			err = nil
		}
		return fileID{}, err // deleted, and perhaps created again
	}
	token, err := readToken(lockF)
	if err != nil {
		return lockID, err
	}
	logF, err := s.ns.OpenFile(id+"/"+logName, os.O_RDWR, 0)
	if err != nil {
		return lockID, err
	}
	defer logF.Close()
	fi, err := logF.Stat()
	if err != nil {
		return lockID, err
	}
	// The records, in the order of their offsets, must each start
	// within the log as the ones before leave it: a gap is events lost.
	end := fi.Size()
	for _, r := range recs {
		if r.token != token {
			continue
		}
		if r.off > end {
			return lockID, &driver.DamagedError{Session: id, Where: id + "/" + logName, Msg: fmt.Sprintf(
				"the log ends at byte %d, before an acknowledged append at byte %d that the journal %s/%s holds: "+
					"the log lost events that were durable; the journal keeps that append, and nothing is written to the session",
				end, r.off, journalDir, r.journal)}
		}
		end = max(end, r.off+int64(len(r.data)))
	}
	wrote := false
	for _, r := range recs {
		if r.token != token {
			continue // another session of the same ID
		}
		old := make([]byte, len(r.data))
		n, err := logF.ReadAt(old, r.off)
		if err != nil && !errors.Is(err, io.EOF) {
			return lockID, err
		}
		if n == len(old) && bytes.Equal(old, r.data) {
			continue
		}
		if _, err := logF.WriteAt(r.data, r.off); err != nil {
			return lockID, err
		}
		wrote = true
	}
	if wrote {
		return lockID, logF.Sync()
	}
	return lockID, nil
}

// keptJournals returns, as problems for Check, the journals that no store
// holds and that keep appends of sessions found damaged, and files of the
// journal folder that are not journals (every Open fails on those). It
// works under the journal lock, as Open's replay does.
func (s *Store) keptJournals(ctx context.Context) ([]driver.Problem, error) {
	if _, err := s.ns.Stat(journalDir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	unlock, err := s.lockJournals(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	names, err := s.journalNames()
	if err != nil {
		return nil, err
	}
	var out []driver.Problem
	for _, name := range names {
		if name == journalLockName || name[0] == '.' {
			continue
		}
		where := journalDir + "/" + name
		f, err := s.ns.OpenFile(where, os.O_RDWR, 0)
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			f.Close() // a live store's
			continue
		}
		recs, _, err := readRecords(f)
		f.Close()
		if err != nil {
			out = append(out, driver.Problem{Where: where, Damage: true, Msg: err.Error(),
				Fix: "it is not one of the store's journals, and every Open of the store fails on it: move it out of " + journalDir + "/"})
			continue
		}
		var kept []string
		for _, r := range recs {
			if lockID, err := s.lockFileID(r.id); err == nil && s.damageOf(r.id, lockID) != nil && !slices.Contains(kept, r.id) {
				kept = append(kept, r.id)
			}
		}
		if len(kept) > 0 {
			out = append(out, driver.Problem{Where: where, Msg: "keeps the appends that the logs of the damaged sessions " +
				strings.Join(kept, ", ") + " lost (it holds nothing of any other session)",
				Fix: "keep it: deleting those sessions voids their appends in it, and the next open of the store then empties it"})
		}
	}
	return out, nil
}
