//go:build linux || darwin

package file

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/cairnhq/cairn"
)

// The feed tells a store's search which sessions the namespace's other
// stores (of this process or others) changed since it last looked, so
// that it reads their search.jsonl again and no other: .search-feed in the
// namespace folder. Its first line is its generation,
//
//	cairn search feed 00000000000000000001
//
// and each later line names a session an append indexed ("+ID"), or the
// token of a session Delete removed ("-TOKEN"). An append adds its line
// with one write at the end (O_APPEND), under the session's lock, after
// its search.jsonl line and without an fsync: the feed says where to look,
// the files say what is there. A reader keeps how far it read, and in
// which generation. When the file passes feedMax, the store that notices
// starts the next generation under the file's flock: it writes the new
// header and cuts the file after it. A reader that finds another
// generation than its own reads every session's search.jsonl again (and
// nothing is lost: what it missed was written to the files before it was
// cut from the feed). Delete blanks the session's lines, so that the feed
// does not name a deleted session, and adds its token's.
const (
	feedName      = ".search-feed" // in the namespace folder; never a session's ID
	feedPrefix    = "cairn search feed "
	feedHeaderLen = len(feedPrefix) + 20 + 1
)

// feedMax is the length past which the feed starts its next generation (a
// variable for tests).
var feedMax int64 = 1 << 20

// feed is a store's open files of the feed.
type feed struct {
	mu sync.Mutex // guards opening w and rw; held while a generation starts or lines are blanked
	w  *os.File   // opened O_APPEND, for the lines
	rw *os.File   // for reading, a new generation, blanking
}

// feedFiles returns the feed's files, opened on first use. With create
// set, a missing feed is made; otherwise it is an error matched by
// fs.ErrNotExist.
func (s *Store) feedFiles(create bool) (w, rw *os.File, err error) {
	f := &s.feed
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.w != nil {
		return f.w, f.rw, nil
	}
	rw, err = s.ns.OpenFile(feedName, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) && create {
		if err = s.makeFeed(); err == nil {
			rw, err = s.ns.OpenFile(feedName, os.O_RDWR, 0)
		}
	}
	if err != nil {
		return nil, nil, err
	}
	if w, err = s.ns.OpenFile(feedName, os.O_WRONLY|os.O_APPEND, 0); err != nil {
		rw.Close()
		return nil, nil, err
	}
	f.w, f.rw = w, rw
	return w, rw, nil
}

// makeFeed makes the feed, whole: its header is written under a
// temporary name, which is linked to the feed's unless another store made
// it first.
func (s *Store) makeFeed() error {
	tmp := randName(tmpPrefix)
	err := s.ns.WriteFile(tmp, feedHeader(1), 0o600)
	if err == nil {
		if err = s.ns.Link(tmp, feedName); errors.Is(err, fs.ErrExist) {
			err = nil
		}
	}
	return errors.Join(err, s.ns.Remove(tmp))
}

// closeFeed closes the feed's files.
func (s *Store) closeFeed() {
	if s.feed.w != nil {
		s.feed.w.Close()
		s.feed.rw.Close()
		s.feed.w, s.feed.rw = nil, nil
	}
}

func feedHeader(gen uint64) []byte { return fmt.Appendf(nil, feedPrefix+"%020d\n", gen) }

// feedGen reads the feed's generation.
func feedGen(rw *os.File) (uint64, error) {
	b := make([]byte, feedHeaderLen)
	if _, err := rw.ReadAt(b, 0); err != nil {
		return 0, fmt.Errorf("read %s: %w", feedName, err)
	}
	gen, err := strconv.ParseUint(string(b[len(feedPrefix):feedHeaderLen-1]), 10, 64)
	if !bytes.HasPrefix(b, []byte(feedPrefix)) || b[feedHeaderLen-1] != '\n' || err != nil {
		return 0, fmt.Errorf("%w: %s: the first line is not a feed's header", cairn.ErrDamaged, feedName)
	}
	return gen, nil
}

// feedMark returns the feed's generation and length, where a reader that
// then reads every session's search.jsonl goes on from. ok is false when
// there is no feed.
func (s *Store) feedMark(create bool) (gen uint64, size int64, ok bool, err error) {
	_, rw, err := s.feedFiles(create)
	if errors.Is(err, fs.ErrNotExist) && !create {
		return 0, 0, false, nil
	}
	if err != nil {
		return 0, 0, false, err
	}
	if gen, err = feedGen(rw); err != nil {
		return 0, 0, false, err
	}
	fi, err := rw.Stat()
	if err != nil {
		return 0, 0, false, err
	}
	return gen, fi.Size(), true, nil
}

// lockFeed runs fn holding the feed's flock (and its mutex, for the
// stores of this process that share the open file).
func (s *Store) lockFeed(rw *os.File, fn func() error) error {
	s.feed.mu.Lock()
	defer s.feed.mu.Unlock()
	for {
		err := syscall.Flock(int(rw.Fd()), syscall.LOCK_EX)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EINTR) {
			return fmt.Errorf("lock %s: %w", feedName, err)
		}
	}
	defer syscall.Flock(int(rw.Fd()), syscall.LOCK_UN)
	return fn()
}

