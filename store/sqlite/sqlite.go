package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/internal/group"
	"github.com/cairnhq/cairn/internal/unixnano"
)

// Options configure Open.
type Options struct {
	cairn.StoreOptions

	// Synchronous is SQLite's synchronous setting for the writer
	// connection: "FULL" (the default; every commit is fsynced before
	// Append returns, so it survives a power loss) or "NORMAL" (commits
	// survive a crash of the process, but the last ones may be lost if
	// the machine loses power; several times faster). Case does not
	// matter.
	Synchronous string
}

// BusyTimeout is how long a connection waits for a lock that another
// connection or process holds before it gives up with SQLITE_BUSY.
const BusyTimeout = 10 * time.Second

// cacheSize is each connection's page cache: 16 MiB (SQLite's default is
// 2 MiB), so that the indexes a List walks and the pages Append touches
// stay in it at a million sessions; at most 80 MiB for the writer and
// the readers together, and only as the pages are read. Measured at
// 200,000 sessions (a 700 MB file), paging through 20,000 sessions took
// 300 ms instead of 550 ms; single lookups and first pages were the
// same. Memory-mapping (mmap_size) is off: it gained nothing measurable
// there, and through a map an I/O error or a file truncated by another
// process is a signal that kills the process instead of an error that
// the store reports as damage.
const cacheSize = "cache_size(-16384)"

// readers is the size of the reader connection pool.
const readers = 4

// Store is a cairn.Store in one SQLite database file, seeing one
// namespace. Writes go through a single connection; reads use a small pool
// of their own. It is safe for concurrent use, and several processes may
// open the same file.
type Store struct {
	opts cairn.StoreOptions
	path string
	sync string // "FULL" or "NORMAL"

	w *sql.DB // the one writer connection
	r *sql.DB // reader connections

	// Prepared statements of the hot path, on the writer.
	head    *sql.Stmt // a session's last seq, expiry and recorded damage
	insert  *sql.Stmt // one event
	index   *sql.Stmt // one event's text, for Search, pending (indexSQL)
	advance *sql.Stmt // a live, undamaged session's head row moved past an append

	ranked *sql.Stmt // Search's query, on the readers

	pending atomic.Int64 // texts appended since this store last indexed them
	indexMu sync.Mutex   // one indexPending at a time

	queue  commitQueue // appends waiting for the writer
	damage damage      // what the store found damaged (errors.go)

	afterSweepBatch func(n int) // tests: called after each committed batch

	guard     driver.Guard
	closeOnce sync.Once
	closeErr  error
}

var (
	_ cairn.Store    = (*Store)(nil)
	_ driver.Sweeper = (*Store)(nil)
)

