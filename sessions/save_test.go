package sessions_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/sessions"
	"github.com/cairnhq/cairn/store/memory"
)

// longMemory is a cairn document of n events (more than one append) and
// its memory.
func longMemory(t *testing.T, id string, n int) ([]byte, *cairn.Memory) {
	t.Helper()
	var m cairn.Memory
	for i := range n / 2 {
		_, err := m.Add(cairn.MustEvent(cairn.KindMessageUser, "r", cairn.MessageUser{Parts: []cairn.Part{{Type: "text", Text: fmt.Sprint("q", i)}}}),
			cairn.MustEvent(cairn.KindModelResponse, "r", cairn.ModelResponse{Text: fmt.Sprint("a", i), FinishReason: "stop"}))
		if err != nil {
			t.Fatal(err)
		}
	}
	m.Session = &cairn.SessionMeta{ID: id}
	data, err := m.DumpJSON()
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := sessions.Import(data, sessions.Cairn, sessions.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return data, got
}

func newStore(t *testing.T) cairn.Store {
	t.Helper()
	s, err := memory.New(cairn.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// partial writes what a killed import of data leaves: the session with its
// mark and its first k events.
func partial(t *testing.T, s cairn.Store, data []byte, m *cairn.Memory, k int) {
	t.Helper()
	partialLabelled(t, s, data, m, k, map[string]string{sessions.ImportedLabel: "true"})
}

// partialLabelled is partial with the labels of some cairn's import
// beside the import's mark: an earlier cairn's had no ImportedLabel.
func partialLabelled(t *testing.T, s cairn.Store, data []byte, m *cairn.Memory, k int, labels map[string]string) {
	t.Helper()
	mark := sessions.NewImportMark(m.Session.ID, m.Len(), data)
	ctx := t.Context()
	labels = maps.Clone(labels)
	labels[sessions.ImportLabel] = mark.String()
	if err := s.Create(ctx, cairn.SessionMeta{ID: mark.ID, Labels: labels}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < k; i += cairn.DefaultMaxAppendEvents {
		if err := s.Append(ctx, mark.ID, int64(i), m.Events()[i:min(i+cairn.DefaultMaxAppendEvents, k)]...); err != nil {
			t.Fatal(err)
		}
	}
}

func info(t *testing.T, s cairn.Store, id string) cairn.SessionInfo {
	t.Helper()
	rec, err := s.Load(t.Context(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	return rec.Info
}

func TestSave(t *testing.T) {
	ctx := t.Context()
	data, m := longMemory(t, "s1", 2500)
	s := newStore(t)
	if n, err := sessions.Save(ctx, s, *m.Session, m, data, nil); err != nil || n != 0 {
		t.Fatalf("Save = %d, %v", n, err)
	}
	got := info(t, s, "s1")
	if _, ok := sessions.Incomplete(got); ok || got.LastSeq != 2500 {
		t.Fatalf("after Save: %+v, want 2500 events and not incomplete", got)
	}
	if mark, ok := sessions.ParseImportMark(got.Labels[sessions.ImportLabel]); !ok || mark.Events != 2500 || mark.ID != "s1" {
		t.Fatalf("label %q", got.Labels[sessions.ImportLabel])
	}
	_, err := sessions.Save(ctx, s, *m.Session, m, data, nil)
	if !errors.Is(err, cairn.ErrExists) {
		t.Fatalf("Save of a finished import again: %v, want ErrExists", err)
	}
}

func TestSave_FinishesAKilledImport(t *testing.T) {
	ctx := t.Context()
	data, m := longMemory(t, "s1", 2500)
	s := newStore(t)
	partial(t, s, data, m, 1000)
	if mark, ok := sessions.Incomplete(info(t, s, "s1")); !ok || mark.Events != 2500 {
		t.Fatalf("a partial import is not Incomplete: %+v", mark)
	}
	n, err := sessions.Save(ctx, s, *m.Session, m, data, nil)
	if err != nil || n != 1000 {
		t.Fatalf("Save = %d, %v; want it to go on after 1000", n, err)
	}
	rec, err := s.Load(ctx, "s1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Events) != 2500 {
		t.Fatalf("%d events, want 2500", len(rec.Events))
	}
	for i, e := range rec.Events {
		if w := m.Event(i); e.Seq != w.Seq || string(e.Data) != string(w.Data) {
			t.Fatalf("event %d: %+v, want %+v", i, e, w)
		}
	}
}

func TestSave_RefusesWhatItCannotFinish(t *testing.T) {
	ctx := t.Context()
	data, m := longMemory(t, "s1", 2500)
	other, om := longMemory(t, "s1", 2400)
	s := newStore(t)
	partial(t, s, other, om, 1000)
	_, err := sessions.Save(ctx, s, *m.Session, m, data, nil)
	if !errors.Is(err, cairn.ErrExists) || !strings.Contains(err.Error(), "incomplete import of another file") {
		t.Fatalf("Save over another file's partial import: %v", err)
	}

	s = newStore(t)
	mark := sessions.NewImportMark("s1", m.Len(), data)
	if err := s.Create(ctx, cairn.SessionMeta{ID: "s1", Labels: map[string]string{sessions.ImportLabel: mark.String()}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "s1", 0, om.Events()[:1]...); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "s1", 1, cairn.Event{V: 1, Seq: 2, At: time.Now().UTC(), Kind: cairn.KindMessageSystem, Data: []byte(`{"text":"x"}`)}); err != nil {
		t.Fatal(err)
	}
	_, err = sessions.Save(ctx, s, *m.Session, m, data, nil)
	if !errors.Is(err, cairn.ErrExists) || !strings.Contains(err.Error(), "not the file's first ones") {
		t.Fatalf("Save over a partial import with other events: %v", err)
	}

	s = newStore(t)
	if err := s.Create(ctx, cairn.SessionMeta{ID: "s1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := sessions.Save(ctx, s, *m.Session, m, data, nil); !errors.Is(err, cairn.ErrExists) {
		t.Fatalf("Save over a session that is no import: %v", err)
	}
	if got := info(t, s, "s1"); got.LastSeq != 0 {
		t.Fatalf("a refused Save wrote %d events", got.LastSeq)
	}
}

// TestSave_OpenAIRebuilt: an openai import makes up its run ID and times,
// so finishing one rebuilds the events with those of the stored start.
func TestSave_OpenAIRebuilt(t *testing.T) {
	ctx := t.Context()
	var b strings.Builder
	b.WriteString("[")
	for i := range 1500 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"role":"user","content":"q%d"},{"role":"assistant","content":"a%d"}`, i, i)
	}
	b.WriteString("]")
	data := []byte(b.String())
	first, _, err := sessions.Import(data, sessions.OpenAI, sessions.ImportOptions{ID: "o1"})
	if err != nil {
		t.Fatal(err)
	}
	s := newStore(t)
	partial(t, s, data, first, 1200)
	again, rep, err := sessions.Import(data, sessions.OpenAI, sessions.ImportOptions{ID: "o1"})
	if err != nil {
		t.Fatal(err)
	}
	rebuild := func(run string, at time.Time) (*cairn.Memory, error) {
		m, _, err := sessions.Import(data, rep.Format, sessions.ImportOptions{ID: "o1", RunID: run, Now: func() time.Time { return at }})
		return m, err
	}
	if _, err := sessions.Save(ctx, s, *again.Session, again, data, nil); !errors.Is(err, cairn.ErrExists) {
		t.Fatalf("without rebuild the made-up run differs: %v, want ErrExists", err)
	}
	n, err := sessions.Save(ctx, s, *again.Session, again, data, rebuild)
	if err != nil || n != 1200 {
		t.Fatalf("Save with rebuild = %d, %v", n, err)
	}
	if got := info(t, s, "o1"); got.LastSeq != int64(first.Len()) {
		t.Fatalf("%d events, want %d", got.LastSeq, first.Len())
	}
}

// hookStore runs after once, right after the first List, and beforeDelete
// before each Delete.
type hookStore struct {
	cairn.Store
	after        func()
	beforeDelete func()
}

func (h *hookStore) Delete(ctx context.Context, id string) error {
	if h.beforeDelete != nil {
		h.beforeDelete()
	}
	return h.Store.Delete(ctx, id)
}

func (h *hookStore) List(ctx context.Context, o cairn.ListOptions) (*cairn.ListPage, error) {
	p, err := h.Store.List(ctx, o)
	if h.after != nil {
		h.after()
		h.after = nil
	}
	return p, err
}

func TestSweepImports(t *testing.T) {
	ctx := t.Context()
	data, m := longMemory(t, "done", 2500)
	s := newStore(t)
	if _, err := sessions.Save(ctx, s, *m.Session, m, data, nil); err != nil {
		t.Fatal(err)
	}
	data2, m2 := longMemory(t, "half", 2500)
	partial(t, s, data2, m2, 1000)
	if n, _, err := sessions.SweepImports(ctx, s, false, true); err != nil || n != 1 {
		t.Fatalf("SweepImports, dry run = %d, %v; want 1 counted", n, err)
	}
	if got := info(t, s, "half"); got.LastSeq != 1000 {
		t.Fatalf("a dry run touched the incomplete import: %+v", got)
	}
	removed, busy, err := sessions.SweepImports(ctx, s, false, false)
	if err != nil || removed != 1 || busy != 0 {
		t.Fatalf("SweepImports = %d, %d, %v; want 1 removed", removed, busy, err)
	}
	if _, err := s.Load(ctx, "half", 0); !errors.Is(err, cairn.ErrNotFound) {
		t.Fatalf("the incomplete import is still there: %v", err)
	}
	if got := info(t, s, "done"); got.LastSeq != 2500 {
		t.Fatalf("a finished import was touched: %+v", got)
	}

	// An import that appends between the sweep's List and its fence is
	// left alone, and goes on to finish.
	partial(t, s, data2, m2, 1000)
	hook := &hookStore{Store: s, after: func() {
		if err := s.Append(ctx, "half", 1000, m2.Events()[1000:2000]...); err != nil {
			t.Error(err)
		}
	}}
	removed, busy, err = sessions.SweepImports(ctx, hook, false, false)
	if err != nil || removed != 0 || busy != 1 {
		t.Fatalf("SweepImports while an import writes = %d, %d, %v; want 1 busy", removed, busy, err)
	}
	if n, err := sessions.Save(ctx, s, *m2.Session, m2, data2, nil); err != nil || n != 2000 {
		t.Fatalf("the import goes on: %d, %v", n, err)
	}

	// An import that appends after the fence fails (a conflict) instead
	// of finishing a session about to be deleted, and after the delete it
	// finds nothing.
	if err := s.Delete(ctx, "half"); err != nil {
		t.Fatal(err)
	}
	partial(t, s, data2, m2, 1000)
	fenced := &hookStore{Store: s, beforeDelete: func() {
		if err := s.Append(ctx, "half", 1000, m2.Events()[1000:2000]...); !errors.Is(err, cairn.ErrConflict) {
			t.Errorf("an append between the fence and the delete: %v, want ErrConflict", err)
		}
	}}
	if removed, _, err := sessions.SweepImports(ctx, fenced, false, false); err != nil || removed != 1 {
		t.Fatalf("SweepImports = %d, %v", removed, err)
	}
	if err := s.Append(ctx, "half", 1000, m2.Events()[1000:2000]...); !errors.Is(err, cairn.ErrNotFound) {
		t.Fatalf("an append after the sweep: %v, want ErrNotFound", err)
	}

	// The incomplete import of an earlier cairn, without ImportedLabel:
	// found only when asked to read every session.
	partialLabelled(t, s, data2, m2, 1000, map[string]string{})
	if removed, _, err := sessions.SweepImports(ctx, s, false, false); err != nil || removed != 0 {
		t.Fatalf("SweepImports of the labelled imports = %d, %v; want none removed", removed, err)
	}
	if removed, _, err := sessions.SweepImports(ctx, s, true, false); err != nil || removed != 1 {
		t.Fatalf("SweepImports of every session = %d, %v; want 1 removed", removed, err)
	}
}

// outageStore answers ErrUnavailable to the Append that starts at seq
// failAt, without writing it.
type outageStore struct {
	cairn.Store
	failAt int64
}

func (o *outageStore) Append(ctx context.Context, id string, expectSeq int64, events ...cairn.Event) error {
	if expectSeq == o.failAt {
		return fmt.Errorf("%w: connection reset by peer", cairn.ErrUnavailable)
	}
	return o.Store.Append(ctx, id, expectSeq, events...)
}

// TestSave_OutageKeepsWhatIsWritten: an outage half way (the store did not
// answer an append, which may have landed) leaves the import incomplete
// for the next Save to finish, instead of erasing it; so does an outage
// while finishing a killed import.
func TestSave_OutageKeepsWhatIsWritten(t *testing.T) {
	ctx := t.Context()
	data, m := longMemory(t, "s1", 2500)
	s := newStore(t)
	cut := &outageStore{Store: s, failAt: 1000}
	_, err := sessions.Save(ctx, cut, *m.Session, m, data, nil)
	var pe *sessions.PartialError
	if !errors.As(err, &pe) || !cairn.IsUnavailable(err) || pe.Written != 1000 {
		t.Fatalf("Save through an outage at 1000 = %v, want a *PartialError at 1000 that is an outage", err)
	}
	if mark, ok := sessions.Incomplete(info(t, s, "s1")); !ok || info(t, s, "s1").LastSeq != 1000 || mark.Events != 2500 {
		t.Fatalf("after the outage: %+v, want an incomplete import of 1000 events", info(t, s, "s1"))
	}
	cut.failAt = 2000
	if _, err := sessions.Save(ctx, cut, *m.Session, m, data, nil); !errors.As(err, &pe) || pe.Written != 2000 {
		t.Fatalf("Save again through an outage at 2000 = %v, want a *PartialError at 2000", err)
	}
	if n, err := sessions.Save(ctx, s, *m.Session, m, data, nil); err != nil || n != 2000 {
		t.Fatalf("Save once the store answers = %d, %v; want it to go on after 2000", n, err)
	}
	if got := info(t, s, "s1"); got.LastSeq != 2500 {
		t.Fatalf("after the last Save: %+v, want 2500 events", got)
	}
}
