package sessions

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/wire"
)

// ImportLabel is the label of a session written by an import: its value is
// "ID/EVENTS/SHA256", the session's ID, the number of events the import
// writes and the SHA-256 of the imported file, in hex. It stays when the
// import is done, as a record of where the session came from.
//
// An import writes a session in many appends (a store takes at most
// cairn.DefaultMaxAppendEvents events in one), so a process killed half way
// leaves the start of the session behind. Such a session is marked from its
// creation on: the import gives it the label ImportLabel, which says how
// many events the import writes, and until the session holds that many it
// is an incomplete import (Incomplete). The CLI lists it as
// StatusIncomplete, not as the status of its events; importing the same
// file again finishes it; `cairn sessions gc` (SweepImports) removes it.
const ImportLabel = "cairn.import"

// ImportedLabel is the label every session written by an import carries
// beside ImportLabel, always with the value "true", so that SweepImports
// finds them through the store's label index instead of reading every
// session (a label filter matches a value, and ImportLabel's differs for
// each import).
const ImportedLabel = "cairn.imported"

// StatusIncomplete is what the CLI lists as the status of an incomplete
// import: one still being written, or one whose process was killed.
const StatusIncomplete cairn.Status = "incomplete"

// ImportMark is what ImportLabel says.
type ImportMark struct {
	ID     string // the session the import writes
	Events int64  // how many events it writes
	SHA256 string // the imported file's SHA-256, in hex
}

// NewImportMark returns the mark of an import of data into session id as
// events events.
func NewImportMark(id string, events int, data []byte) ImportMark {
	sum := sha256.Sum256(data)
	return ImportMark{ID: id, Events: int64(events), SHA256: hex.EncodeToString(sum[:])}
}

// String returns the label's value.
func (m ImportMark) String() string { return fmt.Sprintf("%s/%d/%s", m.ID, m.Events, m.SHA256) }

// ParseImportMark reads a label's value; ok is false when it is not one.
func ParseImportMark(s string) (m ImportMark, ok bool) {
	parts := strings.Split(s, "/")
	if len(parts) != 3 {
		return m, false
	}
	n, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || n < 0 || cairn.ValidateID(parts[0]) != nil || len(parts[2]) != 2*sha256.Size {
		return m, false
	}
	return ImportMark{ID: parts[0], Events: n, SHA256: parts[2]}, true
}

// Incomplete reports whether info is a session that an import began and
// has not finished: it carries the import's mark for its own ID and holds
// fewer events than the import writes. (A fork or a copy under another ID
// keeps the label but is not an import.)
func Incomplete(info cairn.SessionInfo) (ImportMark, bool) {
	m, ok := ParseImportMark(info.Labels[ImportLabel])
	return m, ok && m.ID == info.ID && info.LastSeq < m.Events
}

// Save writes an imported memory to store as session meta.ID, marked as an
// import of data (see ImportLabel) until its last event is written. When
// the store already holds that session as an incomplete import of the same
// data, Save finishes it: it checks that the events stored are the first
// ones of the memory and appends the rest; rebuild, when not nil, rebuilds
// the memory with the run ID and time the stored events carry (an openai or
// checkpoint import makes those up). It reports how many events were there
// already. A session that exists otherwise is cairn.ErrExists. If an
// append fails, Save deletes what it wrote; what it cannot delete keeps
// its mark.
func Save(ctx context.Context, store cairn.Store, meta cairn.SessionMeta, m *cairn.Memory, data []byte,
	rebuild func(run string, at time.Time) (*cairn.Memory, error)) (resumed int, err error) {
	mark := NewImportMark(meta.ID, m.Len(), data)
	meta.Labels = maps.Clone(meta.Labels)
	if meta.Labels == nil {
		meta.Labels = map[string]string{}
	}
	meta.Labels[ImportLabel] = mark.String()
	meta.Labels[ImportedLabel] = "true"
	events := m.Events()
	from := 0
	err = store.Create(ctx, meta)
	if errors.Is(err, cairn.ErrExists) {
		from, events, err = resume(ctx, store, mark, events, rebuild)
	} else if err != nil {
		err = fmt.Errorf("create %s: %w", meta.ID, err)
	}
	if err != nil {
		return 0, err
	}
	for i := from; i < len(events); {
		end := min(i+cairn.DefaultMaxAppendEvents, len(events))
		err := store.Append(ctx, meta.ID, int64(i), events[i:end]...)
		if errors.Is(err, cairn.ErrConflict) {
			// Another import of the same file may be writing it too: go on
			// after what it wrote, if that is this file's.
			if n, ok := caughtUp(ctx, store, meta.ID, i, events); ok && n > i {
				i = n
				continue
			}
			return 0, &PartialError{ID: meta.ID, Written: i, Events: len(events), Err: fmt.Errorf("write %s: %w", meta.ID, err)}
		}
		if err != nil {
			err = fmt.Errorf("write %s: %w", meta.ID, err)
			if cairn.IsUnavailable(err) {
				// The append may have landed, and the store may be back
				// in a moment: keep what is written, for the next import
				// of the file to finish.
				return 0, &PartialError{ID: meta.ID, Written: i, Events: len(events), Err: err}
			}
			if derr := store.Delete(context.WithoutCancel(ctx), meta.ID); derr != nil && !errors.Is(derr, cairn.ErrNotFound) {
				return 0, &PartialError{ID: meta.ID, Written: i, Events: len(events), Err: err}
			}
			return 0, err
		}
		i = end
	}
	return from, nil
}

