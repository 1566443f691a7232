package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/fault"
)

// TestAPI_StoreContract runs the store contract over HTTP on every
// backend: create, append with an expected seq (conflict, retry, bad
// event), list with the store's cursor, read events, the state at a seq,
// the event stream resumed with Last-Event-ID, fork, export and import,
// delete.
func TestAPI_StoreContract(t *testing.T) {
	for _, name := range []string{"memory", "file", "sqlite", "postgres", "redis", "mongodb"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := fault.NewBackend(t, name)
			// A snapshot for a session of two events or more: the fork
			// and the import below get one.
			h := newHarness(t, b.Direct(t), Config{SnapshotEvents: 2})
			contract(t, h)
		})
	}
}

func contract(t *testing.T, h *harness) {
	r := h.do("POST", "/api/sessions", map[string]any{"id": "c1", "labels": map[string]string{"team": "a"}})
	wantStatus(t, "create", r, http.StatusCreated)
	if got := r.JSON(t)["session"].(map[string]any)["last_seq"]; got != 0.0 {
		t.Errorf("a new session's last_seq is %v, want 0", got)
	}
	r = h.do("POST", "/api/sessions", map[string]any{"id": "c1"})
	wantStatus(t, "create again", r, http.StatusConflict)
	if c := r.Err(t)["code"]; c != "exists" {
		t.Errorf("create again: code %v, want exists", c)
	}

	at := "2026-12-01T10:00:00Z"
	first := []any{userEvent("hello"), userEvent("how are you")}
	r = h.do("POST", "/api/sessions/c1/events", map[string]any{"expect_seq": 0, "events": first})
	wantStatus(t, "append", r, http.StatusOK)
	if got := r.JSON(t)["last_seq"]; got != 2.0 {
		t.Fatalf("append: last_seq %v, want 2", got)
	}
	r = h.do("POST", "/api/sessions/c1/events", map[string]any{"expect_seq": 0, "events": []any{userEvent("a second writer")}})
	wantStatus(t, "append at a stale seq", r, http.StatusConflict)
	if e := r.Err(t); e["code"] != "conflict" || e["last_seq"] != 2.0 {
		t.Errorf("append at a stale seq: error %v, want code conflict and last_seq 2", e)
	}
	third := userEvent("the third")
	third["at"] = at
	third["seq"] = 3
	for i := range 2 { // the second is a retry after a lost reply: already done
		r = h.do("POST", "/api/sessions/c1/events", map[string]any{"expect_seq": 2, "events": []any{third}})
		wantStatus(t, fmt.Sprintf("append #%d of the same event", i+1), r, http.StatusOK)
	}
	bad := userEvent("x")
	bad["data"] = map[string]any{"parts": "not a list"}
	r = h.do("POST", "/api/sessions/c1/events", map[string]any{"expect_seq": 3, "events": []any{userEvent("ok"), bad}})
	wantStatus(t, "append of a bad event", r, http.StatusBadRequest)
	if e := r.Err(t); e["code"] != "invalid_event" || e["field"] != "events[1].data.parts" {
		t.Errorf("append of a bad event: error %v, want invalid_event on events[1].data.parts", e)
	}

	r = h.do("GET", "/api/sessions/c1/events?after=1", nil)
	wantStatus(t, "events", r, http.StatusOK)
	var evs struct {
		Events  []cairn.Event `json:"events"`
		LastSeq int64         `json:"last_seq"`
	}
	r.Decode(t, &evs)
	if len(evs.Events) != 2 || evs.Events[0].Seq != 2 || evs.LastSeq != 3 || !evs.Events[1].At.Equal(mustTime(t, at)) {
		t.Fatalf("events after 1: %d events from seq %d, last_seq %d; want seqs 2-3 of 3, the third at %s", len(evs.Events), evs.Events[0].Seq, evs.LastSeq, at)
	}
	r = h.do("GET", "/api/sessions/c1/events?after=0&limit=1", nil)
	if n := len(r.JSON(t)["events"].([]any)); n != 1 {
		t.Errorf("events with limit 1: %d events", n)
	}

	for at, want := range map[int]float64{1: 1, 3: 3} {
		r = h.do("GET", fmt.Sprintf("/api/sessions/c1/state?at=%d", at), nil)
		wantStatus(t, "state", r, http.StatusOK)
		msgs := r.JSON(t)["state"].(map[string]any)["messages"].([]any)
		if float64(len(msgs)) != want {
			t.Errorf("state at %d: %d messages, want %v", at, len(msgs), want)
		}
	}

	streamResumes(t, h)
	listPages(t, h)

	r = h.do("POST", "/api/sessions/c1/fork", map[string]any{"at": 2, "as": "c1-fork"})
	wantStatus(t, "fork", r, http.StatusCreated)
	r = h.do("GET", "/api/sessions/c1-fork", nil)
	wantStatus(t, "get the fork", r, http.StatusOK)
	info := r.JSON(t)["session"].(map[string]any)
	if info["last_seq"] != 2.0 || info["labels"].(map[string]any)["forked_from"] != "c1" {
		t.Errorf("the fork: %v; want last_seq 2 and label forked_from=c1", info)
	}

	r = h.do("GET", "/api/sessions/c1/export?format=cairn", nil)
	wantStatus(t, "export", r, http.StatusOK)
	r = h.do("POST", "/api/import?as=c1-copy", r.Body)
	wantStatus(t, "import", r, http.StatusCreated)
	orig, cp := snapshot(t, h, "c1"), snapshot(t, h, "c1-copy")
	if !bytes.Equal(orig, cp) {
		t.Errorf("export then import changed the state:\n%s\n%s", orig, cp)
	}
	if _, ok := h.store.(cairn.Snapshotter); ok && h.srv.cfg.SnapshotEvents > 0 {
		// The fork and the import were written whole: each opens from a
		// snapshot at its last event.
		for _, id := range []string{"c1-fork", "c1-copy"} {
			r, err := cairn.Restore(t.Context(), h.store, id)
			if err != nil {
				t.Fatal(err)
			}
			if r.Base == 0 || r.Base != r.Info.LastSeq || r.Ignored != nil {
				t.Errorf("%s opens from a snapshot at seq %d of %d (ignored: %v), want one at its last event", id, r.Base, r.Info.LastSeq, r.Ignored)
			}
		}
	}

	wantStatus(t, "delete", h.do("DELETE", "/api/sessions/c1", nil), http.StatusNoContent)
	wantStatus(t, "get after delete", h.do("GET", "/api/sessions/c1", nil), http.StatusNotFound)
	wantStatus(t, "stream after delete", h.do("GET", "/api/sessions/c1/stream", nil), http.StatusNotFound)
	r = h.do("POST", "/api/sessions/c1/events", map[string]any{"expect_seq": 4, "events": []any{userEvent("late")}})
	wantStatus(t, "append after delete", r, http.StatusNotFound)
	wantStatus(t, "delete again", h.do("DELETE", "/api/sessions/c1", nil), http.StatusNotFound)
}

