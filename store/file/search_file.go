//go:build linux || darwin

package file

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/envsum"
	"github.com/cairnhq/cairn/longterm"
)

// Each session's text index is search.jsonl in its folder: what its
// events give cairn.Event.SearchText, by seq. Its first line names the
// session's token (what tells it from another session of its ID made
// after it was deleted):
//
//	{"cairn_search":1,"token":"…"}
//
// and each later line is what one append indexed, led by its checksum as
// the log's lines are:
//
//	{"crc32c":"1a2b3c4d","last":7,"log":5120,"at":"…","events":[{"seq":6,"text":"…"}]}
//
// last is the seq of the append's last event, log the log's length after
// it, at the session's updated time after it, and events are its events
// with a text that has a token. A log of another length than the last
// line's says that the file lags (or that an append is under way).
// A line is written after the append is durable, under the session's
// exclusive lock, without an fsync: the file is derived from the log, and
// never holds an event the log does not. When it covers less of the log
// than there is (a crash came between the two writes, a crash of the
// machine took its end, the session was written before search), what it
// lacks is read from the log and added; when it does not read, or covers
// more, it is written anew from the log and renamed into place. Delete
// removes it with the session's folder.
const (
	searchName    = "search.jsonl"
	searchTmpName = "search.jsonl.tmp"
	searchFormat  = 1
)

// searchHeader is the first line of search.jsonl.
type searchHeader struct {
	Format int    `json:"cairn_search"`
	Token  string `json:"token"`
}

// searchLine is a later line of search.jsonl.
type searchLine struct {
	Last   int64       `json:"last"`
	Log    int64       `json:"log"`
	At     time.Time   `json:"at"`
	Events []searchDoc `json:"events,omitempty"`
}

// searchDoc is an indexed event.
type searchDoc struct {
	Seq  int64  `json:"seq"`
	Text string `json:"text"`
}

// errSearchBad marks a search.jsonl that does not read: it is written anew
// from the log.
var errSearchBad = errors.New("the search index does not read")

func encodeSearchHeader(token string) []byte {
	b, _ := json.Marshal(searchHeader{Format: searchFormat, Token: token}) // always encodes
	return append(b, '\n')
}

// appendSearchLine appends the line that indexes evs, the events of ss's
// log that it does not cover yet. It writes the JSON by hand, as
// json.Marshal would (this is on every append's path).
func appendSearchLine(buf []byte, ss *session, evs []cairn.Event) ([]byte, error) {
	at, err := ss.info.UpdatedAt.MarshalJSON()
	if err != nil {
		return buf, err
	}
	start := len(buf)
	buf = append(buf, envsum.Prefix+`00000000",`...)
	buf = append(buf, `"last":`...)
	buf = strconv.AppendInt(buf, ss.info.LastSeq, 10)
	buf = append(buf, `,"log":`...)
	buf = strconv.AppendInt(buf, ss.size, 10)
	buf = append(buf, `,"at":`...)
	buf = append(buf, at...)
	n := 0
	for _, e := range evs {
		t := e.SearchText()
		if !longterm.HasToken(t) {
			continue
		}
		if n++; n == 1 {
			buf = append(buf, `,"events":[`...)
		} else {
			buf = append(buf, ',')
		}
		buf = append(buf, `{"seq":`...)
		buf = strconv.AppendInt(buf, e.Seq, 10)
		buf = append(buf, `,"text":`...)
		buf = appendString(buf, t)
		buf = append(buf, '}')
	}
	if n > 0 {
		buf = append(buf, ']')
	}
	buf = append(buf, '}')
	// The checksum is of the line as if it had none, as envsum.Check
	// reads it: "{" and the members after the checksum's.
	sum := crc32.Update(crc32.Checksum([]byte{'{'}, castagnoli), castagnoli, buf[start+envsum.Len:])
	const digits = "0123456789abcdef"
	for i := range 8 {
		buf[start+len(envsum.Prefix)+i] = digits[sum>>uint(28-4*i)&0xf]
	}
	return append(buf, '\n'), nil
}

// parseSearchLine checks and decodes a line of search.jsonl after the
// header, without its newline, which must follow seq after.
func parseSearchLine(b []byte, after int64) (searchLine, error) {
	var l searchLine
	if sealed, f := envsum.Check(b); !sealed || f != envsum.OK {
		return l, errSearchBad
	}
	if err := json.Unmarshal(b, &l); err != nil || l.Last <= after {
		return l, errSearchBad
	}
	prev := after
	for _, d := range l.Events {
		if d.Seq <= prev || d.Seq > l.Last {
			return l, errSearchBad
		}
		prev = d.Seq
	}
	return l, nil
}