// caughtUp reports how many of events session id holds once it holds more
// than the first done, when they are all this import's.
func caughtUp(ctx context.Context, store cairn.Store, id string, done int, events []cairn.Event) (int, bool) {
	rec, err := store.Load(ctx, id, int64(done)+1)
	if err != nil || !samePrefix(rec.Events, events[done:]) {
		return 0, false
	}
	return done + len(rec.Events), true
}

// PartialError is a Save that stopped half way and left what it wrote: an
// append that another writer's got in the way of (ErrConflict: another
// import, or the last append of a killed one that the store still counts
// as pending), an append the store did not answer (an outage: it may have
// landed), or a failed append whose session could not be deleted. The
// session keeps its import mark (see ImportLabel).
type PartialError struct {
	ID      string
	Written int // events written
	Events  int // events the import writes
	Err     error
}

// Error says what was left and how to finish or remove it.
func (e *PartialError) Error() string {
	s := fmt.Sprintf("%v; session %s holds %d of its %d events and is marked as an incomplete import", e.Err, e.ID, e.Written, e.Events)
	if errors.Is(e.Err, cairn.ErrConflict) {
		s += " (another writer is appending to it, or a killed import's last append is still pending in the store)"
	}
	return s
}

// Unwrap returns the append's error.
func (e *PartialError) Unwrap() error { return e.Err }

// resume checks that the session mark.ID is an incomplete import of the
// same data whose events are the first of events, and returns where to go
// on from.
func resume(ctx context.Context, store cairn.Store, mark ImportMark, events []cairn.Event,
	rebuild func(string, time.Time) (*cairn.Memory, error)) (int, []cairn.Event, error) {
	exists := fmt.Errorf("create %s: %w", mark.ID, cairn.ErrExists)
	rec, err := store.Load(ctx, mark.ID, 0)
	if err != nil {
		if errors.Is(err, cairn.ErrNotFound) {
			return 0, nil, exists // deleted since: let the caller try again
		}
		return 0, nil, fmt.Errorf("load %s: %w", mark.ID, err)
	}
	old, ok := Incomplete(rec.Info)
	if !ok {
		return 0, nil, exists
	}
	if old != mark {
		return 0, nil, fmt.Errorf("%w: session %s is an incomplete import of another file (%d events, SHA-256 %s…); remove it with `cairn sessions gc` or `cairn sessions delete %s`",
			cairn.ErrExists, mark.ID, old.Events, old.SHA256[:12], mark.ID)
	}
	stored := rec.Events
	if !samePrefix(stored, events) && rebuild != nil && len(stored) > 0 {
		if v, err := stored[0].Decode(); err == nil {
			if rs, ok := v.(*cairn.RunStarted); ok {
				if m, err := rebuild(rs.RunID, stored[0].At); err == nil {
					events = m.Events()
				}
			}
		}
	}
	if !samePrefix(stored, events) {
		return 0, nil, fmt.Errorf("%w: session %s is an incomplete import of this file, but its %d events are not the file's first ones; remove it with `cairn sessions gc` or `cairn sessions delete %s`",
			cairn.ErrExists, mark.ID, len(stored), mark.ID)
	}
	return len(stored), events, nil
}

// samePrefix reports whether stored are the first events of events: the
// same envelope and the same data (compared canonically, as stores may
// keep JSON in their own spacing).
func samePrefix(stored, events []cairn.Event) bool {
	if len(stored) > len(events) {
		return false
	}
	for i, s := range stored {
		e := events[i]
		if s.V != e.V || s.Seq != e.Seq || !s.At.Equal(e.At) || s.Kind != e.Kind || s.Run != e.Run {
			return false
		}
		if !bytes.Equal(s.Data, e.Data) {
			a, err1 := wire.Canonical(s.Data)
			b, err2 := wire.Canonical(e.Data)
			if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
				return false
			}
		}
	}
	return true
}