// Open opens the SQLite database at path, creating its folder (mode 0700)
// and the file (mode 0600) if they are missing, and brings its schema up to
// date. It refuses a database whose schema is newer than this package
// knows (cairn.ErrSchemaTooNew).
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	so, err := driver.Options(opts.StoreOptions)
	if err != nil {
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	syncMode, err := synchronousMode(opts.Synchronous)
	if err != nil {
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	abs, empty, err := openFile(path)
	if err != nil {
		return nil, err
	}
	s := &Store{opts: so, path: abs, sync: syncMode, queue: commitQueue{gather: group.NewGather()}}
	if err := s.connect(ctx, empty); err != nil {
		s.closeDBs()
		return nil, fmt.Errorf("open sqlite %s: %w", path, s.classify(err))
	}
	return s, nil
}

// Path returns the absolute path of the database file.
func (s *Store) Path() string { return s.path }

func synchronousMode(v string) (string, error) {
	switch strings.ToUpper(v) {
	case "", "FULL":
		return "FULL", nil
	case "NORMAL":
		return "NORMAL", nil
	}
	return "", fmt.Errorf("synchronous %q: want FULL or NORMAL", v)
}

// openFile returns the absolute path of the database file at path, made
// by createFile, and whether it is a new database; an error if path is
// empty or the file cannot be made.
func openFile(path string) (abs string, empty bool, err error) {
	if path == "" {
		return "", false, errors.New("open sqlite: empty path")
	}
	abs, err = filepath.Abs(path)
	if err == nil {
		empty, err = createFile(abs)
	}
	if err != nil {
		return "", false, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	return abs, empty, nil
}

// createFile makes the folder and the empty database file with private
// permissions, so that SQLite (which gives its -wal and -shm files the
// database's mode) never creates them readable by others. It reports
// whether the file is empty: a new database.
func createFile(path string) (bool, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return false, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return false, err
	}
	fi, err := f.Stat()
	return err == nil && fi.Size() == 0, errors.Join(err, f.Close())
}

// dsn returns the driver's name for the file with the given pragmas and
// extra parameters.
func dsn(path string, pragmas []string, extra url.Values) string {
	q := url.Values{}
	for _, p := range pragmas {
		q.Add("_pragma", p)
	}
	for k, v := range extra {
		q[k] = v
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(path)}
	return u.String() + "?" + q.Encode()
}

// connect opens the writer, migrates the schema, opens the readers and
// prepares the hot statements. empty says that the file is a new database.
func (s *Store) connect(ctx context.Context, empty bool) error {
	if err := openConns(ctx, s.path, s.sync, empty, true, &s.w, &s.r); err != nil {
		return err
	}
	w := s.w
	var err error
	if s.head, err = w.PrepareContext(ctx, `SELECT last_seq, expires_at, damage FROM sessions
		WHERE namespace = ? AND id = ?`); err != nil {
		return err
	}
	if s.insert, err = w.PrepareContext(ctx, `INSERT INTO events (namespace, session_id, seq, envelope)
		VALUES (?, ?, ?, ?)`); err != nil {
		return err
	}
	if s.index, err = w.PrepareContext(ctx, indexSQL); err != nil {
		return err
	}
	if s.ranked, err = s.r.PrepareContext(ctx, rankedSQL); err != nil {
		return err
	}
	s.advance, err = w.PrepareContext(ctx, `UPDATE sessions SET last_seq = ?1, updated_at = ?2, expires_at = ?3,
		steps = steps + ?4,
		status = CASE WHEN ?5 = '' THEN status ELSE ?5 END,
		first_message = CASE WHEN first_message = '' AND ?6 THEN ?7 ELSE first_message END
		WHERE namespace = ?8 AND id = ?9 AND last_seq = ?10 AND (expires_at = 0 OR expires_at > ?11) AND damage = ''`)
	return err
}

// openConns opens the writer connection of the file at path, migrates the
// schema, and opens the reader connections: what a Store and a LongTerm
// open alike. It sets *wp and *rp as it opens them, so that the caller
// closes what was opened when it fails part way. empty says that the
// file is a new database. checkReads runs the readers with
// cell_size_check too, as the writer always does.
func openConns(ctx context.Context, path, syncMode string, empty, checkReads bool, wp, rp **sql.DB) error {
	busy := fmt.Sprintf("busy_timeout(%d)", BusyTimeout.Milliseconds())
	syncPragma := "synchronous(" + syncMode + ")"
	// cell_size_check makes SQLite check each b-tree page as it reads it
	// from the disk, so that a damaged page is refused (SQLITE_CORRUPT)
	// before anything is written on top of it.
	w, err := sql.Open(driverName, dsn(path,
		[]string{busy, syncPragma, "secure_delete(ON)", "foreign_keys(ON)", "cell_size_check(ON)", cacheSize},
		url.Values{"_txlock": {"immediate"}}))
	if err != nil {
		return err
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	*wp = w
	if empty {
		// A new file is made with auto_vacuum=INCREMENTAL, which can be
		// set only before its first table, so that Sweep can give freed
		// pages back (incrementalVacuum). A file made before cairn set it
		// keeps its free pages for reuse until a VACUUM (see the package
		// documentation); the pragma is not even asked there, as it would
		// wait for another connection's write lock.
		if _, err := w.ExecContext(ctx, "PRAGMA auto_vacuum = INCREMENTAL"); err != nil {
			return fmt.Errorf("auto_vacuum: %w", err)
		}
	}
	if err := walMode(ctx, w); err != nil {
		return fmt.Errorf("journal_mode WAL: %w", err)
	}
	if err := migrate(ctx, w); err != nil {
		return err
	}
	rps := []string{busy, syncPragma, "query_only(ON)", cacheSize}
	if checkReads {
		rps = append(rps, "cell_size_check(ON)")
	}
	r, err := sql.Open(driverName, dsn(path, rps, nil))
	if err != nil {
		return err
	}
	r.SetMaxOpenConns(readers)
	r.SetMaxIdleConns(readers)
	*rp = r
	if err := r.PingContext(ctx); err != nil {
		return err
	}
	return nil
}

// Close closes the store's connections. It is safe to call twice; every
// other method returns cairn.ErrClosed afterwards.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.guard.Close()
		s.closeErr = s.closeDBs()
	})
	return s.closeErr
}