// parseSearchHeader decodes the header at the start of b and returns the
// token and the header's length.
func parseSearchHeader(b []byte) (string, int, error) {
	i := bytes.IndexByte(b, '\n')
	var h searchHeader
	if i < 0 || json.Unmarshal(b[:i], &h) != nil || h.Format != searchFormat || h.Token == "" {
		return "", 0, errSearchBad
	}
	return h.Token, i + 1, nil
}

// indexAppend indexes an append that is durable, with the session's
// exclusive lock held and ss brought up to it: one line at the end of
// search.jsonl when the file covers the log up to the append (expectSeq),
// and otherwise all the file lacks, read from the log (syncSearch). On an
// error the file is left behind the log, which the next append, or a
// store's first search, catches up.
func (s *Store) indexAppend(ss *session, id string, expectSeq int64, events []cairn.Event) error {
	if !ss.searchCurrent(expectSeq) {
		return s.syncSearch(ss, id, false)
	}
	line, err := appendSearchLine(nil, ss, events)
	if err != nil {
		return err
	}
	return ss.writeSearch(line)
}

// searchCurrent reports whether ss's search.jsonl is open, covers the log
// to seq last and is as this store last left it: no other store wrote or
// replaced it since.
func (ss *session) searchCurrent(last int64) bool {
	if ss.searchF == nil || ss.searchLast != last {
		return false
	}
	var st unix.Stat_t
	err := unix.Fstat(int(ss.searchF.Fd()), &st)
	return err == nil && st.Nlink > 0 && st.Size == ss.searchSize
}

// writeSearch writes b at the end of ss's search.jsonl, which then covers
// the log to ss.info.LastSeq. On an error the file is closed, and what
// may have reached it is taken back.
func (ss *session) writeSearch(b []byte) error {
	if _, err := ss.searchF.WriteAt(b, ss.searchSize); err != nil {
		_ = ss.searchF.Truncate(ss.searchSize)
		ss.closeSearch()
		return fmt.Errorf("write %s: %w", searchName, err)
	}
	ss.searchSize += int64(len(b))
	ss.searchLast, ss.searchLog = ss.info.LastSeq, ss.size
	return nil
}

// closeSearch closes ss's search.jsonl and forgets what it knew of it.
func (ss *session) closeSearch() {
	if ss.searchF != nil {
		ss.searchF.Close()
	}
	ss.searchF, ss.searchSize, ss.searchLast, ss.searchLog = nil, 0, 0, 0
}

// syncSearch brings session id's search.jsonl up to its log, with the
// session's exclusive lock held and ss brought up to date: it adds a line
// of what the file lacks, or writes the file anew when it does not read,
// does not agree with the log (it covers more, or the log's last seq at
// another length), or rebuild is set.
func (s *Store) syncSearch(ss *session, id string, rebuild bool) error {
	if err := ss.ensureToken(); err != nil {
		return err
	}
	if rebuild || ss.searchF == nil || !ss.searchCurrent(ss.searchLast) {
		ss.closeSearch()
		if !rebuild {
			err := s.openSearch(ss, id)
			rebuild = errors.Is(err, errSearchBad)
			if err != nil && !rebuild {
				return err
			}
		}
	}
	switch {
	case rebuild, ss.searchLast > ss.info.LastSeq, ss.searchLast == ss.info.LastSeq && ss.searchLog != ss.size:
		return s.rebuildSearch(ss, id)
	case ss.searchLast == ss.info.LastSeq:
		return nil
	}
	evs, err := s.logEvents(ss, id, ss.searchLast+1)
	if err != nil {
		return err
	}
	line, err := appendSearchLine(nil, ss, evs)
	if err != nil {
		return err
	}
	return ss.writeSearch(line)
}

// openSearch opens (or makes) session id's search.jsonl and reads how far
// it covers the log: its last line's. A file that does not read, or is
// another session's, is errSearchBad.
func (s *Store) openSearch(ss *session, id string) error {
	f, err := s.ns.OpenFile(id+"/"+searchName, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return notFound(err)
	}
	size, last, log, err := searchEnd(f, ss.token)
	if err == nil && size == 0 {
		hdr := encodeSearchHeader(ss.token)
		if _, err = f.WriteAt(hdr, 0); err == nil {
			size = int64(len(hdr))
		}
	}
	if err != nil {
		f.Close()
		return err
	}
	ss.searchF, ss.searchSize, ss.searchLast, ss.searchLog = f, size, last, log
	return nil
}

