package sqlite

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	sqlite "modernc.org/sqlite"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
)

// SQLite's primary result codes that the store tells apart. An extended
// code (Error.Code) holds its primary code in its low byte.
const (
	codeBusy     = 5
	codeLocked   = 6
	codeCorrupt  = 11
	codeNotADB   = 26
	constraintPK = 1555 // SQLITE_CONSTRAINT_PRIMARYKEY
	constraintUQ = 2067 // SQLITE_CONSTRAINT_UNIQUE
)

// sqliteCode returns the extended result code of a SQLite error in err's
// chain, or 0.
func sqliteCode(err error) int {
	if se, ok := errors.AsType[*sqlite.Error](err); ok {
		return se.Code()
	}
	return 0
}

// codeName returns the name of a SQLite result code, such as
// SQLITE_CORRUPT or SQLITE_IOERR_WRITE, or "" for a code it does not know.
func codeName(code int) string {
	for _, c := range []int{code, code & 0xff} {
		if s, ok := sqlite.ErrorCodeString[c]; ok {
			if i, j := strings.LastIndex(s, "("), strings.LastIndex(s, ")"); i >= 0 && j > i {
				return s[i+1 : j]
			}
		}
	}
	return ""
}

// describe is err's message with its SQLite code's name.
func describe(err error) string {
	if name := codeName(sqliteCode(err)); name != "" && !strings.Contains(err.Error(), name) {
		return err.Error() + " (" + name + ")"
	}
	return err.Error()
}

// corrupt reports whether err is SQLite saying the file is damaged:
// SQLITE_CORRUPT (a page that does not hold what it should) or
// SQLITE_NOTADB (a header that is not SQLite's).
func corrupt(err error) bool {
	c := sqliteCode(err) & 0xff
	return c == codeCorrupt || c == codeNotADB
}

// busy reports whether err is SQLite giving up on a lock that another
// connection held past BusyTimeout.
func busy(err error) bool {
	c := sqliteCode(err) & 0xff
	return c == codeBusy || c == codeLocked
}

// classify translates SQLite's errors into cairn's sentinels, keeping
// SQLite's own message, which names the code (SQLITE_FULL, SQLITE_IOERR, …):
//
//   - SQLITE_BUSY and SQLITE_LOCKED, after BusyTimeout: cairn.ErrUnavailable,
//     an outage (another process held the file too long).
//   - SQLITE_CORRUPT and SQLITE_NOTADB: cairn.ErrDamaged.
//   - a violated primary key: cairn.ErrConflict (another writer took the
//     seq; the immediate transactions make it unlikely).
//
// Every other error (a full disk, an I/O error, a permission refused, a
// read-only file) is returned as SQLite reported it: none of them is an
// outage, so cairn.IsUnavailable is false for them.
func (s *Store) classify(err error) error { return classifyAt(s.path, err) }

// classifyAt is classify for the database file at path.
func classifyAt(path string, err error) error {
	code := sqliteCode(err)
	if code == 0 {
		return err
	}
	if name := codeName(code); name != "" && !strings.Contains(err.Error(), name) {
		err = fmt.Errorf("%w (%s)", err, name)
	}
	switch {
	case busy(err):
		return fmt.Errorf("%w: %w", cairn.ErrUnavailable, err)
	case corrupt(err):
		return &fileDamage{path: path, err: err}
	case code == constraintPK || code == constraintUQ:
		return fmt.Errorf("%w: %w", cairn.ErrConflict, err)
	}
	return err
}

// fileDamage is SQLite saying the database file is damaged. It wraps
// cairn.ErrDamaged and SQLite's error.
type fileDamage struct {
	path string
	err  error
}

func (e *fileDamage) Error() string {
	return "the database file " + e.path + " is damaged: " + e.err.Error()
}

func (e *fileDamage) Unwrap() []error { return []error{cairn.ErrDamaged, e.err} }

// damage is what a Store knows to be damaged: the database file as a
// whole (after SQLite said so to the writer) and sessions whose events
// failed their checks. Nothing is written to what it holds. It lasts as
// long as the Store; another process finds the same damage when it reads
// the same data, and Check finds all of it.
type damage struct {
	mu       sync.Mutex
	file     error                           // the file is damaged: no more writes
	sessions map[string]*driver.DamagedError // damaged sessions, by ID
}

// noteFile records that the store met a damaged file, if err says so.
func (d *damage) noteFile(err error) {
	if corrupt(err) {
		d.setFile(err)
	}
}

// setFile records that the file is damaged, as err says.
func (d *damage) setFile(err error) {
	d.mu.Lock()
	if d.file == nil {
		d.file = err
	}
	d.mu.Unlock()
}

// note records a damaged session.
func (d *damage) note(e *driver.DamagedError) {
	d.mu.Lock()
	if d.sessions == nil {
		d.sessions = map[string]*driver.DamagedError{}
	}
	d.sessions[e.Session] = e
	d.mu.Unlock()
}

// forget drops a session deleted or created again.
func (d *damage) forget(id string) {
	d.mu.Lock()
	delete(d.sessions, id)
	d.mu.Unlock()
}

// of returns the damage known of session id, nil if none.
func (d *damage) of(id string) *driver.DamagedError {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.sessions[id]
}

// ids returns the IDs of the sessions known to be damaged.
func (d *damage) ids() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]string, 0, len(d.sessions))
	for id := range d.sessions {
		out = append(out, id)
	}
	return out
}

// fileWritable returns an error wrapping cairn.ErrDamaged once the file
// is known to be damaged.
func (s *Store) fileWritable() error {
	s.damage.mu.Lock()
	fileErr := s.damage.file
	s.damage.mu.Unlock()
	if fileErr != nil {
		return &fileDamage{path: s.path, err: fmt.Errorf("%w; this store writes nothing more to it", fileErr)}
	}
	return nil
}

// writable is fileWritable, and the *driver.DamagedError of session id
// when the session is known to be damaged.
func (s *Store) writable(id string) error {
	if err := s.fileWritable(); err != nil {
		return err
	}
	if e := s.damage.of(id); e != nil {
		return e
	}
	return nil
}