func mustTime(t *testing.T, s string) time.Time {
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// snapshot returns a session's state as canonical JSON.
func snapshot(t *testing.T, h *harness, id string) []byte {
	t.Helper()
	r := h.do("GET", "/api/sessions/"+id+"/state", nil)
	wantStatus(t, "state of "+id, r, http.StatusOK)
	var v struct {
		State cairn.State `json:"state"`
	}
	r.Decode(t, &v)
	snap, err := v.State.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// streamResumes reads c1's stream, appends while it is open, and
// reconnects with Last-Event-ID.
func streamResumes(t *testing.T, h *harness) {
	s := openStream(t, h, "/api/sessions/c1/stream?after=1", "")
	for _, want := range []int64{2, 3} {
		if got := s.next(t); got.Seq != want {
			t.Fatalf("stream: seq %d, want %d", got.Seq, want)
		}
	}
	r := h.do("POST", "/api/sessions/c1/events", map[string]any{"expect_seq": 3, "events": []any{userEvent("while streaming")}})
	wantStatus(t, "append while streaming", r, http.StatusOK)
	if got := s.next(t); got.Seq != 4 {
		t.Fatalf("stream after an append: seq %d, want 4", got.Seq)
	}
	s.close()
	s = openStream(t, h, "/api/sessions/c1/stream", "3")
	if got := s.next(t); got.Seq != 4 {
		t.Fatalf("stream resumed after Last-Event-ID 3: seq %d, want 4", got.Seq)
	}
	s.close()
}

// listPages lists with limit 2 and follows the cursor to the end.
func listPages(t *testing.T, h *harness) {
	for i := range 4 {
		id := fmt.Sprintf("p%d", i)
		wantStatus(t, "create "+id, h.do("POST", "/api/sessions", map[string]any{"id": id}), http.StatusCreated)
		r := h.do("POST", "/api/sessions/"+id+"/events", map[string]any{"expect_seq": 0, "events": []any{userEvent("list me " + id)}})
		wantStatus(t, "append to "+id, r, http.StatusOK)
	}
	var ids []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("list: the cursor does not end")
		}
		r := h.do("GET", "/api/sessions?limit=2&cursor="+cursor, nil)
		wantStatus(t, "list", r, http.StatusOK)
		var page struct {
			Sessions []cairn.SessionInfo `json:"sessions"`
			Next     string              `json:"next"`
		}
		r.Decode(t, &page)
		if len(page.Sessions) > 2 {
			t.Fatalf("list with limit 2 gave %d sessions", len(page.Sessions))
		}
		for _, s := range page.Sessions {
			ids = append(ids, s.ID)
		}
		if page.Next == "" {
			break
		}
		cursor = page.Next
	}
	if got, want := strings.Join(ids, " "), "p3 p2 p1 p0 c1"; got != want {
		t.Errorf("list through the cursor: %s, want %s (most recently updated first)", got, want)
	}
	r := h.do("GET", "/api/sessions?q=ME+P2", nil)
	if s := r.JSON(t)["sessions"].([]any); len(s) != 1 || s[0].(map[string]any)["id"] != "p2" {
		t.Errorf("search for \"ME P2\": %s, want p2 alone", r.Body)
	}
}

