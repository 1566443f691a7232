//go:build linux || darwin

package file

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"syscall"
)

// The journal is the store's group commit. An append writes its lines to
// the session's log without an fsync, then hands a copy to the journal:
// one preallocated file per open store, which writes the copies of every
// append waiting at that moment, from any session, with one write and one
// fdatasync. Each caller returns only after the fdatasync that covers its
// own copy. The file has two halves, written one at a time. When the one
// being written is full, appends go on in the other while, in the
// background, the store fsyncs the logs of the sessions the full half
// holds appends of and then zeroes it (a checkpoint). Until then the
// journal holds what a crash of the machine could take from the logs.
// Open replays the journals no live store holds, before anything reads a
// log.
const (
	journalDir      = ".journal" // in the namespace folder
	journalLockName = "lock"     // in journalDir: held while a store opening replays journals
	halfLockDir     = ".halves"  // in journalDir: the files of the half locks, where they are files (journal_flock.go)
	minJournalSize  = 64 << 10   // smaller files are not journals this store made
	recHeader       = 32         // bytes before a record's ID
	recAppend       = 1          // a record of an append
	recVoid         = 3          // a voided append
	tokenLen        = 32         // hex digits of a session's token
	journalMagic    = "cjr1"     // the first bytes of every record
	journalFileMode = os.FileMode(0o600)
)

// newJournalSize is a new journal's capacity, zero-filled (a variable for
// tests).
var newJournalSize int64 = 8 << 20

// journal is a store's group commit; see the comment above.
type journal struct {
	s *Store

	mu      sync.Mutex
	pending []*commit
	running bool  // a leader is writing; guarded by mu
	broken  error // why the journal is no longer used; guarded by mu

	// Fields below are the leader's: only the goroutine that set running
	// (or Close, once no call is under way) touches them.
	f       *os.File  // the journal file, locked; nil until the first append
	locks   halfLocks // the write locks of its halves
	size    int64     // its capacity
	halves  [2]half
	cur     int        // the half being written
	ckpt    chan error // the other half's checkpoint, while it runs
	buf     []byte
	flushes int // writes of the journal, for tests
}

// half is one half of a journal file.
type half struct {
	base  int64           // where it starts in the file
	off   int64           // where its records end, from base
	gen   uint64          // the generation of its records
	dirty map[string]bool // sessions it holds appends of
}

// commit is one append waiting for the journal.
type commit struct {
	id, token string
	off       int64
	data      []byte
	done      chan byte // failed, durable or lead
	result    byte      // set by the leader
	in        bool      // whether the leader writes it; set by the leader
}

// write makes data, already written at off in the log of session id,
// durable through the journal. It returns durable, or else failed (the
// journal could not take it: too large, or the journal failed) or maybe
// (the journal failed while writing it: the record may be on the disk);
// the caller then fsyncs the log itself.
//
// The first caller to find the journal idle leads: it writes what is
// pending, its own record with the rest, and hands the lead to the first
// caller that arrived meanwhile, so that no caller writes for others
// longer than one batch.
func (j *journal) write(id, token string, off int64, data []byte) byte {
	c := &commit{id: id, token: token, off: off, data: data, done: make(chan byte, 1)}
	j.mu.Lock()
	if j.broken != nil {
		j.mu.Unlock()
		return failed
	}
	j.pending = append(j.pending, c)
	if j.running {
		j.mu.Unlock()
		if r := <-c.done; r != lead {
			return r
		}
		j.mu.Lock()
	}
	j.running = true
	batch := j.pending
	j.pending = nil
	j.mu.Unlock()
	j.flush(batch)
	j.mu.Lock()
	if len(j.pending) > 0 {
		j.pending[0].done <- lead
	} else {
		j.running = false
	}
	j.mu.Unlock()
	for _, b := range batch[1:] {
		b.done <- b.result
	}
	return batch[0].result
}

// size is the length of c's record.
func (c *commit) size() int64 { return int64(recHeader + len(c.id) + len(c.token) + len(c.data)) }

// fits reports whether the journal takes c: a record larger than a
// quarter of a half is left to its caller.
func (j *journal) fits(c *commit) bool { return c.size() <= j.size/8 }

// What a waiting commit is told.
const (
	failed  byte = iota // not in the journal: fsync the log instead
	maybe               // the journal failed writing it: fsync the log instead
	durable             // the journal holds it
	lead                // write the pending batch
)

// fail stops the journal: later appends fsync their logs.
func (j *journal) fail(err error) {
	j.mu.Lock()
	if j.broken == nil {
		j.broken = err
	}
	j.mu.Unlock()
}

