//go:build linux || darwin

package file

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/longterm/ltdriver"
)

func init() {
	ltdriver.RegisterByNamespace(func(ctx context.Context, rawURL string, opts longterm.Options) (longterm.Store, error) {
		u, err := url.Parse(rawURL)
		if err != nil {
			return nil, err
		}
		dir, err := dirFromURL(u)
		if err != nil {
			return nil, err
		}
		return OpenLongTerm(ctx, dir, opts)
	}, "file")
}

// LongTerm is a longterm.Store in the folder of a file Store: DIR/.longterm
// for the default session namespace, DIR/NS/.longterm beside the sessions
// of namespace NS for another; one items file per namespace, in a folder
// tree that mirrors the namespace's path
// (DIR/.longterm/ns/users/ada/items.jsonl). See docs/MEMORY.md, "The file
// backend".
//
// Writers take one lock for the whole folder (flock on DIR/.longterm/lock)
// and make each write durable before it returns: a Put of a new key
// appends its line and fsyncs the file; any other change (a replace, a
// delete, an expired item erased) writes the namespace's file whole
// under a temporary name, fsyncs it and renames it into place, so that
// the old text is in no file afterwards. Readers take no lock: they see a
// file before or after a write. It is safe for concurrent use by many
// goroutines and by many processes on one machine.
type LongTerm struct {
	dir    string   // the store's folder, absolute
	folder string   // the memory's folder, absolute: DIR/.longterm or DIR/NS/.longterm
	root   *os.Root // the folder
	opts   longterm.Options

	ops   sync.RWMutex   // read-held by every call, write-held by Close
	guard ltdriver.Guard // checked by every call under ops, closed by Close

	writeMu  sync.Mutex // one writer of this process holds the lock file at a time
	lockFile *os.File

	cacheMu sync.Mutex
	cache   map[string]*nsFile // namespace files as read, by namespace
}

var (
	_ longterm.Store   = (*LongTerm)(nil)
	_ longterm.Sweeper = (*LongTerm)(nil)
)

// OpenLongTerm opens the long-term memory of session namespace
// opts.Namespace in dir, the folder of a file Store (or one of its own),
// creating dir (mode 0700) and the memory's folder when they are missing.
// Every file it touches is reached through an os.Root on that folder.
func OpenLongTerm(ctx context.Context, dir string, opts longterm.Options) (*LongTerm, error) {
	if dir == "" {
		return nil, errors.New("open file store: no folder given")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("open file store: %w", err)
	}
	ns, err := ltdriver.SessionNamespace(opts)
	if err != nil {
		return nil, fmt.Errorf("open file store: %w", err)
	}
	folder := filepath.Join(abs, ltFolder)
	if ns != cairn.DefaultNamespace {
		folder = filepath.Join(abs, ns, ltFolder)
	}
	if err := os.MkdirAll(filepath.Join(folder, ltTree), 0o700); err != nil {
		return nil, fmt.Errorf("open file store: %w", err)
	}
	root, err := os.OpenRoot(folder)
	if err != nil {
		return nil, fmt.Errorf("open file store: %w", err)
	}
	lock, err := root.OpenFile(ltLock, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("open file store: %w", err)
	}
	return &LongTerm{dir: abs, folder: folder, root: root, opts: opts.WithDefaults(), lockFile: lock, cache: map[string]*nsFile{}}, nil
}

// Dir returns the store's folder.
func (s *LongTerm) Dir() string { return s.dir }

// Close implements longterm.Store.
func (s *LongTerm) Close() error {
	s.ops.Lock()
	defer s.ops.Unlock()
	if !s.guard.Close() {
		return nil
	}
	return errors.Join(s.lockFile.Close(), s.root.Close())
}

// locked runs fn holding the folder's write lock: the process's mutex,
// then flock on the lock file, waited for until ctx ends.
func (s *LongTerm) locked(ctx context.Context, fn func() error) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	fd := int(s.lockFile.Fd())
	for delay := 100 * time.Microsecond; ; delay = min(2*delay, 20*time.Millisecond) {
		err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			return fmt.Errorf("lock %s: %w", filepath.Join(s.folder, ltLock), err)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w: waiting for the lock of %s: %w", cairn.ErrUnavailable, s.folder, ctx.Err())
		case <-t.C:
		}
	}
	defer syscall.Flock(fd, syscall.LOCK_UN)
	return fn()
}

