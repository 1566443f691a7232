package file

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"slices"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
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

// A record, little-endian:
//
//	0  magic "cjr1"
//	4  CRC-32C of bytes 8 to the record's end
//	8  generation: the same for every record written since the journal
//	   was last emptied, and new each time
//	16 kind: recAppend, or recVoid (an append of a deleted session, its
//	   bytes zeroed)
//	17 length of the session ID
//	18 length of the session's token
//	19 zero
//	20 the offset in the session's log where the data was written
//	28 length of the data
//	32 the session ID, the token, the data
//
// The records of a half follow each other from its start, all of one
// generation (new each time the half is written again), and every byte
// after them is zero; see scanJournal for where they end.

// journal is a store's group commit; see the comment above.
type journal struct {
	s *Store

	mu      sync.Mutex
	pending []*commit
	running bool  // a leader is writing; guarded by mu
	broken  error // why the journal is no longer used; guarded by mu

	// Fields below are the leader's: only the goroutine that set running
	// (or Close, once no call is under way) touches them.
	f       *os.File // the journal file, locked; nil until the first append
	size    int64    // its capacity
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
	if err := lockRange(j.f, j.cur); err != nil {
		j.fail(err)
		return
	}
	j.flushes++
	_, err := j.f.WriteAt(j.buf, h.base+h.off)
	if err == nil {
		err = unix.Fdatasync(int(j.f.Fd()))
	}
	unlockRange(j.f, j.cur)
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
	f := j.f
	go func() { done <- j.s.checkpoint(f, full, h.base, h.off, h.dirty) }()
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
// used bytes of half i, from base. The fsyncs run side by side, so that
// the file system commits them together.
func (s *Store) checkpoint(f *os.File, i int, base, used int64, dirty map[string]bool) error {
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
	if err := lockRange(f, i); err != nil {
		return err
	}
	defer unlockRange(f, i)
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
	return unix.Fdatasync(int(f.Fd()))
}

// The write locks of a journal file, one per half: open-file-description
// locks on bytes past any journal's end, taken by the store that owns the
// journal around each write of a half (a batch, a checkpoint's zeroing),
// and by any store voiding a deleted session's records in it. (The
// owner's flock on the file is a separate lock.)
const lockByte = 1 << 40

func lockRange(f *os.File, i int) error {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart, Start: lockByte + int64(i), Len: 1}
	for {
		err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLKW, &lk)
		if !errors.Is(err, syscall.EINTR) {
			if err != nil {
				return fmt.Errorf("lock journal: %w", err)
			}
			return nil
		}
	}
}

func unlockRange(f *os.File, i int) {
	lk := unix.Flock_t{Type: unix.F_UNLCK, Whence: io.SeekStart, Start: lockByte + int64(i), Len: 1}
	_ = unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lk)
}

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
		j.f = nil
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
	return j.s.checkpoint(j.f, j.cur, h.base, h.off, h.dirty)
}

