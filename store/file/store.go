//go:build linux || darwin

package file

import (
	"container/list"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
)

// File and folder names inside a namespace folder.
const (
	logName     = "events.jsonl" // the event log, one envelope per line
	metaName    = "meta.json"    // durable SessionMeta and SessionInfo checkpoint
	infoName    = "info.json"    // SessionInfo cache, replaced after every append
	lockName    = "lock"         // the session's token; the target of flock
	leaseName   = "lease.json"   // the session's lease, once one was taken
	tmpPrefix   = ".tmp-"        // a session folder being created
	trashPrefix = ".trash-"      // a session folder being deleted
)

const (
	// checkpointBytes is how far the log may grow past the durable
	// meta.json before an append writes a new checkpoint. It bounds what
	// recovery re-reads when info.json was lost in a crash.
	checkpointBytes = 4 << 20
	// maxOpenSessions is how many idle sessions keep their files open:
	// the ones used last.
	maxOpenSessions = 64
	// staleTmpAge is how old an abandoned creation folder must be before
	// Sweep removes it.
	staleTmpAge = time.Hour
)

// Store is a cairn.Store on a folder of the local disk, with the optional
// abilities driver.Sweeper, cairn.Leaser, driver.Checker, cairn.Snapshotter,
// driver.Searcher and driver.LocalLocker.
// It is safe for concurrent use by many goroutines and by many processes on
// one machine.
type Store struct {
	dir  string   // the store's folder, absolute (LockFile)
	root *os.Root // the store's folder
	ns   *os.Root // the namespace folder inside root
	// nsDir is the namespace folder open as a file, for the one-call
	// identity checks of sessions' lock files (see Store.current).
	nsDir *os.File
	opts  cairn.StoreOptions

	ops    sync.RWMutex // read-held by every call, write-held by Close
	closed bool

	mu       sync.Mutex // guards sessions, idle and damage
	sessions map[string]*session
	idle     list.List          // the entries nobody uses that keep their files open, most recently used first
	opens    atomic.Int64       // openings of a session's files (openFiles), for tests
	damage   map[string]damaged // damaged sessions (damage.go)

	journal journal     // the group commit of appends (journal.go)
	search  searchIndex // the text index of Search (search.go)
	feed    feed        // what tells the searches of changes (search_feed.go)
}

var (
	_ cairn.Store    = (*Store)(nil)
	_ driver.Sweeper = (*Store)(nil)
	_ cairn.Leaser   = (*Store)(nil)
	_ driver.Checker = (*Store)(nil)
)

// Open opens the store in dir, creating dir (mode 0700) and the
// namespace's folder inside it when they are missing. Every file the store
// touches is reached through an os.Root on dir, so nothing it does can
// leave dir.
func Open(ctx context.Context, dir string, opts cairn.StoreOptions) (*Store, error) {
	opts, err := driver.Options(opts)
	if err != nil {
		return nil, err
	}
	if dir == "" {
		return nil, errors.New("open file store: no folder given")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("open file store: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("open file store: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("open file store: %w", err)
	}
	if err := root.Mkdir(opts.Namespace, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		root.Close()
		return nil, fmt.Errorf("open file store: namespace %s: %w", opts.Namespace, err)
	}
	ns, err := root.OpenRoot(opts.Namespace)
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("open file store: namespace %s: %w", opts.Namespace, err)
	}
	nsDir, err := ns.Open(".")
	if err != nil {
		ns.Close()
		root.Close()
		return nil, fmt.Errorf("open file store: namespace %s: %w", opts.Namespace, err)
	}
	s := &Store{dir: abs, root: root, ns: ns, nsDir: nsDir, opts: opts, sessions: map[string]*session{}}
	s.journal.s = s
	if err := s.recoverJournals(ctx); err != nil {
		s.closeFiles()
		return nil, fmt.Errorf("open file store: namespace %s: %w", opts.Namespace, err)
	}
	return s, nil
}

// begin starts a call: it returns ErrClosed after Close, and otherwise
// holds off Close until the caller runs s.ops.RUnlock.
func (s *Store) begin() error {
	s.ops.RLock()
	if s.closed {
		s.ops.RUnlock()
		return cairn.ErrClosed
	}
	return nil
}

