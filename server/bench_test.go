package server

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// The pages of a 10,000-event session, served from the server's cache
// (as after the first visit), on SQLite. The figures are in
// docs/SERVER.md; nothing here asserts a time.

func benchPage(b *testing.B, path string) {
	h := newHarness(b, sqliteStore(b), Config{})
	writeSession(b, h.store, "long", chatEvents(10_000))
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