// stream reads server-sent events.
type stream struct {
	res    *http.Response
	sc     *bufio.Scanner
	cancel context.CancelFunc
}

func openStream(t *testing.T, h *harness, path, lastID string) *stream {
	t.Helper()
	// A bound on how long a test waits for an event that never comes, so
	// that a broken stream fails the test instead of hanging it.
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	req, err := http.NewRequestWithContext(ctx, "GET", h.ts.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+h.token)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		cancel()
		t.Fatalf("stream: status %d, type %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	return &stream{res: res, sc: bufio.NewScanner(res.Body), cancel: cancel}
}

// sseEvent is one server-sent event.
type sseEvent struct {
	ID, Name, Data string
}

// raw returns the next event, whatever its name.
func (s *stream) raw(t *testing.T) sseEvent {
	t.Helper()
	var ev sseEvent
	for s.sc.Scan() {
		line := s.sc.Text()
		switch {
		case line == "":
			if ev.Data != "" {
				return ev
			}
		case strings.HasPrefix(line, "id: "):
			ev.ID = line[4:]
		case strings.HasPrefix(line, "event: "):
			ev.Name = line[7:]
		case strings.HasPrefix(line, "data: "):
			ev.Data = line[6:]
		}
	}
	t.Fatalf("stream ended: %v", s.sc.Err())
	return ev
}

// next returns the next session event of the stream.
func (s *stream) next(t *testing.T) cairn.Event {
	t.Helper()
	ev := s.raw(t)
	if ev.Name != "" {
		t.Fatalf("stream: event %q (%s), want a session event", ev.Name, ev.Data)
	}
	var e cairn.Event
	if err := json.Unmarshal([]byte(ev.Data), &e); err != nil {
		t.Fatalf("stream data: %v: %s", err, ev.Data)
	}
	if ev.ID != fmt.Sprint(e.Seq) {
		t.Errorf("stream: id %q for the event of seq %d", ev.ID, e.Seq)
	}
	return e
}

func (s *stream) close() {
	s.cancel()
	s.res.Body.Close()
}