// Create implements cairn.Store. The session's folder is built under a
// temporary name and renamed into place, so it appears whole or not at all.
func (s *Store) Create(ctx context.Context, meta cairn.SessionMeta) error {
	if err := s.begin(); err != nil {
		return err
	}
	defer s.ops.RUnlock()
	if err := cairn.ValidateID(meta.ID); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.create(ctx, meta); err != nil {
		return fmt.Errorf("create %s: %w", meta.ID, err)
	}
	return nil
}

// Append implements cairn.Store: the events are written with one write
// call under the session's locks, and made durable by the journal with the
// appends of other sessions of the moment (docs/STORES.md, "The file store").
func (s *Store) Append(ctx context.Context, id string, expectSeq int64, events ...cairn.Event) error {
	return s.appendChecked(ctx, id, expectSeq, events, nil)
}

// appendChecked is Append and, with fence set, AppendFenced: the checks of
// the arguments, then append.
func (s *Store) appendChecked(ctx context.Context, id string, expectSeq int64, events []cairn.Event, fence *cairn.Lease) error {
	if err := s.begin(); err != nil {
		return err
	}
	defer s.ops.RUnlock()
	events, err := driver.CheckAppend(s.opts.Limits, id, expectSeq, events)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.append(ctx, id, expectSeq, events, fence); err != nil {
		return fmt.Errorf("append %s: %w", id, err)
	}
	return nil
}

// Load implements cairn.Store.
func (s *Store) Load(ctx context.Context, id string, fromSeq int64) (*cairn.Record, error) {
	if err := s.begin(); err != nil {
		return nil, err
	}
	defer s.ops.RUnlock()
	if err := cairn.ValidateID(id); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rec, err := s.load(ctx, id, fromSeq)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", id, err)
	}
	return rec, nil
}

// List implements cairn.Store. It reads the info of every session of the
// namespace and leaves filtering, order and paging to driver.PageInfos. A
// session that cannot be read is listed with the status damaged, and the
// others as usual.
func (s *Store) List(ctx context.Context, opts cairn.ListOptions) (*cairn.ListPage, error) {
	if err := s.begin(); err != nil {
		return nil, err
	}
	defer s.ops.RUnlock()
	ids, err := s.sessionIDs()
	if err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	now := s.opts.Now()
	all := make([]cairn.SessionInfo, 0, len(ids))
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if !strings.HasPrefix(id, opts.Prefix) {
			continue // the folder's name is the ID: no need to read it
		}
		info, err := s.info(ctx, id)
		switch {
		case errors.Is(err, cairn.ErrNotFound):
			continue // deleted while we listed
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case err != nil:
			// One session's files are unreadable: it is listed as
			// damaged, whatever the cause, and the others go on.
			info = s.damagedInfo(id)
		}
		if info.Status == cairn.StatusDamaged || !s.expired(info, now) {
			all = append(all, info)
		}
	}
	return driver.PageInfos(all, opts)
}

// Delete implements cairn.Store. The session's folder is renamed away
// under its lock, which makes the deletion atomic, and then removed.
func (s *Store) Delete(ctx context.Context, id string) error {
	if err := s.begin(); err != nil {
		return err
	}
	defer s.ops.RUnlock()
	if err := cairn.ValidateID(id); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.delete(ctx, id); err != nil {
		return fmt.Errorf("delete %s: %w", id, err)
	}
	return nil
}

// Sweep implements driver.Sweeper: it deletes every expired session of the
// namespace, and the leftovers of deletions and creations that a crash
// interrupted.
func (s *Store) Sweep(ctx context.Context) (int, error) {
	if err := s.begin(); err != nil {
		return 0, err
	}
	defer s.ops.RUnlock()
	n, err := s.sweep(ctx)
	if err != nil {
		return n, fmt.Errorf("sweep: %w", err)
	}
	return n, nil
}

