//go:build linux || darwin

package file_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/file"
	"github.com/cairnhq/cairn/store/storetest"
)

// openIn opens a store on dir and closes it when the test ends.
func openIn(t testing.TB, dir string, opts cairn.StoreOptions) *file.Store {
	t.Helper()
	s, err := file.Open(t.Context(), dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	dir := storetest.PerTest(func(t *testing.T) string { return t.TempDir() })
	abilities := storetest.Abilities{Leases: true, Sweep: true, Check: true, Snapshots: true, Search: true,
		Envelopes: func(t *testing.T, s cairn.Store, id string) [][]byte {
			envs, err := file.StoredEnvelopes(s.(*file.Store), id)
			if err != nil {
				t.Fatal(err)
			}
			return envs
		},
		DeleteEvent: func(t *testing.T, s cairn.Store, id string, seq int64) {
			if err := file.DeleteEvent(s.(*file.Store), id, seq); err != nil {
				t.Fatal(err)
			}
		}}
	storetest.Run(t, abilities, func(t *testing.T, opts cairn.StoreOptions) cairn.Store {
		return openIn(t, dir(t), opts)
	})
}

func BenchmarkAppend(b *testing.B) {
	storetest.BenchmarkAppend(b, func(b *testing.B, opts cairn.StoreOptions) cairn.Store {
		return openIn(b, b.TempDir(), opts)
	})
}

// BenchmarkWriteSyncFloor measures the floor under BenchmarkAppend in the
// same run and folder kind: write ~1 KB at the end of a file and fsync it.
func BenchmarkWriteSyncFloor(b *testing.B) {
	f, err := os.Create(filepath.Join(b.TempDir(), "floor"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	line := append(bytes.Repeat([]byte{'x'}, 1023), '\n')
	durs := make([]time.Duration, 0, b.N)
	for b.Loop() {
		t0 := time.Now()
		if _, err := f.Write(line); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		durs = append(durs, time.Since(t0))
	}
	b.StopTimer()
	storetest.ReportPercentiles(b, durs)
}

// TestStore_DataAsGiven checks that event data comes back as it was
// appended less the white space outside its strings (as
// driver.AppendEnvelope writes it), escapes and all, whether or not it
// spans lines, which the log could not hold.
func TestStore_DataAsGiven(t *testing.T) {
	s := openIn(t, t.TempDir(), cairn.StoreOptions{})
	const id = "data"
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
		t.Fatal(err)
	}
	spaced := storetest.Custom(1, "x")
	spaced.Data = []byte(`{ "type" : "t.x",  "payload" : {"html":"<b>&amp;</b>", "esc":"\u00e9\n"} }`)
	multi := storetest.Custom(2, "x")
	multi.Data = []byte("{\n  \"type\": \"t.y\",\r\n  \"payload\": [1, 2]\n}")
	if err := s.Append(t.Context(), id, 0, spaced, multi); err != nil {
		t.Fatal(err)
	}
	rec, err := s.Load(t.Context(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(rec.Events[0].Data), `{"type":"t.x","payload":{"html":"<b>&amp;</b>","esc":"\u00e9\n"}}`; got != want {
		t.Errorf("data came back as %s, want %s", got, want)
	}
	if got, want := string(rec.Events[1].Data), `{"type":"t.y","payload":[1,2]}`; got != want {
		t.Errorf("multi-line data came back as %q, want %q", got, want)
	}
}

// TestStore_KeepsBusySessionsOpen checks that the sessions a store uses
// keep their files open once it has met more sessions than it keeps open:
// the ones closed are those used least recently, so a session appended to
// again and again opens its files once, however many others came before.
func TestStore_KeepsBusySessionsOpen(t *testing.T) {
	s := openIn(t, t.TempDir(), cairn.StoreOptions{})
	ctx := t.Context()
	appendTo := func(id string, seq int64) {
		t.Helper()
		if err := s.Append(ctx, id, seq-1, storetest.Custom(seq, "x")); err != nil {
			t.Fatal(err)
		}
	}
	// More sessions than the store keeps open, each used once.
	for i := range file.MaxOpenSessions + 16 {
		id := fmt.Sprintf("old-%03d", i)
		if err := s.Create(ctx, cairn.SessionMeta{ID: id}); err != nil {
			t.Fatal(err)
		}
		appendTo(id, 1)
	}
	// Then eight sessions, each appended to twenty times in turn.
	busy := make([]string, 8)
	for i := range busy {
		busy[i] = fmt.Sprintf("busy-%d", i)
		if err := s.Create(ctx, cairn.SessionMeta{ID: busy[i]}); err != nil {
			t.Fatal(err)
		}
	}
	before := file.Opens(s)
	for seq := int64(1); seq <= 20; seq++ {
		for _, id := range busy {
			appendTo(id, seq)
		}
	}
	if got := file.Opens(s) - before; got > int64(len(busy)) {
		t.Errorf("%d appends to %d sessions opened session files %d times, want at most once a session", 20*len(busy), len(busy), got)
	}
	// A session used long ago was closed, and still opens and loads.
	rec, err := s.Load(ctx, "old-000", 0)
	if err != nil || len(rec.Events) != 1 {
		t.Fatalf("Load(old-000) = %d events, %v; want 1", len(rec.Events), err)
	}
}
