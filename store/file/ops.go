//go:build linux || darwin

package file

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
)

// create builds the session's folder under a temporary name, makes it
// durable and renames it into place. A live session of that ID makes the
// rename fail (a folder cannot replace a folder that is not empty): that
// is ErrExists, unless the session has expired, in which case it is
// deleted and the rename tried again.
func (s *Store) create(ctx context.Context, meta cairn.SessionMeta) error {
	now := s.opts.Now().UTC()
	created := meta.CreatedAt
	if created.IsZero() {
		created = now
	}
	info := cairn.SessionInfo{ID: meta.ID, CreatedAt: created.UTC(), UpdatedAt: now,
		Status: cairn.StatusNew, Labels: cloneLabels(meta.Labels)}
	tmp, err := s.buildFolder(info)
	if err != nil {
		return err
	}
	defer s.ns.RemoveAll(tmp) // a no-op once renamed
	for range 4 {
		err := s.ns.Rename(tmp, meta.ID)
		if err == nil {
			return s.syncDir(".")
		}
		if !errors.Is(err, fs.ErrExist) && !errors.Is(err, syscall.ENOTEMPTY) {
			return err
		}
		if err := s.replaceExpired(ctx, meta.ID); err != nil {
			return err
		}
	}
	return cairn.ErrExists
}

// buildFolder writes a new session's files into a temporary folder, with
// everything fsynced, and returns the folder's name.
func (s *Store) buildFolder(info cairn.SessionInfo) (string, error) {
	tmp := randName(tmpPrefix)
	if err := s.ns.Mkdir(tmp, 0o700); err != nil {
		return "", err
	}
	meta, err := encodeMeta(info, 0)
	if err != nil {
		return "", err
	}
	cache := encodeCache(meta)
	files := []struct {
		name string
		data []byte
	}{{lockName, newToken()}, {logName, nil}, {infoName, cache}, {metaName, meta}}
	for _, f := range files {
		if err = s.writeNew(tmp+"/"+f.name, f.data); err != nil {
			break
		}
	}
	if err == nil {
		err = s.syncDir(tmp)
	}
	if err != nil {
		s.ns.RemoveAll(tmp)
		return "", err
	}
	return tmp, nil
}