func (s *Store) closeDBs() error {
	var errs []error
	for _, st := range []*sql.Stmt{s.head, s.insert, s.index, s.advance, s.ranked} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	return closeConns(s.path, errs, s.r, s.w)
}

// closeConns closes the readers r, then the writer w (either may be nil),
// and returns their errors and errs joined, for the file at path. Readers
// first: the writer, closing last, checkpoints the WAL into the database
// and removes it when no other connection uses the file.
func closeConns(path string, errs []error, r, w *sql.DB) error {
	for _, db := range []*sql.DB{r, w} {
		if db != nil {
			errs = append(errs, db.Close())
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close sqlite %s: %w", path, err)
	}
	return nil
}

// fail wraps err for the operation op on session id, translating SQLite's
// and database/sql's errors into cairn's sentinels (see classify). Once
// SQLite has said that the file is damaged, the store writes nothing more
// to it.
func (s *Store) fail(op, id string, err error) error {
	if err == nil {
		return nil
	}
	if s.guard.Closed() && !isSentinel(err) {
		err = cairn.ErrClosed
	}
	s.damage.noteFile(err)
	err = s.classify(err)
	if id == "" {
		return fmt.Errorf("%s: %w", op, err)
	}
	return fmt.Errorf("%s %s: %w", op, id, err)
}

func isSentinel(err error) bool {
	for _, s := range []error{cairn.ErrNotFound, cairn.ErrExists, cairn.ErrConflict, cairn.ErrInvalidID,
		cairn.ErrTooLarge, cairn.ErrInvalidEvent, cairn.ErrClosed, cairn.ErrDamaged} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// writeTx runs fn in an immediate transaction on the writer connection and
// commits it if fn returns nil. Nothing runs once the file is known to be
// damaged.
func (s *Store) writeTx(ctx context.Context, fn func(*sql.Tx) error) error {
	if err := s.fileWritable(); err != nil {
		return err
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// expired reports whether a session with the stored expiry exp has expired
// at now.
func expired(exp int64, now time.Time) bool {
	return driver.Expired(unixnano.Time(exp), now)
}

// walMode switches the database to WAL. A new file starts in
// rollback-journal mode, where the switch needs the file's exclusive lock;
// SQLite answers SQLITE_BUSY at once, without waiting for the busy
// timeout, when another connection holds the shared lock meanwhile (it
// would deadlock otherwise). So when several processes open a new file at
// the same moment, all but one would fail: the switch is tried again, for
// up to BusyTimeout. Once any process has switched the file (the mode is
// kept in the file), the pragma only reads it.
func walMode(ctx context.Context, db *sql.DB) error {
	deadline := time.Now().Add(BusyTimeout)
	delay := time.Millisecond
	for {
		var mode string
		err := db.QueryRowContext(ctx, "PRAGMA journal_mode=WAL").Scan(&mode)
		if err == nil || !busy(err) || time.Now().After(deadline) {
			return err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		delay = min(2*delay, 50*time.Millisecond)
	}
}
