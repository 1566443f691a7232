package bench

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/internal/testing/testenv"
)

// scaleOps are the operations a scale report times, in its order.
var scaleOps = []string{"list", "filter_status_common", "filter_status_rare", "filter_status_none", "filter_label",
	"page_20", "show", "show_missing", "prefix", "search", "delete"}

// runScale runs the scale benchmark at n sessions on the store at u, in
// namespaces whose names start with prefix, and returns its one result.
func runScale(t *testing.T, u string, n int, refill bool, prefix string) ScaleResult {
	t.Helper()
	rep, err := RunScale(t.Context(), ScaleOptions{Stores: []string{u}, Sessions: []int{n}, Refill: refill, Reps: 3, nsPrefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 1 {
		t.Fatalf("%d results, want 1", len(rep.Results))
	}
	res := rep.Results[0]
	if res.Error != "" {
		t.Fatalf("%s: %s", res.Store, res.Error)
	}
	return res
}

// checkScale checks that every operation was timed and answered as a store
// of n sessions answers, and that gc removed the expired sessions while the
// writer went on appending.
func checkScale(t *testing.T, res ScaleResult, n int, prefixServed bool) {
	t.Helper()
	if res.Sessions != n || res.Expired != newPlan(n, time.Now()).expired() || res.Expired < n/20 || res.Expired > n/6 {
		t.Errorf("%d sessions, %d expired; want %d, about a tenth of them expired", res.Sessions, res.Expired, n)
	}
	if len(res.Ops) != len(scaleOps) {
		t.Fatalf("%d operations timed, want %d: %+v", len(res.Ops), len(scaleOps), res.Ops)
	}
	p := newPlan(n, time.Now())
	count := func(match func(session) bool) int {
		c := 0
		for i := p.expired(); i < n; i++ {
			if match(p.sessionAt(i)) {
				c++
			}
		}
		return min(c, pageSize)
	}
	rows := map[string]int{"list": pageSize, "show": 4, "show_missing": 0, "search": 1, "delete": 1,
		"filter_status_common": count(func(s session) bool { return s.status == cairn.StatusCompleted }),
		"filter_status_rare":   count(func(s session) bool { return s.status == cairn.StatusMaxSteps }),
		"filter_status_none":   0,
		"filter_label":         count(func(s session) bool { return s.meta.Labels[teamLabel] == teams[0] }),
	}
	for i, op := range res.Ops {
		if op.Name != scaleOps[i] {
			t.Errorf("operation %d is %q, want %q", i, op.Name, scaleOps[i])
		}
		if op.Reps != 3 || op.P50MS < 0 || op.MaxMS < op.P50MS {
			t.Errorf("%s: %d reps, p50 %v ms, max %v ms; want 3 reps, 0 <= p50 <= max", op.Name, op.Reps, op.P50MS, op.MaxMS)
		}
		if want, ok := rows[op.Name]; ok && op.Rows != want && (prefixServed || op.Name != "show_missing") {
			t.Errorf("%s: %d rows, want %d", op.Name, op.Rows, want)
		}
		if op.Name == "page_20" && op.Rows == 0 {
			t.Errorf("page_20: no rows (%s)", op.Note)
		}
		if op.Name == "prefix" && op.Rows == 0 {
			t.Error("prefix: no rows; the prefix is a live session's")
		}
		if op.Name == "page_20" {
			continue // a store of a few hundred sessions has fewer pages: the note says which page it read
		}
		if op.Note != "" && (prefixServed || op.Name != "prefix" && op.Name != "show_missing") {
			t.Errorf("%s: %s", op.Name, op.Note)
		}
	}
	g := res.GC
	if g == nil {
		t.Fatal("no gc measured")
	}
	if res.Backend != "memory" && (g.Removed != res.Expired || g.Note != "") {
		t.Errorf("gc removed %d sessions (%s), want the %d expired", g.Removed, g.Note, res.Expired)
	}
	if g.WriterIdle.Appends != 200 || g.WriterDuringGC.Appends < 1 || g.WriterIdle.MaxMS < g.WriterIdle.P99MS {
		t.Errorf("writer: %+v alone, %+v during gc; want 200 appends alone, some during gc, p99 <= max", g.WriterIdle, g.WriterDuringGC)
	}
}

func TestRunScale_Memory(t *testing.T) {
	res := runScale(t, "memory:", 300, false, "")
	if res.Fill.Action != "filled" || res.Fill.Written != 300 {
		t.Errorf("fill %+v, want 300 sessions filled", res.Fill)
	}
	checkScale(t, res, 300, true)
}

// TestRunScale_Reuse runs the benchmark on one SQLite file: a fill, then a
// reuse that writes again only what the first gc removed, then the
// resumption of a fill that was stopped, then a refill asked for.
func TestRunScale_Reuse(t *testing.T) {
	u := "sqlite://" + filepath.Join(t.TempDir(), "scale.db")
	t.Run("fill", func(t *testing.T) {
		res := runScale(t, u, 300, false, "")
		if res.Fill.Action != "filled" || res.Fill.Written != 300 {
			t.Errorf("fill %+v, want 300 sessions filled", res.Fill)
		}
		if res.BytesBeforeGC <= 300*1000 || res.BytesAfterGC <= 0 {
			t.Errorf("file of %d bytes before gc, %d after; want over 1 KB a session, then some", res.BytesBeforeGC, res.BytesAfterGC)
		}
		checkScale(t, res, 300, false)
	})
	t.Run("reuse", func(t *testing.T) {
		res := runScale(t, u, 300, false, "")
		if res.Fill.Action != "topped_up" || res.Fill.Written != res.Expired {
			t.Errorf("fill %+v, want the %d sessions gc removed written again", res.Fill, res.Expired)
		}
		checkScale(t, res, 300, false)
	})
	t.Run("resume", func(t *testing.T) {
		// A fill stopped between the Create of a session and its Append.
		ctx := t.Context()
		ms, err := cairn.Open(ctx, u, cairn.StoreOptions{Namespace: markerNamespace("bench_scale_300")})
		if err != nil {
			t.Fatal(err)
		}
		defer ms.Close()
		m, last, err := readMarker(ctx, ms)
		if err != nil || m == nil {
			t.Fatalf("marker %v: %v", m, err)
		}
		m.State = stateFilling
		if err := writeMarker(ctx, ms, *m, last); err != nil {
			t.Fatal(err)
		}
		s, err := cairn.Open(ctx, u, cairn.StoreOptions{Namespace: "bench_scale_300", TTL: scaleTTL})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		p := newPlan(300, m.T0)
		ses := p.sessionAt(p.n - 1)
		if err := s.Delete(ctx, ses.meta.ID); err != nil {
			t.Fatal(err)
		}
		if err := s.Create(ctx, ses.meta); err != nil {
			t.Fatal(err)
		}
		res := runScale(t, u, 300, false, "")
		if res.Fill.Action != "resumed" || res.Fill.Written != 300 {
			t.Errorf("fill %+v, want the stopped fill of 300 sessions resumed", res.Fill)
		}
		checkScale(t, res, 300, false)
		rec, err := s.Load(ctx, ses.meta.ID, 0)
		if err != nil || len(rec.Events) != len(ses.events) {
			t.Errorf("session left without its events: %v, %v", rec, err)
		}
	})
	t.Run("refill", func(t *testing.T) {
		res := runScale(t, u, 300, true, "")
		if res.Fill.Action != "filled" || res.Fill.Written != 300 {
			t.Errorf("fill %+v, want 300 sessions filled again", res.Fill)
		}
		checkScale(t, res, 300, false)
	})
}

func TestRunScale_Postgres(t *testing.T) {
	u := testenv.URL(t, testenv.Postgres)
	prefix := "t" + strings.ToLower(testenv.RandHex(4)) + "_"
	t.Cleanup(func() { dropScale(t, u, prefix+"bench_scale_300") })
	res := runScale(t, u, 300, false, prefix)
	checkScale(t, res, 300, false)
}

// dropScale removes the sessions of a scale fill and its marker.
func dropScale(t *testing.T, u, ns string) {
	ctx := context.WithoutCancel(t.Context())
	far := func() time.Time { return time.Now().AddDate(100, 0, 0) }
	for _, ns := range []string{ns, markerNamespace(ns)} {
		s, err := cairn.Open(ctx, u, cairn.StoreOptions{Namespace: ns, TTL: time.Second, Now: far})
		if err != nil {
			t.Error(err)
			return
		}
		if _, err := s.(driver.Sweeper).Sweep(ctx); err != nil {
			t.Error(err)
		}
		_ = s.Delete(ctx, markerID)
		s.Close()
	}
}

func TestWriteScaleTable(t *testing.T) {
	res := runScale(t, "memory:", 300, false, "")
	big := res
	big.Sessions = 3000
	var buf bytes.Buffer
	if err := WriteScaleTable(&buf, &ScaleReport{Results: []ScaleResult{res, big, {Backend: "redis", Store: "redis://h", Sessions: 300, Error: "refused"}}}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range append(scaleOps, "memory: (ms: p50 / max)", "3,000", "3k÷300", "1.0×", "fill at 300: filled, 300 sessions written",
		"redis://h, 300 sessions: not measured: refused") {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestPlan_ExpiredAndDistinct(t *testing.T) {
	for _, n := range []int{300, 10000, 100000, 1000000} {
		p := newPlan(n, time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC))
		if e := p.expired(); e < n*8/100 || e > n*11/100 {
			t.Errorf("%d sessions: %d expired, want about a tenth", n, e)
		}
		// The first session of the first live batch is live when the
		// measurement starts, and stays so for longer than it lasts.
		b := p.expired() / p.batch
		if live := p.batchTime(b).Add(scaleTTL); !live.After(p.t0.Add(time.Minute)) {
			t.Errorf("%d sessions: batch %d expires at %v, before t0 + 1 min (%v)", n, b, live, p.t0)
		}
		// The last session of the last expired batch has expired when the
		// measurement starts: the fill's clock has moved a microsecond per
		// reading past the batch's time, a few readings per session.
		var c fillClock
		c.set(p.batchTime(b - 1))
		var last time.Time
		for range 8 * p.batch {
			last = c.now()
		}
		if exp := last.Add(scaleTTL); exp.After(p.measureStart()) {
			t.Errorf("%d sessions: the last session of batch %d expires at %v, after the measurement starts (%v)", n, b-1, exp, p.measureStart())
		}
	}
	p := newPlan(2000, time.Now())
	ids, statuses := map[string]bool{}, map[cairn.Status]int{}
	labelled := 0
	for i := range p.n {
		s := p.sessionAt(i)
		if err := cairn.ValidateID(s.meta.ID); err != nil || ids[s.meta.ID] {
			t.Fatalf("session %d: ID %q invalid or repeated (%v)", i, s.meta.ID, err)
		}
		ids[s.meta.ID] = true
		statuses[s.status]++
		if len(s.meta.Labels) > 0 {
			labelled++
		}
		if n := len(s.events); s.status != cairn.StatusNew && n != 4 {
			t.Fatalf("session %d (%s): %d events, want 4", i, s.status, n)
		}
	}
	if statuses[cairn.StatusCompleted] < 1600 || statuses[cairn.StatusFailed] == 0 || statuses[cairn.StatusNew] == 0 ||
		statuses[cairn.StatusAwaiting] == 0 || statuses[cairn.StatusInterrupted] == 0 || labelled < 120 || labelled > 280 {
		t.Errorf("statuses %v, %d labelled; want mostly completed, some of each, about a tenth labelled", statuses, labelled)
	}
	var size int
	for _, e := range p.sessionAt(1).events {
		size += EventJSONBytes(e)
	}
	if size < 900 || size > 2000 {
		t.Errorf("a session's events are %d bytes of JSON, want about 1 KB", size)
	}
}