// noteSearch tells the stores' searches that an append indexed session
// id: this store's at once, the others' through a line of the feed. It
// runs under the session's lock, so that Delete, which takes it, finds the
// line to blank. The append is durable already: an error here leaves
// other stores to find the session at their next full read.
func (s *Store) noteSearch(id string) {
	s.search.touch(id)
	w, rw, err := s.feedFiles(true)
	if err != nil {
		return
	}
	if _, err := w.Write([]byte("+" + id + "\n")); err != nil {
		return
	}
	if end, err := w.Seek(0, io.SeekCurrent); err == nil && end > feedMax {
		_ = s.nextFeedGen(rw)
	}
}

// nextFeedGen starts the feed's next generation, if no other store did
// since it passed feedMax: the new header, and the file cut after it.
func (s *Store) nextFeedGen(rw *os.File) error {
	return s.lockFeed(rw, func() error {
		fi, err := rw.Stat()
		if err != nil || fi.Size() <= feedMax {
			return err
		}
		gen, err := feedGen(rw)
		if err != nil {
			// A header that does not read is written anew, with a
			// generation no reader holds.
			gen = uint64(time.Now().UnixNano())
		}
		if _, err := rw.WriteAt(feedHeader(gen+1), 0); err != nil {
			return err
		}
		return rw.Truncate(int64(feedHeaderLen))
	})
}

// feedPlace is where the feed stood before a session was deleted: the
// lines before it are all that name the session deleted (later ones are
// of a session created with its ID since).
type feedPlace struct {
	gen  uint64
	size int64
	ok   bool // there is a feed
}

// placeInFeed returns where the feed stands; with a session's lock held,
// no line of the session comes after it.
func (s *Store) placeInFeed() (feedPlace, error) {
	gen, size, ok, err := s.feedMark(false)
	return feedPlace{gen, size, ok}, err
}

// forgetInFeed blanks the lines of the feed before at that name session
// id, which was deleted, and adds the line of its token (when there is
// one), which tells the searches of other stores to drop it.
func (s *Store) forgetInFeed(id, token string, at feedPlace) error {
	if !at.ok {
		return nil // no feed: no search to tell, no line to blank
	}
	w, rw, err := s.feedFiles(false)
	if err != nil {
		return err
	}
	err = s.lockFeed(rw, func() error {
		if gen, err := feedGen(rw); err != nil || gen != at.gen {
			return err // another generation: the lines before at were cut
		}
		buf := make([]byte, at.size-int64(feedHeaderLen))
		if _, err := rw.ReadAt(buf, int64(feedHeaderLen)); err != nil {
			return err
		}
		line := []byte("+" + id + "\n")
		var blank []byte
		for pos := 0; pos < len(buf); {
			end := bytes.IndexByte(buf[pos:], '\n')
			if end < 0 {
				break
			}
			if end+1 == len(line) && bytes.Equal(buf[pos:pos+end+1], line) {
				if blank == nil {
					blank = bytes.Repeat([]byte{' '}, len(line)-1)
				}
				if _, err := rw.WriteAt(blank, int64(feedHeaderLen+pos)); err != nil {
					return err
				}
			}
			pos += end + 1
		}
		return nil
	})
	if err == nil && token != "" {
		_, err = w.Write([]byte("-" + token + "\n"))
	}
	if err != nil {
		return fmt.Errorf("%s: %w", feedName, err)
	}
	return nil
}

// readFeed returns the sessions that the feed named since x last read
// it, and moves x on. rescan is true when x's place no longer holds (the
// feed started another generation, or does not read): the caller reads
// every session's search.jsonl again.
func (s *Store) readFeed(x *searchIndex) (ids []string, rescan bool, err error) {
	_, rw, err := s.feedFiles(true)
	if err != nil {
		return nil, false, err
	}
	gen, err := feedGen(rw)
	if err != nil || gen != x.feedGen {
		return nil, true, nil
	}
	fi, err := rw.Stat()
	if err != nil {
		return nil, false, err
	}
	switch {
	case fi.Size() < x.feedOff:
		return nil, true, nil
	case fi.Size() == x.feedOff:
		return nil, false, nil // nothing new in the generation read
	}
	buf := make([]byte, fi.Size()-x.feedOff)
	if _, err := rw.ReadAt(buf, x.feedOff); err != nil {
		return nil, false, fmt.Errorf("read %s: %w", feedName, err)
	}
	buf = buf[:bytes.LastIndexByte(buf, '\n')+1]
	// The header again: if the feed was cut meanwhile, the lines read may
	// be of the next generation.
	if again, err := feedGen(rw); err != nil || again != gen {
		return nil, true, nil
	}
	x.feedOff += int64(len(buf))
	for line := range bytes.Lines(buf) {
		if len(line) < 2 {
			continue
		}
		name := string(line[1 : len(line)-1])
		switch line[0] {
		case '+':
			if cairn.ValidateID(name) == nil {
				ids = append(ids, name)
			}
		case '-':
			if id, ok := x.tokens[name]; ok {
				ids = append(ids, id)
			}
		}
	}
	return ids, false, nil
}
