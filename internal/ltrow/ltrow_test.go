package ltrow

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/unixnano"
	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/longterm/ltdriver"
)

// fill sets each scan destination to its column's value, as a row would.
func fill(t *testing.T, dest []any, cols []any) {
	t.Helper()
	if len(dest) != len(cols) {
		t.Fatalf("%d destinations, want %d", len(dest), len(cols))
	}
	for i, c := range cols {
		reflect.ValueOf(dest[i]).Elem().Set(reflect.ValueOf(c))
	}
}

func TestRow(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var r Row
	var text string
	var id int64
	fill(t, r.Dest(&text, &id), []any{int64(7), "a/b", "k", `{"x":1}`, "hello", `{"l":"v"}`,
		ltdriver.EncodeVector([]float32{1, 2}), "m", "s1", int64(3), int64(2), unixnano.Of(at), unixnano.Of(at), int64(0)})
	it, err := r.Item(text)
	if err != nil {
		t.Fatal(err)
	}
	want := longterm.Item{Namespace: "a/b", Key: "k", Value: []byte(`{"x":1}`), Text: "hello",
		Labels: map[string]string{"l": "v"}, Vector: []float32{1, 2}, VectorModel: "m",
		Source: longterm.Source{Session: "s1", Seq: 3}, Version: 2, CreatedAt: at, UpdatedAt: at}
	if id != 7 || !reflect.DeepEqual(it, want) {
		t.Errorf("id %d, item %+v; want 7, %+v", id, it, want)
	}
}

func TestRowBadLabels(t *testing.T) {
	var r Row
	var text string
	fill(t, r.Dest(&text), []any{"a", "k", `{}`, "", `{`, []byte(nil), "", "", int64(0), int64(1), int64(0), int64(0), int64(0)})
	if _, err := r.Item(text); err == nil {
		t.Error("labels that are not JSON: no error")
	}
}

func TestLabels(t *testing.T) {
	for _, c := range []struct {
		l    map[string]string
		want string
	}{
		{nil, "{}"},
		{map[string]string{}, "{}"},
		{map[string]string{"b": "2", "a": "1"}, `{"a":"1","b":"2"}`},
	} {
		if got, err := Labels(c.l); err != nil || got != c.want {
			t.Errorf("Labels(%v) = %q, %v; want %q", c.l, got, err, c.want)
		}
	}
}

// fakeRows are rows of one int64 column each, and an error after them.
type fakeRows struct {
	vals []int64
	at   int
	err  error
}

func (f *fakeRows) Next() bool { f.at++; return f.at <= len(f.vals) }
func (f *fakeRows) Err() error { return f.err }
func (f *fakeRows) Scan(dest ...any) error {
	for _, d := range dest {
		*d.(*int64) = f.vals[f.at-1]
	}
	return nil
}

// readKey reads a row as an item whose version is the row's value.
func readKey(sc Scanner, extra ...any) (longterm.Item, error) {
	var v int64
	if err := sc.Scan(append(extra, &v)...); err != nil {
		return longterm.Item{}, err
	}
	if v < 0 {
		return longterm.Item{}, errors.New("negative")
	}
	return longterm.Item{Version: v}, nil
}

func TestItems(t *testing.T) {
	items, err := Items(&fakeRows{vals: []int64{1, 2}}, readKey)
	if err != nil || len(items) != 2 || items[0].Version != 1 || items[1].Version != 2 {
		t.Errorf("Items = %+v, %v; want versions 1 and 2", items, err)
	}
	if _, err := Items(&fakeRows{vals: []int64{1, -1}}, readKey); err == nil {
		t.Error("Items with a bad row: no error")
	}
	if _, err := Items(&fakeRows{err: errors.New("x")}, readKey); err == nil {
		t.Error("Items with rows that fail: no error")
	}
}

func TestByID(t *testing.T) {
	byID, err := ByID(&fakeRows{vals: []int64{4, 5}}, readKey)
	if err != nil || len(byID) != 2 || byID[4].Version != 4 || byID[5].Version != 5 {
		t.Errorf("ByID = %+v, %v; want items 4 and 5", byID, err)
	}
	if _, err := ByID(&fakeRows{vals: []int64{-1}}, readKey); err == nil {
		t.Error("ByID with a bad row: no error")
	}
	if _, err := ByID(&fakeRows{err: errors.New("x")}, readKey); err == nil {
		t.Error("ByID with rows that fail: no error")
	}
}

// tableRows are rows of any columns, filled as fill does.
type tableRows struct {
	t    *testing.T
	rows [][]any
	at   int
}

func (r *tableRows) Next() bool             { r.at++; return r.at <= len(r.rows) }
func (r *tableRows) Err() error             { return nil }
func (r *tableRows) Scan(dest ...any) error { fill(r.t, dest, r.rows[r.at-1]); return nil }

func TestHits(t *testing.T) {
	got, err := Hits(&tableRows{t: t, rows: [][]any{{int64(1), "a", "k1", 2.5}, {int64(2), "b", "k2", 1.5}}}, true)
	want := []ltdriver.Hit{{Namespace: "a", Key: "k1", Text: 2.5, Ref: int64(1)}, {Namespace: "b", Key: "k2", Text: 1.5, Ref: int64(2)}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Hits(scored) = %+v, %v; want %+v", got, err, want)
	}
	got, err = Hits(&tableRows{t: t, rows: [][]any{{int64(3), "a", "k3"}}}, false)
	want = []ltdriver.Hit{{Namespace: "a", Key: "k3", Ref: int64(3)}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Hits = %+v, %v; want %+v", got, err, want)
	}
}

func TestVectorHits(t *testing.T) {
	rows := &tableRows{t: t, rows: [][]any{
		{int64(1), "a", "far", ltdriver.EncodeVector([]float32{0, 1})},
		{int64(2), "a", "near", ltdriver.EncodeVector([]float32{1, 0})},
		{int64(3), "a", "short", ltdriver.EncodeVector([]float32{1})},
	}}
	got, err := VectorHits[[]byte](rows, ltdriver.Search{Vector: []float32{1, 0}, Candidates: 1})
	if err != nil || len(got) != 1 || got[0].Key != "near" || got[0].Ref != int64(2) || got[0].Vector <= 0.99 {
		t.Errorf("VectorHits = %+v, %v; want near (2) alone, about 1", got, err)
	}
}

func TestSkipNamespaces(t *testing.T) {
	noRows := errors.New("no rows")
	paths := []string{"a", "b", "c"} // each namespace's path is its name
	first := func(op, pos, hi string) (string, error) {
		for _, p := range paths {
			if (p > pos || op == ">=" && p == pos) && p < hi {
				return p, nil
			}
		}
		return "", noRows
	}
	page, err := SkipNamespaces(longterm.NamespaceOptions{Limit: 2}, noRows, first)
	if err != nil || !reflect.DeepEqual(page.Namespaces, []string{"a", "b"}) || page.Next != "b" {
		t.Errorf("SkipNamespaces = %+v, %v; want a, b and next b", page, err)
	}
	fail := errors.New("fail")
	_, err = SkipNamespaces(longterm.NamespaceOptions{Limit: 2}, noRows, func(string, string, string) (string, error) { return "", fail })
	if !errors.Is(err, fail) {
		t.Errorf("SkipNamespaces with a failing query: %v, want %v", err, fail)
	}
}
