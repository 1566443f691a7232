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
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Reading journals back: the replay of those a dead store left when a
// store opens, and the voiding of a deleted session's records in all of
// them.

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

// freeJournals locks and reads every journal file no other store holds.
// With tidy set it also removes what a crash left of making one.
func (s *Store) freeJournals(tidy bool) ([]orphan, error) {
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
	var free []orphan
	for _, name := range names {
		if name == journalLockName {
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
	for _, id := range ids {
		recs := bySession[id]
		slices.SortStableFunc(recs, func(a, b record) int { return cmp.Compare(a.off, b.off) })
		if err := s.replaySession(ctx, id, recs); err != nil {
			return fmt.Errorf("replay journal: session %s: %w", id, err)
		}
	}
	for _, o := range free {
		for i, used := range o.used {
			if used == 0 {
				continue
			}
			if err := clean(o.f, i, used); err != nil {
				return fmt.Errorf("journal %s: %w", o.name, err)
			}
		}
	}
	return nil
}

// clean zeroes the records of a journal's half i, under its write lock.
func clean(f *os.File, i int, used int64) error {
	base, _, err := halfBounds(f, i)
	if err != nil {
		return err
	}
	if err := lockRange(f, i); err != nil {
		return err
	}
	defer unlockRange(f, i)
	return zero(f, base, used)
}

// scrub voids the records of session id in every journal of the
// namespace, the live stores' too, under each journal's write lock: the
// record keeps its length, its bytes are zeroed, and it no longer names
// the session. It runs when a session is deleted, after its folder is
// gone, so that no file of the store holds its events.
func (s *Store) scrub(id string) error {
	d, err := s.ns.Open(journalDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	var errs []error
	for _, name := range names {
		if name == journalLockName || name[0] == '.' {
			continue
		}
		if err := s.scrubFile(journalDir+"/"+name, id); err != nil {
			errs = append(errs, fmt.Errorf("journal %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

func (s *Store) scrubFile(name, id string) error {
	f, err := s.ns.OpenFile(name, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	var errs []error
	for i := range 2 {
		errs = append(errs, scrubHalf(f, i, id))
	}
	return errors.Join(errs...)
}

// scrubHalf voids the records of session id in half i of a journal.
func scrubHalf(f *os.File, i int, id string) error {
	if err := lockRange(f, i); err != nil {
		return err
	}
	defer unlockRange(f, i)
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
		if e.kind != recAppend || e.id != id {
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
	return unix.Fdatasync(int(f.Fd()))
}

// replaySession writes one session's records into its log, under the
// session's exclusive file lock.
func (s *Store) replaySession(ctx context.Context, id string, recs []record) error {
	lockF, err := s.ns.OpenFile(id+"/"+lockName, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil // deleted
	}
	if err != nil {
		return err
	}
	defer lockF.Close()
	if err := flock(ctx, lockF, syscall.LOCK_EX); err != nil {
		return err
	}
	token, err := readToken(lockF)
	if err != nil {
		return err
	}
	logF, err := s.ns.OpenFile(id+"/"+logName, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer logF.Close()
	wrote := false
	for _, r := range recs {
		if r.token != token {
			continue // another session of the same ID
		}
		fi, err := logF.Stat()
		if err != nil {
			return err
		}
		if size := fi.Size(); r.off > size {
			return fmt.Errorf("the log ends at byte %d, before an acknowledged append at byte %d that the journal holds: "+
				"the log lost events that were durable (remove the journal folder %s to open the store anyway)", size, r.off, journalDir)
		}
		old := make([]byte, len(r.data))
		n, err := logF.ReadAt(old, r.off)
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if n == len(old) && bytes.Equal(old, r.data) {
			continue
		}
		if _, err := logF.WriteAt(r.data, r.off); err != nil {
			return err
		}
		wrote = true
	}
	if wrote {
		return logF.Sync()
	}
	return nil
}