// nextVersion takes the next version: one above the revision file's and
// above floor (the highest version of the namespace's file, should the
// revision file have lost writes in a crash), and records it. It fsyncs
// the revision file only when durable is set, before a change that erases
// an item: a version is never given twice to one key, as versions a key
// had are either in its file or below a durable revision. The writer's
// lock is held.
func (s *LongTerm) nextVersion(floor int64, durable bool) (int64, error) {
	b, err := s.root.ReadFile(ltRevision)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, err
	}
	var last int64
	if t := strings.TrimSpace(string(b)); t != "" {
		if last, err = strconv.ParseInt(t, 10, 64); err != nil {
			return 0, fmt.Errorf("%w: %s: %q is not a number", cairn.ErrDamaged, filepath.Join(s.folder, ltRevision), t)
		}
	}
	v := max(last, floor) + 1
	f, err := s.root.OpenFile(ltRevision, os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return 0, err
	}
	_, err = f.WriteAt(fmt.Appendf(nil, "%020d\n", v), 0)
	if err == nil && durable {
		err = f.Sync()
	}
	return v, errors.Join(err, f.Close())
}

// syncRevision makes the revision file durable before an erasure.
func (s *LongTerm) syncRevision() error {
	f, err := s.root.OpenFile(ltRevision, os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	return errors.Join(f.Sync(), f.Close())
}

// liveItems returns the live items of d at now, without skip's key.
func liveItems(d *nsFile, now time.Time, skip string) []*longterm.Item {
	var out []*longterm.Item
	if d == nil {
		return nil
	}
	for k, it := range d.items {
		if k != skip && !ltdriver.Expired(it.ExpiresAt, now) {
			out = append(out, it)
		}
	}
	return out
}

// Put implements longterm.Store.
func (s *LongTerm) Put(ctx context.Context, item longterm.Item, opts longterm.PutOptions) (*longterm.Item, error) {
	s.ops.RLock()
	defer s.ops.RUnlock()
	item, err := s.guard.Put(ctx, s.opts, item, opts)
	if err != nil {
		return nil, err
	}
	ns := item.Namespace
	err = s.locked(ctx, func() error {
		d, err := s.readNS(ns)
		if err != nil {
			return err
		}
		now := ltdriver.Now(s.opts)
		var old, stored *longterm.Item
		var floor int64
		if d != nil {
			stored, floor = d.items[item.Key], d.maxVersion
			if stored != nil && !ltdriver.Expired(stored.ExpiresAt, now) {
				old = stored
			}
		}
		var current int64
		if old != nil {
			current = old.Version
		}
		if err := ltdriver.Admit(ns, item.Key, current, opts.IfVersion); err != nil {
			return err
		}
		// A new key appends; anything else (a replace, a file with
		// expired items or a torn line) writes the file whole.
		// Dropping expired items makes their keys vanish from the file:
		// the revision that covers their versions is made durable first.
		dropped := d != nil && len(liveItems(d, now, "")) < len(d.items)
		whole := d == nil || stored != nil || d.torn || dropped
		v, err := s.nextVersion(floor, dropped)
		if err != nil {
			return err
		}
		ltdriver.Stamp(&item, old, v, now, opts.TTL)
		if !whole {
			return s.appendNS(ns, &item)
		}
		return s.writeNS(ns, append(liveItems(d, now, item.Key), &item))
	})
	if err != nil {
		return nil, fmt.Errorf("put %s %s: %w", ns, item.Key, err)
	}
	out := ltdriver.Clone(&item, true)
	return &out, nil
}

// Get implements longterm.Store.
func (s *LongTerm) Get(ctx context.Context, namespace, key string) (*longterm.Item, error) {
	s.ops.RLock()
	defer s.ops.RUnlock()
	if err := s.guard.Key(namespace, key); err != nil {
		return nil, err
	}
	d, err := s.readNS(namespace)
	if err != nil {
		return nil, fmt.Errorf("get %s %s: %w", namespace, key, err)
	}
	if d == nil || d.items[key] == nil || ltdriver.Expired(d.items[key].ExpiresAt, ltdriver.Now(s.opts)) {
		return nil, ltdriver.NotFound(namespace, key)
	}
	out := ltdriver.Clone(d.items[key], true)
	return &out, nil
}

// Delete implements longterm.Store: the namespace's file is written whole
// without the item (and without the expired ones).
func (s *LongTerm) Delete(ctx context.Context, namespace, key string, ifVersion int64) error {
	s.ops.RLock()
	defer s.ops.RUnlock()
	if err := s.guard.Delete(namespace, key, ifVersion); err != nil {
		return err
	}
	err := s.locked(ctx, func() error {
		d, err := s.readNS(namespace)
		if err != nil {
			return err
		}
		if d == nil || d.items[key] == nil {
			return ltdriver.NotFound(namespace, key)
		}
		now := ltdriver.Now(s.opts)
		it := d.items[key]
		gone := ltdriver.Expired(it.ExpiresAt, now)
		if !gone {
			if err := ltdriver.Admit(namespace, key, it.Version, ifVersion); err != nil {
				return err
			}
		}
		if err := s.syncRevision(); err != nil {
			return err
		}
		if err := s.writeNS(namespace, liveItems(d, now, key)); err != nil {
			return err
		}
		if gone {
			return ltdriver.NotFound(namespace, key)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete %s %s: %w", namespace, key, err)
	}
	return nil
}

// DeleteNamespace implements longterm.Store: it removes the items files
// of the namespaces under prefix, and their folders.
func (s *LongTerm) DeleteNamespace(ctx context.Context, prefix string) (int, error) {
	s.ops.RLock()
	defer s.ops.RUnlock()
	if err := s.guard.DeleteNamespace(prefix); err != nil {
		return 0, err
	}
	n := 0
	err := s.locked(ctx, func() error {
		nss, err := s.namespaces(prefix)
		if err != nil {
			return err
		}
		if err := s.syncRevision(); err != nil {
			return err
		}
		now := ltdriver.Now(s.opts)
		for _, ns := range nss {
			d, err := s.readNS(ns)
			if err != nil && !errors.Is(err, cairn.ErrDamaged) {
				return err
			}
			if d != nil {
				n += len(liveItems(d, now, ""))
			}
			s.forget(ns)
			if err := s.root.Remove(itemsPath(ns)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		if err := s.root.RemoveAll(nsDir(prefix)); err != nil {
			return err
		}
		parent := ltTree
		if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
			if err := s.pruneFolders(prefix[:i]); err != nil {
				return err
			}
			parent = nsDir(prefix[:i])
		}
		if err := s.syncDir(parent); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("delete namespace %s: %w", prefix, err)
	}
	return n, nil
}

// Sweep implements longterm.Sweeper: every namespace's file that holds an
// expired item is written whole without it.
func (s *LongTerm) Sweep(ctx context.Context) (int, error) {
	s.ops.RLock()
	defer s.ops.RUnlock()
	if err := s.guard.Check(); err != nil {
		return 0, err
	}
	n := 0
	err := s.locked(ctx, func() error {
		nss, err := s.namespaces("")
		if err != nil {
			return err
		}
		now := ltdriver.Now(s.opts)
		synced := false
		for _, ns := range nss {
			if err := ctx.Err(); err != nil {
				return err
			}
			d, err := s.readNS(ns)
			if err != nil {
				return err
			}
			live := liveItems(d, now, "")
			if d == nil || len(live) == len(d.items) {
				continue
			}
			if !synced {
				if err := s.syncRevision(); err != nil {
					return err
				}
				synced = true
			}
			if err := s.writeNS(ns, live); err != nil {
				return err
			}
			n += len(d.items) - len(live)
		}
		return nil
	})
	if err != nil {
		return n, fmt.Errorf("sweep: %w", err)
	}
	return n, nil
}