// CountExpired implements driver.Sweeper: how many sessions Sweep would
// delete now.
func (s *Store) CountExpired(ctx context.Context) (int, error) {
	if err := s.begin(); err != nil {
		return 0, err
	}
	defer s.ops.RUnlock()
	ids, err := s.sessionIDs()
	if err != nil {
		return 0, fmt.Errorf("count expired: %w", err)
	}
	now := s.opts.Now()
	n := 0
	for _, id := range ids {
		info, err := s.info(ctx, id)
		switch {
		case ctx.Err() != nil:
			return n, ctx.Err()
		case err != nil:
			continue // gone, or damaged: Sweep leaves a damaged session
		case s.expired(info, now):
			n++
		}
	}
	return n, nil
}

// Close releases the store's open files. It is safe to call twice; every
// other method returns cairn.ErrClosed afterwards.
func (s *Store) Close() error {
	s.ops.Lock()
	defer s.ops.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	err := s.journal.close()
	s.closeFeed()
	return errors.Join(err, s.closeFiles())
}

// closeFiles closes the sessions' files and the store's folders.
func (s *Store) closeFiles() error {
	s.mu.Lock()
	for id, ss := range s.sessions {
		ss.closeFiles()
		delete(s.sessions, id)
	}
	s.idle.Init()
	s.mu.Unlock()
	return errors.Join(s.nsDir.Close(), s.ns.Close(), s.root.Close())
}

// expired reports whether a session last updated as info says has expired.
func (s *Store) expired(info cairn.SessionInfo, now time.Time) bool {
	return driver.Expired(s.opts.ExpiresAt(info.UpdatedAt), now)
}

// sessionIDs returns the names of the namespace folder's entries that are
// session folders: directories named by a valid ID. Temporary folders
// start with a dot and are never valid IDs; symbolic links are skipped.
func (s *Store) sessionIDs() ([]string, error) {
	entries, err := s.readNamespace()
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range entries {
		if e.IsDir() && cairn.ValidateID(e.Name()) == nil {
			ids = append(ids, e.Name())
		}
	}
	return ids, nil
}

func (s *Store) readNamespace() ([]fs.DirEntry, error) {
	d, err := s.ns.Open(".")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.ReadDir(-1)
}

// sweep deletes expired sessions and stale temporary folders.
func (s *Store) sweep(ctx context.Context) (int, error) {
	entries, err := s.readNamespace()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		name := e.Name()
		switch {
		case strings.HasPrefix(name, trashPrefix):
			if err := s.ns.RemoveAll(name); err != nil {
				return n, err
			}
		case strings.HasPrefix(name, tmpPrefix):
			// Another process may be creating a session right now: only
			// folders abandoned long ago are removed.
			if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > staleTmpAge {
				if err := s.ns.RemoveAll(name); err != nil {
					return n, err
				}
			}
		case e.IsDir() && cairn.ValidateID(name) == nil:
			deleted, err := s.sweepOne(ctx, name)
			if err != nil {
				return n, fmt.Errorf("session %s: %w", name, err)
			}
			if deleted {
				n++
			}
		}
	}
	return n, nil
}

// sweepOne deletes the session if it has expired, checking under its lock.
// A damaged session is left as it is: it is deleted only when asked for by
// its ID.
func (s *Store) sweepOne(ctx context.Context, id string) (bool, error) {
	ss := s.acquire(id)
	defer s.release(id, ss)
	if err := s.lock(ctx, ss, id, true); err != nil {
		if errors.Is(err, cairn.ErrNotFound) || errors.Is(err, cairn.ErrDamaged) {
			return false, nil
		}
		return false, err
	}
	defer ss.unlock()
	if !s.expired(ss.info, s.opts.Now()) {
		return false, nil
	}
	return true, s.remove(ss, id)
}

// randName returns prefix followed by random hex, for temporary folders.
func randName(prefix string) string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// Stat implements cairn.Store: Load's info, with no event read.
func (s *Store) Stat(ctx context.Context, id string) (*cairn.SessionInfo, error) {
	rec, err := s.Load(ctx, id, math.MaxInt64)
	if err != nil {
		return nil, err
	}
	return &rec.Info, nil
}