// flush writes a batch's records with one write and one fdatasync,
// moving on to the other half first when they do not fit in this one, and
// sets each commit's result.
func (j *journal) flush(batch []*commit) {
	j.mu.Lock()
	broken := j.broken
	j.mu.Unlock()
	if broken != nil {
		return
	}
	if j.f == nil {
		if err := j.take(); err != nil {
			j.fail(err)
			return
		}
	}
	// The batch's records, as many as a half holds; the others are left
	// to their callers.
	n := int64(0)
	for _, c := range batch {
		if c.in = j.fits(c) && n+c.size() <= j.size/2; c.in {
			n += c.size()
		}
	}
	if n == 0 {
		return
	}
	h := &j.halves[j.cur]
	if h.off+n > j.size/2 {
		if err := j.switchHalves(); err != nil {
			j.fail(err)
			return
		}
		h = &j.halves[j.cur]
	}
	j.buf = j.buf[:0]
	for _, c := range batch {
		if c.in {
			j.buf = appendRecord(j.buf, h.gen, recAppend, c.id, c.token, c.off, c.data)
		}
	}
	if err := j.locks.lock(j.cur); err != nil {
		j.fail(err)
		return
	}
	j.flushes++
	_, err := j.f.WriteAt(j.buf, h.base+h.off)
	if err == nil {
		err = datasync(j.f)
	}
	j.locks.unlock(j.cur)
	result := durable
	if err != nil {
		j.fail(fmt.Errorf("journal: %w", err))
		result = maybe
	}
	h.off += int64(len(j.buf))
	for _, c := range batch {
		if c.in {
			c.result = result
			h.dirty[c.id] = true
		}
	}
	if cap(j.buf) > 1<<20 {
		j.buf = nil
	}
}

// switchHalves starts the checkpoint of the full half in the background
// and moves on to the other one, waiting first for that one's own
// checkpoint if it still runs.
func (j *journal) switchHalves() error {
	if err := j.waitCheckpoint(); err != nil {
		return err
	}
	full := j.cur
	j.cur = 1 - full
	j.halves[j.cur].gen = newGen()
	h := j.halves[full]
	done := make(chan error, 1)
	j.ckpt = done
	f, locks := j.f, j.locks
	go func() { done <- j.s.checkpoint(f, locks, full, h.base, h.off, h.dirty) }()
	return nil
}

// waitCheckpoint waits for the running checkpoint, if any, after which
// the half it emptied is free.
func (j *journal) waitCheckpoint() error {
	if j.ckpt == nil {
		return nil
	}
	err := <-j.ckpt
	j.ckpt = nil
	if err != nil {
		return err
	}
	h := &j.halves[1-j.cur]
	clear(h.dirty)
	h.off = 0
	return nil
}

