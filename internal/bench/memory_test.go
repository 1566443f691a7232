package bench

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/internal/testing/testenv"
	"github.com/cairnhq/cairn/longterm"
)

// runMemory runs the memory benchmark at 100 and 300 items on the store at
// u and checks what every result must hold.
func runMemory(t *testing.T, u, prefix string, refill bool) *MemoryReport {
	t.Helper()
	rep, err := RunMemory(t.Context(), MemoryOptions{Stores: []string{u}, Items: []int{100, 300}, Reps: 20, Refill: refill, prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 2 {
		t.Fatalf("%d results, want 2", len(rep.Results))
	}
	for _, r := range rep.Results {
		if r.Error != "" {
			t.Fatalf("%s, %d items: %s", r.Store, r.Items, r.Error)
		}
		for name, l := range map[string]Latency{"put": r.Put, "append": r.Append, "search_all": r.SearchAll, "search_user": r.SearchUser} {
			if l.Appends != 20 || l.P50MS <= 0 || l.P99MS < l.P50MS {
				t.Errorf("%d items, %s: %+v, want 20 timings with p50 > 0 and p99 ≥ p50", r.Items, name, l)
			}
		}
		if r.Found == 0 {
			t.Errorf("%d items: the searches found nothing", r.Items)
		}
	}
	if len(rep.Ratios) != 1 || rep.Ratios[0].From != 100 || rep.Ratios[0].To != 300 || rep.Ratios[0].SearchAll <= 0 || rep.Ratios[0].PutOverAppend <= 0 {
		t.Errorf("ratios %+v, want one, 100 → 300 items, with positive ratios", rep.Ratios)
	}
	return rep
}

// countItems returns how many items the store at u holds under prefix.
func countItems(t *testing.T, u, prefix string) int {
	t.Helper()
	s, err := longterm.Open(t.Context(), u, longterm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	n := 0
	for next := ""; ; {
		page, err := s.List(t.Context(), longterm.ListOptions{Prefix: prefix, Cursor: next, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		n += len(page.Items)
		if page.Next == "" {
			return n
		}
		next = page.Next
	}
}

func TestRunMemory_SQLite(t *testing.T) {
	u := "sqlite://" + filepath.ToSlash(filepath.Join(t.TempDir(), "memory.db"))
	rep := runMemory(t, u, "", false)
	for _, r := range rep.Results {
		if r.Fill.Action != "filled" || r.Fill.Written != r.Items {
			t.Errorf("%d items: fill %+v, want filled", r.Items, r.Fill)
		}
		// The fill stays, and the timed puts are gone.
		if got := countItems(t, sizeURL(u, r.Items), r.Prefix); got != r.Items {
			t.Errorf("%s holds %d items after the run, want the %d of the fill", r.Prefix, got, r.Items)
		}
	}
	// A second run reuses the fills; --refill makes them again.
	for _, r := range runMemory(t, u, "", false).Results {
		if r.Fill.Action != "reused" {
			t.Errorf("second run, %d items: fill %+v, want reused", r.Items, r.Fill)
		}
	}
	for _, r := range runMemory(t, u, "", true).Results {
		if r.Fill.Action != "filled" {
			t.Errorf("refill, %d items: fill %+v, want filled", r.Items, r.Fill)
		}
		if got := countItems(t, sizeURL(u, r.Items), r.Prefix); got != r.Items {
			t.Errorf("after the refill %s holds %d items, want %d", r.Prefix, got, r.Items)
		}
	}
	var b bytes.Buffer
	if err := WriteMemoryTable(&b, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"search all p50", "sqlite    300", "sqlite: search at 300 items ÷ at 100: all ", "(target ≤ 3)", "put ÷ append "} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

func TestRunMemory_Postgres(t *testing.T) {
	u := testenv.URL(t, testenv.Postgres)
	prefix := "t" + strings.ToLower(testenv.RandHex(4))
	t.Cleanup(func() {
		for _, n := range []int{100, 300} {
			s, err := longterm.Open(context.WithoutCancel(t.Context()), sizeURL(u, n), longterm.Options{})
			if err != nil {
				t.Error(err)
				return
			}
			if _, err := s.DeleteNamespace(context.WithoutCancel(t.Context()), prefix); err != nil {
				t.Error(err)
			}
			s.Close()
		}
	})
	runMemory(t, u, prefix, false)
}

func TestSizeURL(t *testing.T) {
	for _, c := range [][2]string{
		{"sqlite:///tmp/m.db", "sqlite:///tmp/m-1000.db"},
		{"sqlite:memory.db?busy_timeout=5000", "sqlite:memory-1000.db?busy_timeout=5000"},
		{"sqlite:bench", "sqlite:bench-1000"},
		{"file:./runs", "file:./runs-1000"},
		{"memory:", "memory:"},
		{"postgres://h/db?sslmode=disable", "postgres://h/db?namespace=bench_memory_1000&sslmode=disable"},
		{"redis://h:6379/5?namespace=team", "redis://h:6379/5?namespace=team_memory_1000"},
	} {
		if got := sizeURL(c[0], 1000); got != c[1] {
			t.Errorf("sizeURL(%q) = %q, want %q", c[0], got, c[1])
		}
	}
}

func TestRunMemory_Refused(t *testing.T) {
	if _, err := RunMemory(t.Context(), MemoryOptions{Stores: []string{"memory:"}, Items: []int{50}}); err == nil || !strings.Contains(err.Error(), "50 items: measure at 100 or more") {
		t.Errorf("50 items: %v", err)
	}
	rep, err := RunMemory(t.Context(), MemoryOptions{Stores: []string{"nosuch://x"}, Items: []int{100}, Reps: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 1 || !strings.Contains(rep.Results[0].Error, "nosuch") {
		t.Errorf("an unknown scheme: %+v, want its error in the result", rep.Results)
	}
}
