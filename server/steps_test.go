package server

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/internal/testing/testcheck"
	"github.com/cairnhq/cairn/steps"
)

// TestUI_StepsSession: a session written by a loop of durable steps
// (package steps) shows in the inspector: its timeline has a row for each
// step's start and result, none failing to decode, and the session page
// shows the steps' names and results.
func TestUI_StepsSession(t *testing.T) {
	h := newHarness(t, testcheck.MemoryStore(t), Config{})
	ctx := t.Context()
	s, err := steps.Open(ctx, h.store, "loop", steps.Options{Name: "my-loop"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := steps.Run(ctx, s, "fetch-quote", func(context.Context) (string, error) { return "quote-7781", nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := steps.Run(ctx, s, "send-mail", func(context.Context) (int, error) { return 0, errors.New("mailbox-full") }, steps.NotIdempotent()); err == nil {
		t.Fatal("no error")
	}
	if err := s.Set(ctx, "count", 2); err != nil {
		t.Fatal(err)
	}
	if err := s.Finish(ctx, "done"); err != nil {
		t.Fatal(err)
	}
	rec, err := h.srv.loadAll(ctx, "loop")
	if err != nil {
		t.Fatal(err)
	}
	rows := newTimeline().rows(rec.Events)
	customs := 0
	for _, r := range rows {
		if r.Err != "" {
			t.Errorf("row %d: %s", r.Seq, r.Err)
		}
		if r.Custom != nil {
			customs++
		}
	}
	if customs != 3 {
		t.Errorf("%d custom rows, want 3 (a result, a start, a failure)", customs)
	}
	cookie, _ := signIn(t, h)
	req := httptest.NewRequest("GET", "/sessions/loop", nil)
	req.AddCookie(&http.Cookie{Name: CookieName, Value: cookie})
	w := httptest.NewRecorder()
	h.srv.ServeHTTP(w, req)
	if w.Code != http.StatusOK {
		t.Fatalf("GET /sessions/loop: %d %s", w.Code, w.Body.String())
	}
	for _, want := range []string{"cairn.step", "fetch-quote", "quote-7781", "send-mail", "mailbox-full", "my-loop"} {
		if !strings.Contains(w.Body.String(), want) {
			t.Errorf("the session page does not show %q", want)
		}
	}
}