// take gives the store a journal of its own: a free one in the
// namespace's journal folder that holds no records, or a new one. A free
// journal with records belongs to a store that died after this one
// opened; the next Open replays it. (It cannot hold anything a log
// lacks: the machine did not crash, since this store still runs.)
func (j *journal) take() error {
	if err := j.s.ns.Mkdir(journalDir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("journal: %w", err)
	}
	free, err := j.s.freeJournals(false)
	if err != nil {
		return err
	}
	var f *os.File
	for _, o := range free {
		if f == nil && len(o.recs) == 0 && o.used == [2]int64{} {
			f = o.f
			continue
		}
		o.f.Close()
	}
	if f == nil {
		if f, err = j.s.newJournal(); err != nil {
			return err
		}
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	j.f, j.size, j.cur = f, fi.Size(), 0
	for i := range j.halves {
		j.halves[i] = half{base: int64(i) * (j.size / 2), gen: newGen(), dirty: map[string]bool{}}
	}
	return nil
}

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

// newJournal creates a journal file, zero-filled so that its writes never
// change its size or allocation and an fdatasync of it is one flush of
// data. It is made under a dot name and renamed into place whole, locked.
func (s *Store) newJournal() (*os.File, error) {
	name := randName("")
	tmp := journalDir + "/." + name
	f, err := s.ns.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, journalFileMode)
	if err != nil {
		return nil, fmt.Errorf("new journal: %w", err)
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
		return nil, fmt.Errorf("new journal: %w", err)
	}
	return f, nil
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

// halfBounds returns where half i of a journal file starts, and its
// length.
func halfBounds(f *os.File, i int) (base, n int64, err error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	size := fi.Size()
	if size < minJournalSize || size%2 != 0 {
		return 0, 0, fmt.Errorf("%d bytes long: not a journal", size)
	}
	return int64(i) * (size / 2), size / 2, nil
}

// readHalf reads half i of a journal file as far as its records go: in
// growing pieces, since past its records a half is zero.
func readHalf(f *os.File, i int) ([]byte, error) {
	base, size, err := halfBounds(f, i)
	if err != nil {
		return nil, err
	}
	for n := min(size, 256<<10); ; n = min(size, 4*n) {
		buf := make([]byte, n)
		if _, err := io.ReadFull(io.NewSectionReader(f, base, n), buf); err != nil {
			return nil, err
		}
		if _, end := scanJournal(buf); n == size || !cutShort(buf, end) {
			return buf, nil
		}
	}
}

// readRecords returns the appends a journal file holds, in both halves,
// and where each half's records end.
func readRecords(f *os.File) (recs []record, used [2]int64, err error) {
	for i := range 2 {
		buf, err := readHalf(f, i)
		if err != nil {
			return nil, used, err
		}
		entries, end := scanJournal(buf)
		used[i] = int64(end)
		for _, e := range entries {
			if e.kind == recAppend {
				recs = append(recs, e.record)
			}
		}
	}
	return recs, used, nil
}

// cutShort reports whether the scan of buf that ended at end may have
// ended only because buf stops: too few bytes for a header, or a header
// whose record runs past the end.
func cutShort(buf []byte, end int) bool {
	b := buf[end:]
	if len(b) < recHeader {
		return true
	}
	if string(b[:4]) != journalMagic {
		return false
	}
	n := int64(recHeader+int(b[17])+int(b[18])) + int64(binary.LittleEndian.Uint32(b[28:]))
	return n > int64(len(b))
}

// entry is a record's place in a journal.
type entry struct {
	pos, end int
	kind     byte // 0 for a record that is damaged (torn by a crash)
	record
}

// scanJournal returns the entries of buf's current generation: the
// records from its start, of the first record's generation, up to the
// first byte that does not start one. A record whose header is whole but
// whose checksum fails is damaged and passed over: a crash tore it, and
// every byte after the last record is zero, so what follows it is the
// generation's next record or the end.
func scanJournal(buf []byte) (entries []entry, end int) {
	var gen uint64
	haveGen := false
	for pos := 0; ; {
		e, g, ok := parseRecord(buf, pos)
		if !ok || (e.kind != 0 && haveGen && g != gen) {
			return entries, pos
		}
		if e.kind != 0 && !haveGen {
			gen, haveGen = g, true
		}
		entries = append(entries, e)
		pos = e.end
	}
}

// parseRecord reads the record at pos. ok is false when no record header
// starts there; a whole header with a failing checksum is a damaged entry
// (kind 0).
func parseRecord(buf []byte, pos int) (e entry, gen uint64, ok bool) {
	b := buf[pos:]
	if len(b) < recHeader || string(b[:4]) != journalMagic {
		return entry{}, 0, false
	}
	idLen, tokLen := int(b[17]), int(b[18])
	end := int64(recHeader+idLen+tokLen) + int64(binary.LittleEndian.Uint32(b[28:]))
	if end > int64(len(b)) {
		return entry{}, 0, false
	}
	e = entry{pos: pos, end: pos + int(end)}
	kind := b[16]
	if crc32.Checksum(b[8:end], castagnoli) != binary.LittleEndian.Uint32(b[4:]) ||
		(kind != recAppend && kind != recVoid) {
		return e, 0, true
	}
	p := b[recHeader:end]
	e.kind = kind
	e.record = record{id: string(p[:idLen]), token: string(p[idLen : idLen+tokLen]),
		off: int64(binary.LittleEndian.Uint64(b[20:])), data: p[idLen+tokLen:]}
	return e, binary.LittleEndian.Uint64(b[8:]), true
}

// appendRecord appends one record to buf.
func appendRecord(buf []byte, gen uint64, kind byte, id, token string, off int64, data []byte) []byte {
	start := len(buf)
	buf = append(buf, journalMagic...)
	buf = binary.LittleEndian.AppendUint32(buf, 0)
	buf = binary.LittleEndian.AppendUint64(buf, gen)
	buf = append(buf, kind, byte(len(id)), byte(len(token)), 0)
	buf = binary.LittleEndian.AppendUint64(buf, uint64(off))
	buf = binary.LittleEndian.AppendUint32(buf, uint32(len(data)))
	buf = append(buf, id...)
	buf = append(buf, token...)
	buf = append(buf, data...)
	binary.LittleEndian.PutUint32(buf[start+4:], crc32.Checksum(buf[start+8:], castagnoli))
	return buf
}

func newGen() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:])
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