// checkpoint fsyncs the log of every session in dirty, then zeroes the
// used bytes of half i of journal f, from base. The fsyncs run side by
// side, so that the file system commits them together.
func (s *Store) checkpoint(f *os.File, locks halfLocks, i int, base, used int64, dirty map[string]bool) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		sem  = make(chan struct{}, 8)
	)
	for id := range dirty {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := s.syncLog(id); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("session %s: %w", id, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := locks.lock(i); err != nil {
		return err
	}
	defer locks.unlock(i)
	if err := zero(f, base, used); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

// zero overwrites n bytes of a journal from base with zeros, durably: the
// bytes past the records of a half are always zero, so that a journal
// never keeps a copy of what a log no longer needs, and a deleted
// session's lines are only ever in the records that Delete voids.
func zero(f *os.File, base, n int64) error {
	if n > 0 {
		if _, err := f.WriteAt(make([]byte, n), base); err != nil {
			return err
		}
	}
	return datasync(f)
}

// A journal file has a write lock per half, taken by the store that owns
// the journal around each write of a half (a batch, a checkpoint's
// zeroing), and by any store voiding a deleted session's records in it,
// in this process or another. A lock belongs to the open file it was
// taken through, not to the process: two opens of the journal in one
// process exclude each other, and closing one open releases only its own
// locks. (The owner's flock on the journal file is a separate lock.) How
// each system keeps them: journal_ofd.go (Linux), journal_flock.go
// (macOS).
//
// s.openHalfLocks(f, name) returns the half locks of journal f, named
// name in the journal folder; l.lock(i) waits for the lock of half i,
// l.unlock(i) releases it, and l.close() lets go of what openHalfLocks
// opened (not f).

// close checkpoints both halves of the journal and closes it, leaving
// the file, all zero, for the next store to take. A journal that failed,
// or whose checkpoint fails, is closed as it is: the next Open replays
// it. The caller makes sure no append is under way.
func (j *journal) close() error {
	if j.f == nil {
		return nil
	}
	defer func() {
		j.f.Close()
		j.locks.close()
		j.f, j.locks = nil, halfLocks{}
	}()
	err := j.waitCheckpoint()
	j.mu.Lock()
	broken := j.broken
	j.mu.Unlock()
	if broken != nil {
		return nil
	}
	if err != nil {
		return err
	}
	h := j.halves[j.cur]
	return j.s.checkpoint(j.f, j.locks, j.cur, h.base, h.off, h.dirty)
}

// take gives the store a journal of its own: a free one in the
// namespace's journal folder that holds no records, or a new one. A free
// journal with records belongs to a store that died after this one
// opened, and the next Open replays it (it cannot hold anything a log
// lacks: the machine did not crash, since this store still runs), or it
// keeps what the logs of damaged sessions lost.
//
// take looks at the free journals only under the journal lock, as Open's
// replay does, so that an Open never finds one of them held by take and
// passes over it. It does not wait for that lock, which a store opening
// holds while it waits for sessions' locks (an append that takes a
// journal holds its session's): while an Open replays, take makes a new
// journal instead.
func (j *journal) take() error {
	if err := j.s.ns.Mkdir(journalDir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("journal: %w", err)
	}
	var free []orphan
	if unlock, err := j.s.tryLockJournals(); err != nil {
		return err
	} else if unlock != nil {
		free, err = j.s.freeJournals(false)
		unlock()
		if err != nil {
			return err
		}
	}
	var (
		f    *os.File
		name string
		err  error
	)
	for _, o := range free {
		if f == nil && len(o.recs) == 0 && o.used == [2]int64{} {
			f, name = o.f, o.name
			continue
		}
		o.f.Close()
	}
	if f == nil {
		if f, name, err = j.s.newJournal(); err != nil {
			return err
		}
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	locks, err := j.s.openHalfLocks(f, name)
	if err != nil {
		f.Close()
		return fmt.Errorf("journal %s: %w", name, err)
	}
	j.f, j.locks, j.size, j.cur = f, locks, fi.Size(), 0
	for i := range j.halves {
		j.halves[i] = half{base: int64(i) * (j.size / 2), gen: newGen(), dirty: map[string]bool{}}
	}
	return nil
}

// newJournal creates a journal file, zero-filled so that its writes never
// change its size or allocation and an fdatasync of it is one flush of
// data. It is made under a dot name and renamed into place whole, locked.
// It returns the file and its name in the journal folder.
func (s *Store) newJournal() (*os.File, string, error) {
	name := randName("")
	tmp := journalDir + "/." + name
	f, err := s.ns.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, journalFileMode)
	if err != nil {
		return nil, "", fmt.Errorf("new journal: %w", err)
	}
	if err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
		zero := make([]byte, 1<<20)
		for off := int64(0); off < newJournalSize && err == nil; off += int64(len(zero)) {
			_, err = f.WriteAt(zero[:min(int64(len(zero)), newJournalSize-off)], off)
		}
	}
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = s.ns.Rename(tmp, journalDir+"/"+name)
	}
	if err == nil {
		err = s.syncDir(journalDir)
	}
	if err != nil {
		f.Close()
		s.ns.Remove(tmp)
		s.ns.Remove(journalDir + "/" + name)
		return nil, "", fmt.Errorf("new journal: %w", err)
	}
	return f, name, nil
}

// syncLog fsyncs a session's log, if the session still exists.
func (s *Store) syncLog(id string) error {
	f, err := s.ns.OpenFile(id+"/"+logName, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil
	}
	if err != nil {
		return err
	}
	err = f.Sync()
	return errors.Join(err, f.Close())
}

// newToken returns a random token for a session's lock file.
func newToken() []byte {
	b := make([]byte, tokenLen/2)
	_, _ = rand.Read(b)
	return []byte(hex.EncodeToString(b))
}

// readToken returns the token in a session's lock file: what tells one
// session of an ID from another made after it was deleted. Sessions made
// before tokens have an empty lock file until their first append.
func readToken(lockF *os.File) (string, error) {
	b := make([]byte, 64)
	n, err := lockF.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read %s: %w", lockName, err)
	}
	return string(b[:n]), nil
}

// ensureToken gives a session made before tokens a token, durably, with
// the exclusive lock held.
func (ss *session) ensureToken() error {
	if ss.token != "" {
		return nil
	}
	tok := newToken()
	if _, err := ss.lockF.WriteAt(tok, 0); err != nil {
		return fmt.Errorf("write %s: %w", lockName, err)
	}
	if err := ss.lockF.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", lockName, err)
	}
	ss.token = string(tok)
	return nil
}
