package server

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
)

// The pages of a 10,000-event session, served from the server's cache
// (as after the first visit), on SQLite. The figures are in
// docs/SERVER.md; nothing here asserts a time.

func benchPage(b *testing.B, path string) {
	h := newHarness(b, sqliteStore(b), Config{})
	writeSession(b, h.store, "long", chatEvents(10_000))
	benchPath(b, h, path)
}

// benchPath times a signed-in GET of path on h, after a first one.
func benchPath(b *testing.B, h *harness, path string) {
	cookie, _ := signIn(b, h)
	get := func() {
		req := httptest.NewRequest("GET", path, nil)
		req.AddCookie(&http.Cookie{Name: CookieName, Value: cookie})
		w := httptest.NewRecorder()
		h.srv.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("%s: %d %s", path, w.Code, w.Body.String())
		}
	}
	get()
	for b.Loop() {
		get()
	}
}

func BenchmarkPage_Session10k_Latest(b *testing.B) { benchPage(b, "/sessions/long") }
func BenchmarkPage_Session10k_First(b *testing.B)  { benchPage(b, "/sessions/long?from=1&at=1") }
func BenchmarkPage_State10k_At5000(b *testing.B)   { benchPage(b, "/sessions/long/state?at=5000") }
func BenchmarkPage_Rows10k_Tail(b *testing.B)      { benchPage(b, "/sessions/long/rows?after=9990") }
func BenchmarkAPI_Events10k_Page(b *testing.B) {
	benchPage(b, "/api/sessions/long/events?after=5000&limit=500")
}

// BenchmarkFleet_2000Sessions is the fleet page over as many sessions as
// a view reads (MaxFleetSessions), each of one run of seven events, on
// SQLite: its cost is a load of each session.
func BenchmarkFleet_2000Sessions(b *testing.B) {
	h := newHarness(b, sqliteStore(b), Config{})
	now := time.Now().UTC()
	for i := range MaxFleetSessions {
		outcome := cairn.StatusCompleted
		if i%7 == 3 {
			outcome = cairn.StatusFailed
		}
		writeFleetSession(b, h.store, fmt.Sprintf("s-%04d", i), now.Add(-time.Duration(i)*40*time.Second), "support", "gpt-4o-mini", "calc", i%7 == 3, outcome, nil)
	}
	benchPath(b, h, "/fleet")
}