// searchEnd returns the length of search.jsonl f, which must be session
// token's, and the last seq and log length it records; zeros for an empty
// file, or one with its header alone.
func searchEnd(f *os.File, token string) (size, last, log int64, err error) {
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return 0, 0, 0, err
	}
	size = fi.Size()
	head := make([]byte, min(size, 256))
	if _, err := f.ReadAt(head, 0); err != nil {
		return 0, 0, 0, err
	}
	tok, hlen, err := parseSearchHeader(head)
	if err != nil || tok != token {
		return 0, 0, 0, errSearchBad
	}
	if size == int64(hlen) {
		return size, 0, 0, nil
	}
	tail, ok, err := readTail(f, size, 1)
	if err != nil {
		return 0, 0, 0, err
	}
	if !ok || len(tail) > int(size)-hlen || !bytes.HasSuffix(tail, []byte("\n")) {
		return 0, 0, 0, errSearchBad
	}
	l, err := parseSearchLine(tail[:len(tail)-1], 0)
	if err != nil {
		return 0, 0, 0, err
	}
	return size, l.Last, l.Log, nil
}

// rebuildSearch writes session id's search.jsonl anew from its whole
// log, under a temporary name in its folder, and renames it into place:
// a reader holding the old file goes on reading that one, and sees by its
// inode that it was replaced.
func (s *Store) rebuildSearch(ss *session, id string) error {
	ss.closeSearch()
	evs, err := s.logEvents(ss, id, 1)
	if err != nil {
		return err
	}
	buf := encodeSearchHeader(ss.token)
	if ss.info.LastSeq > 0 {
		if buf, err = appendSearchLine(buf, ss, evs); err != nil {
			return err
		}
	}
	tmp := id + "/" + searchTmpName
	f, err := s.ns.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err = f.WriteAt(buf, 0); err == nil {
		err = s.ns.Rename(tmp, id+"/"+searchName)
	}
	if err != nil {
		f.Close()
		s.ns.Remove(tmp)
		return fmt.Errorf("write %s: %w", searchName, err)
	}
	ss.searchF, ss.searchSize, ss.searchLast, ss.searchLog = f, int64(len(buf)), ss.info.LastSeq, ss.size
	return nil
}

// logEvents returns the events of ss's committed log from seq from on:
// its end when from is past 1 (readTail), the whole log otherwise.
func (s *Store) logEvents(ss *session, id string, from int64) ([]cairn.Event, error) {
	n := ss.info.LastSeq - from + 1
	if n <= 0 {
		return nil, nil
	}
	var (
		buf   []byte
		first int64 = 1
	)
	if from > 1 {
		b, ok, err := readTail(ss.logF, ss.size, n)
		if err != nil {
			return nil, err
		}
		if ok {
			buf, first = b, from
		}
	}
	if buf == nil {
		buf = make([]byte, ss.size)
		if _, err := io.ReadFull(io.NewSectionReader(ss.logF, 0, ss.size), buf); err != nil {
			return nil, fmt.Errorf("read log: %w", err)
		}
	}
	evs, err := decodeLog(buf, first, from)
	if err == nil && int64(len(evs)) != n {
		err = fmt.Errorf("%w: the log holds %d events from seq %d, where the info says %d", errCorrupt, len(evs), from, n)
	}
	if err != nil {
		return nil, s.logDamage(id, err)
	}
	return evs, nil
}

// searchChunk is what a reader read of a session's search.jsonl: the
// file, and the lines from byte start (the first after the header, or
// where the reader's last read ended) to end.
type searchChunk struct {
	token      string
	file       fileID
	start, end int64
	last       int64     // the last seq the lines cover
	log        int64     // the log's length after it
	at         time.Time // the session's updated time after the last line
	docs       []searchDoc
}

