//go:build !linux && !darwin

package file

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/longterm"
)

// errUnsupported is what Open returns on this system, and every method of
// a Store that did not come from Open.
var errUnsupported = fmt.Errorf("the file store does not run on %s (it runs on Linux and macOS): "+
	"keep the sessions in SQLite instead, sqlite:///.cairn/cairn.db or sqlite:C:/path/cairn.db: %w",
	runtime.GOOS, errors.ErrUnsupported)

// Store is the file store, which does not run on this system: Open
// returns an error, matched by errors.ErrUnsupported, naming the system
// and suggesting the sqlite store. The file store's locking between
// processes is built on flock and POSIX file locks, which this system
// lacks; see docs/STORES.md, "Platforms".
type Store struct{}

var (
	_ cairn.Store        = (*Store)(nil)
	_ driver.Sweeper     = (*Store)(nil)
	_ cairn.Leaser       = (*Store)(nil)
	_ driver.Checker     = (*Store)(nil)
	_ cairn.Snapshotter  = (*Store)(nil)
	_ driver.LocalLocker = (*Store)(nil)
	_ driver.Searcher    = (*Store)(nil)
)

// Open returns an error matched by errors.ErrUnsupported: the file store
// does not run on this system.
func Open(ctx context.Context, dir string, opts cairn.StoreOptions) (*Store, error) {
	return nil, fmt.Errorf("open file store %s: %w", dir, errUnsupported)
}

// Create implements cairn.Store; it fails on this system.
func (s *Store) Create(context.Context, cairn.SessionMeta) error { return errUnsupported }

// Append implements cairn.Store; it fails on this system.
func (s *Store) Append(context.Context, string, int64, ...cairn.Event) error { return errUnsupported }

// Load implements cairn.Store; it fails on this system.
func (s *Store) Load(context.Context, string, int64) (*cairn.Record, error) {
	return nil, errUnsupported
}

// Stat implements cairn.Store; it fails on this system.
func (s *Store) Stat(context.Context, string) (*cairn.SessionInfo, error) {
	return nil, errUnsupported
}

// List implements cairn.Store; it fails on this system.
func (s *Store) List(context.Context, cairn.ListOptions) (*cairn.ListPage, error) {
	return nil, errUnsupported
}

// Delete implements cairn.Store; it fails on this system.
func (s *Store) Delete(context.Context, string) error { return errUnsupported }

// Close implements cairn.Store: there is nothing to close.
func (s *Store) Close() error { return nil }

// Search implements driver.Searcher; it fails on this system.
func (s *Store) Search(context.Context, string, int) ([]driver.SearchHit, error) {
	return nil, errUnsupported
}

// Sweep implements driver.Sweeper; it fails on this system.
func (s *Store) Sweep(context.Context) (int, error) { return 0, errUnsupported }

// CountExpired implements driver.Sweeper; it fails on this system.
func (s *Store) CountExpired(context.Context) (int, error) { return 0, errUnsupported }

// Acquire implements cairn.Leaser; it fails on this system.
func (s *Store) Acquire(context.Context, string, string, time.Duration) (cairn.Lease, error) {
	return cairn.Lease{}, errUnsupported
}

// Takeover implements cairn.Leaser; it fails on this system.
func (s *Store) Takeover(context.Context, string, string, time.Duration) (cairn.Lease, error) {
	return cairn.Lease{}, errUnsupported
}

// Renew implements cairn.Leaser; it fails on this system.
func (s *Store) Renew(context.Context, cairn.Lease, time.Duration) (cairn.Lease, error) {
	return cairn.Lease{}, errUnsupported
}

// Release implements cairn.Leaser; it fails on this system.
func (s *Store) Release(context.Context, cairn.Lease) error { return errUnsupported }

// CurrentLease implements cairn.Leaser; it fails on this system.
func (s *Store) CurrentLease(context.Context, string) (cairn.Lease, error) {
	return cairn.Lease{}, errUnsupported
}

// CurrentLeases implements cairn.Leaser; it fails on this system.
func (s *Store) CurrentLeases(context.Context, []string) (map[string]cairn.Lease, error) {
	return nil, errUnsupported
}

// AppendFenced implements cairn.Leaser; it fails on this system.
func (s *Store) AppendFenced(context.Context, string, cairn.Lease, int64, ...cairn.Event) error {
	return errUnsupported
}

// Check implements driver.Checker; it fails on this system.
func (s *Store) Check(context.Context) (*driver.CheckReport, error) { return nil, errUnsupported }

// PutSnapshot implements cairn.Snapshotter; it fails on this system.
func (s *Store) PutSnapshot(context.Context, string, cairn.Snapshot) error { return errUnsupported }

// LoadSnapshot implements cairn.Snapshotter; it fails on this system.
func (s *Store) LoadSnapshot(context.Context, string) (*cairn.Snapshot, error) {
	return nil, errUnsupported
}

// DropSnapshot implements cairn.Snapshotter; it fails on this system.
func (s *Store) DropSnapshot(context.Context, string) error { return errUnsupported }

// LockFile implements driver.LocalLocker: no file, since there is no store.
func (s *Store) LockFile(string) string { return "" }

// LongTerm is the file store's long-term memory, which does not run on this
// system either: OpenLongTerm returns the same error as Open.
type LongTerm struct{}

// OpenLongTerm returns an error matched by errors.ErrUnsupported.
func OpenLongTerm(ctx context.Context, dir string, opts longterm.Options) (*LongTerm, error) {
	return nil, fmt.Errorf("open file long-term memory %s: %w", dir, errUnsupported)
}

func init() {
	longterm.Register("file", func(ctx context.Context, u *url.URL, opts longterm.Options) (longterm.Store, error) {
		return nil, fmt.Errorf("open file long-term memory: %w", errUnsupported)
	})
}