// SweepImports removes the incomplete imports of store (see ImportLabel)
// and returns how many it removed and how many it left because they are
// being written. An import still running is stopped safely: before
// deleting a session SweepImports appends, at the last seq it saw, an
// event that marks the import abandoned, so that an importer that
// appended in the meantime makes that append fail (and the session is
// left alone, busy), and an importer that appends afterwards fails instead
// of finishing a session about to be deleted.
//
// It looks at the sessions labelled ImportedLabel. With all, it reads
// every session instead, for the incomplete imports of a cairn from before
// that label. With dryRun it counts the incomplete imports and removes
// nothing.
func SweepImports(ctx context.Context, store cairn.Store, all, dryRun bool) (removed, busy int, err error) {
	var found []cairn.SessionInfo
	opts := cairn.ListOptions{Labels: map[string]string{ImportedLabel: "true"}}
	if all {
		opts = cairn.ListOptions{}
	}
	for {
		page, err := store.List(ctx, opts)
		if err != nil {
			return 0, 0, fmt.Errorf("list sessions: %w", err)
		}
		for _, info := range page.Sessions {
			if _, ok := Incomplete(info); ok {
				found = append(found, info)
			}
		}
		if page.Next == "" {
			break
		}
		opts.Cursor = page.Next
	}
	if dryRun {
		return len(found), 0, nil
	}
	for _, info := range found {
		fence := cairn.MustEvent(cairn.KindCustom, "", cairn.Custom{Type: AbandonedType})
		fence.Seq = info.LastSeq + 1
		err := store.Append(ctx, info.ID, info.LastSeq, fence)
		switch {
		case errors.Is(err, cairn.ErrNotFound):
			continue
		case errors.Is(err, cairn.ErrConflict):
			busy++
			continue
		case err != nil:
			return removed, busy, fmt.Errorf("mark the incomplete import %s abandoned: %w", info.ID, err)
		}
		if err := store.Delete(ctx, info.ID); err != nil && !errors.Is(err, cairn.ErrNotFound) {
			return removed, busy, fmt.Errorf("remove the incomplete import %s: %w", info.ID, err)
		}
		removed++
	}
	return removed, busy, nil
}

// AbandonedType is the type of the custom event SweepImports appends to an
// incomplete import just before it deletes it.
const AbandonedType = "cairn.import_abandoned"

// Imported says what ImportInto wrote.
type Imported struct {
	ID     string        // the new session
	Memory *cairn.Memory // its events, as written
	Report *Report       // what the format could not carry or had to make up
	// Resumed is how many events an earlier import of the same document,
	// killed half way, had written; this one wrote the rest.
	Resumed int
}

// ImportInto imports a document in format f ("" to detect it) with Import
// and writes it to store with Save, as a new session whose ID is opts.ID,
// else the document's own, else a new random one. An earlier import of the
// same document that was killed half way is finished. A document that does
// not import is an *ImportError or a *cairn.MemoryLoadError, and nothing is
// written; a failed write is Save's error.
func ImportInto(ctx context.Context, store cairn.Store, data []byte, f Format, opts ImportOptions) (*Imported, error) {
	m, rep, err := Import(data, f, opts)
	if err != nil {
		return nil, err
	}
	meta := cairn.SessionMeta{}
	if m.Session != nil {
		meta = *m.Session
	}
	if opts.ID != "" {
		meta.ID = opts.ID
	}
	if meta.ID == "" {
		meta.ID = cairn.NewID()
	}
	rebuild := func(run string, at time.Time) (*cairn.Memory, error) {
		o := opts
		o.RunID, o.Now = run, func() time.Time { return at }
		m, _, err := Import(data, rep.Format, o)
		return m, err
	}
	done, err := Save(ctx, store, meta, m, data, rebuild)
	if err != nil {
		return nil, err
	}
	return &Imported{ID: meta.ID, Memory: m, Report: rep, Resumed: done}, nil
}

// NotImported reports whether err is ImportInto's (or Import's) refusal of
// a document that does not import, after which nothing was written.
func NotImported(err error) bool {
	_, ie := errors.AsType[*ImportError](err)
	_, le := errors.AsType[*cairn.MemoryLoadError](err)
	return ie || le
}