// readSearch reads session id's search.jsonl without its lock: from the
// end of the last read, when the file is still prev's (prev.file, with
// prev.token, and no shorter), and otherwise from its start. It reads
// whole lines, what an append is writing aside. A session, or a file,
// that is not there, or not yet written, is cairn.ErrNotFound; a file
// that does not read is errSearchBad.
func (s *Store) readSearch(id string, prev *indexed) (searchChunk, error) {
	var c searchChunk
	r, err := s.openSearchReader(id)
	if err != nil {
		return c, err
	}
	defer r.close()
	if r.st.Size == 0 {
		return c, cairn.ErrNotFound // made by an append that has not written it yet
	}
	tok, hlen, err := r.header()
	if err != nil {
		return c, err
	}
	c.token, c.file, c.start, c.end = tok, r.file(), int64(hlen), int64(hlen)
	if prev != nil && prev.token == tok && prev.file == c.file && prev.off <= r.st.Size {
		c.start, c.end, c.last, c.log, c.at = prev.off, prev.off, prev.last, prev.log, prev.at
	}
	if r.st.Size == c.start {
		return c, nil
	}
	buf := make([]byte, r.st.Size-c.start)
	if err := r.readAt(buf, c.start); err != nil {
		return c, err
	}
	buf = buf[:bytes.LastIndexByte(buf, '\n')+1]
	for len(buf) > 0 {
		i := bytes.IndexByte(buf, '\n')
		l, err := parseSearchLine(buf[:i], c.last)
		if err != nil {
			return c, err
		}
		c.docs = append(c.docs, l.Events...)
		c.last, c.log, c.at = l.Last, l.Log, l.At
		c.end += int64(i + 1)
		buf = buf[i+1:]
	}
	return c, nil
}

// logSize returns the length of session id's log: one fstatat from the
// namespace folder, for a comparison only (as Store.current).
func (s *Store) logSize(id string) (int64, error) {
	var st unix.Stat_t
	err := unix.Fstatat(int(s.nsDir.Fd()), id+"/"+logName, &st, unix.AT_SYMLINK_NOFOLLOW)
	if err != nil {
		return 0, notFound(&fs.PathError{Op: "lstat", Path: id + "/" + logName, Err: err})
	}
	return st.Size, nil
}

// probeSearch returns the token and the file of session id's
// search.jsonl: what tells whether a reader's copy is of this file.
func (s *Store) probeSearch(id string) (string, fileID, error) {
	r, err := s.openSearchReader(id)
	if err != nil {
		return "", fileID{}, err
	}
	defer r.close()
	tok, _, err := r.header()
	return tok, r.file(), err
}

// searchReader is a session's search.jsonl open for a reader, its length
// as it was opened, and its inode. It is opened as folder.go opens List's
// files: the session's folder from the namespace folder, then the file
// from it, each with O_NOFOLLOW, so that no link leads out of the store;
// and with no os.File, which costs a search more than its reads.
type searchReader struct {
	fd int
	st unix.Stat_t
}

// openSearchReader opens session id's search.jsonl. A session, or a file,
// that is not there, or a link where either should be, is
// cairn.ErrNotFound.
func (s *Store) openSearchReader(id string) (searchReader, error) {
	var r searchReader
	dir, err := openNoFollow(int(s.nsDir.Fd()), id, unix.O_DIRECTORY)
	if err != nil {
		return r, err
	}
	defer unix.Close(dir)
	if r.fd, err = openNoFollow(dir, searchName, 0); err != nil {
		return r, err
	}
	if err := unix.Fstat(r.fd, &r.st); err != nil {
		unix.Close(r.fd)
		return r, &fs.PathError{Op: "stat", Path: id + "/" + searchName, Err: err}
	}
	return r, nil
}

// openNoFollow opens name in the folder dirfd for reading, with O_NOFOLLOW
// and flags.
func openNoFollow(dirfd int, name string, flags int) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|flags, 0)
		switch {
		case err == nil:
			return fd, nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.ELOOP):
			return -1, cairn.ErrNotFound
		}
		return -1, &fs.PathError{Op: "open", Path: name, Err: err}
	}
}

func (r searchReader) close()       { unix.Close(r.fd) }
func (r searchReader) file() fileID { return fileID{dev: uint64(r.st.Dev), ino: r.st.Ino} }

// readAt fills b from byte off of the file.
func (r searchReader) readAt(b []byte, off int64) error {
	for n := 0; n < len(b); {
		m, err := unix.Pread(r.fd, b[n:], off+int64(n))
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return &fs.PathError{Op: "read", Path: searchName, Err: err}
		case m == 0:
			return errSearchBad // shorter than it was: it is not the file the reader opened
		}
		n += m
	}
	return nil
}

// header reads the file's header: the session's token, and its length.
func (r searchReader) header() (string, int, error) {
	head := make([]byte, min(r.st.Size, 256))
	if err := r.readAt(head, 0); err != nil {
		return "", 0, err
	}
	return parseSearchHeader(head)
}