// writeNew creates a file with data and fsyncs it.
func (s *Store) writeNew(name string, data []byte) error {
	f, err := s.ns.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// replaceExpired deletes the session id if it has expired, and returns
// ErrExists if it is live, or damaged. A session deleted meanwhile is fine.
func (s *Store) replaceExpired(ctx context.Context, id string) error {
	ss := s.acquire(id)
	defer s.release(id, ss)
	if err := s.lock(ctx, ss, id, true); err != nil {
		switch {
		case errors.Is(err, cairn.ErrNotFound):
			return nil
		case errors.Is(err, cairn.ErrDamaged):
			return fmt.Errorf("%w (%w)", cairn.ErrExists, err)
		}
		return err
	}
	defer ss.unlock()
	if !s.expired(ss.info, s.opts.Now()) {
		return cairn.ErrExists
	}
	return s.remove(ss, id)
}

// append writes the events after expectSeq under the session's locks.
// With fence set (AppendFenced) it first checks, under the same exclusive
// lock, that the lease is still the session's; a plain Append (fence nil)
// reads nothing more than the log's length.
func (s *Store) append(ctx context.Context, id string, expectSeq int64, events []cairn.Event, fence *cairn.Lease) error {
	buf, err := encodeEvents(events)
	if err != nil {
		return err
	}
	ss := s.acquire(id)
	defer s.release(id, ss)
	if err := s.lock(ctx, ss, id, true); err != nil {
		return err
	}
	defer ss.unlock()
	if s.expired(ss.info, s.opts.Now()) {
		return cairn.ErrNotFound
	}
	if fence != nil {
		if err := s.fenced(id, *fence); err != nil {
			return err
		}
	}
	if ss.info.LastSeq != expectSeq {
		if s.retried(ss, expectSeq, len(events), buf) {
			return nil
		}
		return cairn.ErrConflict
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// The lines go to the log, and their copy to the journal, which
	// makes them durable with the other sessions' appends of the moment;
	// failing that, the log is fsynced.
	result := failed
	_, err = ss.logF.WriteAt(buf, ss.size)
	if err == nil && ss.ensureToken() == nil {
		result = s.journal.write(id, ss.token, ss.size, buf)
	}
	if err == nil && result != durable {
		err = ss.logF.Sync()
	}
	if err != nil {
		// Take back what may have reached the file, unless the journal
		// may hold it (a replay would bring it back). Either way, or
		// should that fail too, the next call re-reads the log and keeps
		// a whole append it finds there; a torn one is cut off.
		if result == maybe || ss.logF.Truncate(ss.size) != nil || ss.logF.Sync() != nil {
			ss.known = false
		}
		return fmt.Errorf("write log: %w", err)
	}
	driver.Summarize(events).Apply(&ss.info, expectSeq+int64(len(events)), s.opts.Now().UTC())
	ss.size += int64(len(buf))
	// The append is durable now. Its text is indexed (search_file.go), and
	// the searches told (search_feed.go). The index and the info are
	// caches of the log, which a failed write leaves behind it: the next
	// append, or reader, catches them up.
	if err := s.indexAppend(ss, id, expectSeq, events); err != nil {
		ss.closeSearch()
	}
	s.noteSearch(id)
	_ = s.saveInfo(ss, id, ss.size-ss.metaSize >= checkpointBytes)
	return nil
}

// retried reports whether an append of n events, encoded as buf, at the
// stale expected seq expectSeq is a retry: the log holds these n events at
// these seqs, line for line the same envelopes (version, seq, time, kind,
// run and data; the checksums and the continued marks aside), whether they
// are its last lines or others were appended after them since. Only a
// conflict pays for this: it reads the log backwards from its end to the
// line of seq expectSeq+1, then those n lines.
func (s *Store) retried(ss *session, expectSeq int64, n int, buf []byte) bool {
	end := expectSeq + int64(n)
	if expectSeq < 0 || ss.info.LastSeq < end {
		return false
	}
	from, to, ok := s.lineSpan(ss, ss.info.LastSeq-end, n)
	if !ok || to-from > int64(len(buf))+int64(n) {
		return false
	}
	held := make([]byte, to-from)
	if _, err := ss.logF.ReadAt(held, from); err != nil {
		return false
	}
	want, got := splitLog(buf), splitLog(held)
	if len(got) != n || len(want) != n {
		return false
	}
	for i := range got {
		if !bytes.Equal(envelopeOf(got[i]), envelopeOf(want[i])) {
			return false
		}
	}
	return true
}

// lineSpan finds, in the committed log of ss, the n lines that end skip
// lines before its end, and returns where they begin and end. It scans the
// log backwards for newlines, a block at a time.
func (s *Store) lineSpan(ss *session, skip int64, n int) (from, to int64, ok bool) {
	const block = 64 << 10
	chunk := make([]byte, block)
	to, from = -1, -1
	if skip == 0 {
		to = ss.size
	}
	seen := int64(0) // newlines found, the log's last one first
	for pos := ss.size; pos > 0 && from < 0; {
		start := max(0, pos-block)
		b := chunk[:pos-start]
		if _, err := ss.logF.ReadAt(b, start); err != nil {
			return 0, 0, false
		}
		for i := len(b) - 1; i >= 0; i-- {
			if b[i] != '\n' {
				continue
			}
			seen++
			switch seen - 1 {
			case skip:
				if to < 0 {
					to = start + int64(i) + 1
				}
			case skip + int64(n):
				from = start + int64(i) + 1
			}
			if from >= 0 {
				break
			}
		}
		pos = start
	}
	if from < 0 && seen == skip+int64(n) {
		from = 0 // the first of the lines is the log's first
	}
	return from, to, from >= 0 && to >= from
}

// splitLog splits log bytes into lines, without their newlines; the last
// piece is dropped when it has no newline.
func splitLog(b []byte) [][]byte {
	var lines [][]byte
	for {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return lines
		}
		lines = append(lines, b[:i])
		b = b[i+1:]
	}
}

// load reads the session's info and its committed log under the shared
// lock, and decodes the events once the lock is released.
//
// A load from a seq in the later half of the history reads only the end
// of the log, from the line of that seq on (readTail), so that its cost
// follows the events it returns, not the length of the history: what
// opening a long session from its snapshot needs. Every line it decodes is
// checked (decodeLog), its seq included: an end of the log whose lines do
// not have the seqs they should is read again from the start, and a line
// that fails makes the session damaged, which the store remembers.
func (s *Store) load(ctx context.Context, id string, fromSeq int64) (*cairn.Record, error) {
	from := max(fromSeq, 1)
	rec, first, err := s.loadOnce(ctx, id, from, true)
	if _, bad := errors.AsType[*driver.DamagedError](err); bad && first > 1 {
		// Whatever readTail landed on, the whole log says what is wrong.
		rec, _, err = s.loadOnce(ctx, id, from, false)
	}
	return rec, err
}

// loadOnce is load, reading the end of the log when tail allows it; first
// is the seq of the first line it read.
func (s *Store) loadOnce(ctx context.Context, id string, from int64, tail bool) (_ *cairn.Record, first int64, _ error) {
	info, buf, first, lockID, err := s.readLog(ctx, id, from, tail)
	if err != nil {
		return nil, first, err
	}
	evs, err := decodeLog(buf, first, from)
	if err == nil && info.LastSeq > 0 && len(evs) > 0 && evs[len(evs)-1].Seq != info.LastSeq {
		err = fmt.Errorf("%w: the log ends at seq %d where the info says %d", errCorrupt, evs[len(evs)-1].Seq, info.LastSeq)
	}
	if err == nil && first > 1 && (len(evs) == 0 || evs[0].Seq != from) {
		err = fmt.Errorf("%w: the log's end does not start at seq %d", errCorrupt, from)
	}
	if err != nil {
		d := s.logDamage(id, err)
		if first == 1 {
			s.noteDamage(id, lockID, d)
		}
		return nil, first, d
	}
	return &cairn.Record{Info: info, Events: evs}, first, nil
}

// readLog returns, under the session's shared lock, the session's info and
// its committed log: the whole log (first is 1), or with tail set and from
// in the later half of the history, its end from the line of seq from on
// (first is from).
func (s *Store) readLog(ctx context.Context, id string, from int64, tail bool) (info cairn.SessionInfo, buf []byte, first int64, lockID fileID, err error) {
	ss := s.acquire(id)
	defer s.release(id, ss)
	if err := s.lock(ctx, ss, id, false); err != nil {
		return cairn.SessionInfo{}, nil, 0, fileID{}, err
	}
	defer ss.unlock()
	info = ss.info
	info.Labels = cloneLabels(info.Labels)
	if s.expired(info, s.opts.Now()) {
		return info, nil, 0, ss.lockID, cairn.ErrNotFound
	}
	if from > info.LastSeq {
		return info, nil, 1, ss.lockID, nil
	}
	if tail && from > 1 && from > info.LastSeq/2 {
		if buf, ok, err := readTail(ss.logF, ss.size, info.LastSeq-from+1); err != nil || ok {
			return info, buf, from, ss.lockID, err
		}
	}
	buf = make([]byte, ss.size)
	if _, err := io.ReadFull(io.NewSectionReader(ss.logF, 0, ss.size), buf); err != nil {
		return info, nil, 0, ss.lockID, fmt.Errorf("read log: %w", err)
	}
	return info, buf, 1, ss.lockID, nil
}

// tailBlock is the first read of readTail: the end of the log that holds
// the last few events of most sessions.
const tailBlock = 64 << 10

// readTail returns the last n lines of the log's first size bytes, read
// backwards from size: a block first, then as much more as the lines read
// so far say the rest needs, so that it reads the lines it returns and
// little else. ok is false when the log holds fewer than n lines (it is
// damaged: the caller reads it all, and finds why).
func readTail(f *os.File, size, n int64) (buf []byte, ok bool, err error) {
	want := int64(tailBlock)
	for {
		start := max(0, size-want)
		buf = make([]byte, size-start)
		if _, err := f.ReadAt(buf, start); err != nil {
			return nil, false, fmt.Errorf("read log: %w", err)
		}
		end, seen := len(buf), int64(0)
		for seen <= n {
			i := bytes.LastIndexByte(buf[:end], '\n')
			if i < 0 {
				break
			}
			seen++
			if seen == n+1 {
				return buf[i+1:], true, nil // i ends the line before the n
			}
			end = i
		}
		if start == 0 {
			return buf, seen == n, nil
		}
		// Read again, further back: as far as the lines seen say n+1 need,
		// with a quarter more, and at least twice as far.
		per := int64(len(buf)) / max(seen, 1)
		want = max(2*want, per*(n+1)*5/4)
	}
}

// info returns a session's info for List. Without locking it reads
// info.json and the log's length: when they agree, and ack.json agrees
// with them, the info is current, since the info is written after the
// log. Otherwise an append is under way, a crash interrupted one, or the
// files disagree, and the info is taken under the shared lock, which
// finds the damage if it is that.
//
// A session the store found damaged is listed as such, and so is one whose
// meta.json does not read, or whose log is shorter than one of its records
// says (as Load and Append would find).
func (s *Store) info(ctx context.Context, id string) (cairn.SessionInfo, error) {
	if s.anyDamage() {
		if lockID, err := s.lockFileID(id); err == nil && s.damageOf(id, lockID) != nil {
			return s.damagedInfo(id), nil
		}
	}
	if info, ok := s.listed(id); ok {
		return info, nil
	}
	ss := s.acquire(id)
	defer s.release(id, ss)
	if err := s.lock(ctx, ss, id, false); err != nil {
		return cairn.SessionInfo{}, err
	}
	defer ss.unlock()
	info := ss.info
	info.Labels = cloneLabels(info.Labels)
	return info, nil
}

// delete removes a live session under its exclusive lock. A damaged
// session is removed as it is: deleting is what is left to do with it. So
// is the folder of one whose lock file is missing.
func (s *Store) delete(ctx context.Context, id string) error {
	ss := s.acquire(id)
	defer s.release(id, ss)
	damage, err := s.lockAny(ctx, ss, id, true)
	if _, ok := errors.AsType[*driver.DamagedError](err); ok {
		return s.removeFolder(id)
	}
	if err != nil {
		return err
	}
	defer ss.unlock()
	if damage == nil && s.expired(ss.info, s.opts.Now()) {
		return cairn.ErrNotFound
	}
	return s.remove(ss, id)
}

// remove deletes the session's folder, with its exclusive lock held: the
// folder is renamed to a trash name (the deletion is atomic and durable
// once the namespace folder is synced), the lock is released, and the
// trash is removed, its search.jsonl with it. A writer that was waiting
// for the lock then finds no folder at the session's path and gets
// ErrNotFound. The journals' records of the session are voided, and the
// search feed's lines blanked.
func (s *Store) remove(ss *session, id string) error {
	at, ferr := s.placeInFeed()
	trash := randName(trashPrefix)
	if err := s.ns.Rename(id, trash); err != nil {
		return err
	}
	err := s.syncDir(".")
	token := ss.token
	ss.closeFiles()
	s.forgetDamage(id)
	s.search.touch(id)
	return errors.Join(err, s.ns.RemoveAll(trash), s.scrub(id), ferr, s.forgetInFeed(id, token, at))
}

// removeFolder deletes the folder of a session that has no lock file to
// hold, as remove does.
func (s *Store) removeFolder(id string) error {
	at, ferr := s.placeInFeed()
	trash := randName(trashPrefix)
	if err := s.ns.Rename(id, trash); err != nil {
		return notFound(err)
	}
	s.forgetDamage(id)
	s.search.touch(id)
	return errors.Join(s.syncDir("."), s.ns.RemoveAll(trash), s.scrub(id), ferr, s.forgetInFeed(id, "", at))
}

func cloneLabels(l map[string]string) map[string]string {
	out := make(map[string]string, len(l))
	for k, v := range l {
		out[k] = v
	}
	return out
}
