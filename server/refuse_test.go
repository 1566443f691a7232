package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/testcheck"
	"github.com/cairnhq/cairn/longterm"
)

// Each refusal of the server, tested on its own: the answer's status and
// code, and that nothing reached the store.

func TestNew_RefusesBadConfig(t *testing.T) {
	st := testcheck.MemoryStore(t)
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no store", Config{Tokens: []string{testToken}}, "no store"},
		{"no token", Config{Store: st}, "no access token"},
		{"short token", Config{Store: st, Tokens: []string{testToken, "short"}}, "access token 2 is 5 characters long, the minimum is 16"},
		{"token with a space", Config{Store: st, Tokens: []string{"a token with spaces in it"}}, "white space"},
		{"a repeated letter", Config{Store: st, Tokens: []string{testToken, "aaaaaaaaaaaaaaaa"}}, "access token 2 is easy to guess: it is one character repeated"},
		{"few letters", Config{Store: st, Tokens: []string{"abababababababababababab"}}, "access token 1 is easy to guess"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestServer_RefusesWithoutToken(t *testing.T) {
	h := newHarness(t, testcheck.MemoryStore(t), Config{})
	for _, tc := range []struct {
		name   string
		header map[string]string
	}{
		{"no token", nil},
		{"wrong token", map[string]string{"Authorization": "Bearer " + strings.Repeat("x", 30)}},
		{"not bearer", map[string]string{"Authorization": "Basic dXNlcjpwYXNz"}},
		{"unknown cookie", map[string]string{"Cookie": CookieName + "=made-up"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, path := range []string{"/api/sessions", "/api/openapi.json", "/api/sessions/x/stream"} {
				r := h.doWith("GET", path, nil, tc.header)
				wantStatus(t, path, r, http.StatusUnauthorized)
				if c := r.Err(t)["code"]; c != "unauthorized" {
					t.Errorf("%s: code %v", path, c)
				}
				if r.Header.Get("WWW-Authenticate") == "" {
					t.Errorf("%s: no WWW-Authenticate header", path)
				}
			}
			r := h.doWith("GET", "/sessions/x", nil, tc.header)
			if r.Status != http.StatusSeeOther || !strings.HasPrefix(r.Header.Get("Location"), "/login?next=") {
				t.Errorf("page without a token: %d to %q, want a redirect to /login", r.Status, r.Header.Get("Location"))
			}
			r = h.doWith("POST", "/sessions/x/delete", "csrf=x&confirm=x", withForm(tc.header))
			wantStatus(t, "form action without a token", r, http.StatusUnauthorized)
		})
	}
	wantStatus(t, "the login page", h.doWith("GET", "/login", nil, nil), http.StatusOK)
	wantStatus(t, "the style sheet", h.doWith("GET", "/assets/app.css", nil, nil), http.StatusOK)
}

func withForm(h map[string]string) map[string]string {
	out := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	for k, v := range h {
		out[k] = v
	}
	return out
}

// signIn opens the one-time link and returns the browser's cookie and the
// pages' CSRF token.
// browse signs a client in to h and returns its cookie header, its CSRF
// token and page, which GETs a path that must answer 200 and returns the
// body.
func browse(t testing.TB, h *harness) (jar map[string]string, csrf string, page func(path string) string) {
	t.Helper()
	cookie, csrf := signIn(t, h)
	jar = map[string]string{"Cookie": CookieName + "=" + cookie}
	return jar, csrf, func(path string) string {
		t.Helper()
		r := h.doWith("GET", path, nil, jar)
		wantStatus(t, path, r, http.StatusOK)
		return string(r.Body)
	}
}

func signIn(t testing.TB, h *harness) (cookie, csrf string) {
	t.Helper()
	link := h.srv.LoginURL(h.ts.URL)
	r := h.doWith("GET", strings.TrimPrefix(link, h.ts.URL), nil, nil)
	wantStatus(t, "one-time link", r, http.StatusSeeOther)
	for _, c := range (&http.Response{Header: r.Header}).Cookies() {
		if c.Name == CookieName {
			cookie = c.Value
			if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode {
				t.Errorf("the cookie is not HttpOnly and SameSite=Strict: %+v", c)
			}
		}
	}
	if cookie == "" {
		t.Fatal("the one-time link set no cookie")
	}
	r = h.doWith("GET", strings.TrimPrefix(link, h.ts.URL), nil, nil)
	wantStatus(t, "the one-time link used twice", r, http.StatusUnauthorized)
	page := h.doWith("GET", "/sessions", nil, map[string]string{"Cookie": CookieName + "=" + cookie})
	wantStatus(t, "sessions page", page, http.StatusOK)
	_, rest, ok := strings.Cut(string(page.Body), `name="csrf" value="`)
	if !ok {
		t.Fatal("no CSRF token in the page")
	}
	csrf, _, _ = strings.Cut(rest, `"`)
	return cookie, csrf
}

func TestServer_Login(t *testing.T) {
	h := newHarness(t, testcheck.MemoryStore(t), Config{})
	r := h.doWith("POST", "/login", "token=wrong-token-of-some-length&next=/sessions", withForm(nil))
	wantStatus(t, "login with a wrong token", r, http.StatusUnauthorized)
	r = h.doWith("POST", "/login", "token="+testToken+"&next=//evil.example/x", withForm(nil))
	if r.Status != http.StatusSeeOther || r.Header.Get("Location") != "/sessions" {
		t.Errorf("login with next=//evil.example: %d to %q, want /sessions", r.Status, r.Header.Get("Location"))
	}
	r = h.doWith("POST", "/login", "token="+testToken, withForm(map[string]string{"Origin": "http://evil.example"}))
	wantStatus(t, "login posted from another site", r, http.StatusForbidden)
	r = h.doWith("GET", "/login?code=not-a-code", nil, nil)
	wantStatus(t, "a made-up code", r, http.StatusUnauthorized)
	cookie, csrf := signIn(t, h)
	r = h.doWith("POST", "/logout", "csrf="+csrf, withForm(map[string]string{"Cookie": CookieName + "=" + cookie}))
	wantStatus(t, "sign out", r, http.StatusSeeOther)
	r = h.doWith("GET", "/api/sessions", nil, map[string]string{"Cookie": CookieName + "=" + cookie})
	wantStatus(t, "the cookie after sign-out", r, http.StatusUnauthorized)
}

func TestServer_RefusesFormWithoutCSRF(t *testing.T) {
	h := newHarness(t, testcheck.MemoryStore(t), Config{})
	writeSession(t, h.store, "s1", chatEvents(8))
	cookie, csrf := signIn(t, h)
	jar := map[string]string{"Cookie": CookieName + "=" + cookie}
	for _, tc := range []struct {
		name   string
		body   string
		header map[string]string
	}{
		{"no token", "at=2", nil},
		{"wrong token", "at=2&csrf=" + strings.Repeat("a", 43), nil},
		{"another origin", "at=2&csrf=" + csrf, map[string]string{"Origin": "http://evil.example"}},
		{"a cross-site fetch", "at=2&csrf=" + csrf, map[string]string{"Sec-Fetch-Site": "cross-site"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hd := withForm(jar)
			for k, v := range tc.header {
				hd[k] = v
			}
			r := h.doWith("POST", "/sessions/s1/fork", tc.body, hd)
			wantStatus(t, "fork", r, http.StatusForbidden)
			if !strings.Contains(string(r.Body), "csrf") {
				t.Errorf("the page does not name the CSRF check: %s", r.Body)
			}
			// The API too, when the cookie authenticates it.
			api := map[string]string{"Cookie": CookieName + "=" + cookie, "Content-Type": "application/json"}
			for k, v := range tc.header {
				api[k] = v
			}
			r = h.doWith("POST", "/api/sessions/s1/fork", `{"at":2}`, api)
			wantStatus(t, "fork through the API with a cookie", r, http.StatusForbidden)
		})
	}
	assertSessions(t, h, 1)
	r := h.doWith("POST", "/sessions/s1/fork", "at=2&as=f1&csrf="+csrf, withForm(jar))
	if r.Status != http.StatusSeeOther || !strings.HasPrefix(r.Header.Get("Location"), "/sessions/f1?") {
		t.Fatalf("fork with the CSRF token: %d to %q: %s", r.Status, r.Header.Get("Location"), r.Body)
	}
	r = h.do("POST", "/api/sessions/s1/fork", map[string]any{"at": 2, "as": "f2"})
	wantStatus(t, "fork with a bearer token (no CSRF token needed)", r, http.StatusCreated)
	assertSessions(t, h, 3)
}

// assertSessions checks how many sessions the store holds.
func assertSessions(t *testing.T, h *harness, want int) {
	t.Helper()
	page, err := h.store.List(t.Context(), cairn.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Sessions) != want {
		t.Fatalf("the store holds %d sessions, want %d", len(page.Sessions), want)
	}
}

func TestServer_ReadOnly(t *testing.T) {
	h := newHarness(t, testcheck.MemoryStore(t), Config{ReadOnly: true, Agent: fixtureAgent(t, t.TempDir()+"/notes")})
	writeSession(t, h.store, "s1", chatEvents(8))
	writes := []struct{ method, path, body string }{
		{"POST", "/api/sessions", `{"id":"n1"}`},
		{"DELETE", "/api/sessions/s1", ""},
		{"POST", "/api/sessions/s1/events", `{"expect_seq":8,"events":[{"kind":"custom","data":{"type":"x.y","payload":1}}]}`},
		{"POST", "/api/sessions/s1/approvals", `{"call_id":"c","approved":true}`},
		{"POST", "/api/sessions/s1/resume", `{}`},
		{"POST", "/api/sessions/s1/fork", `{"at":1}`},
		{"POST", "/api/import", `{}`},
	}
	for _, w := range writes {
		r := h.do(w.method, w.path, w.body)
		wantStatus(t, w.method+" "+w.path, r, http.StatusForbidden)
		if c := r.Err(t)["code"]; c != "read_only" {
			t.Errorf("%s %s: code %v, want read_only", w.method, w.path, c)
		}
	}
	cookie, csrf := signIn(t, h)
	for _, p := range []string{"/sessions/s1/fork", "/sessions/s1/delete", "/sessions/s1/approve", "/sessions/s1/resume", "/import"} {
		r := h.doWith("POST", p, "at=1&confirm=s1&csrf="+csrf, withForm(map[string]string{"Cookie": CookieName + "=" + cookie}))
		wantStatus(t, p, r, http.StatusForbidden)
	}
	wantStatus(t, "read", h.do("GET", "/api/sessions/s1", nil), http.StatusOK)
	page := h.doWith("GET", "/sessions/s1", nil, map[string]string{"Cookie": CookieName + "=" + cookie})
	for _, action := range []string{"/fork", "/delete", "Import"} {
		if strings.Contains(string(page.Body), action) {
			t.Errorf("the read-only page offers %q", action)
		}
	}
	assertSessions(t, h, 1)
	if rec, _ := h.store.Load(t.Context(), "s1", 0); len(rec.Events) != 8 {
		t.Errorf("s1 holds %d events after the refused writes, want 8", len(rec.Events))
	}
}

func TestServer_RefusesLargeBodies(t *testing.T) {
	h := newHarness(t, testcheck.MemoryStore(t), Config{MaxBodyBytes: 4 << 10, MaxImportBytes: 8 << 10})
	writeSession(t, h.store, "s1", chatEvents(2))
	big := strings.Repeat("x", 5<<10)
	r := h.do("POST", "/api/sessions/s1/events", fmt.Sprintf(`{"expect_seq":2,"events":[{"kind":"custom","data":{"type":"x.y","payload":%q}}]}`, big))
	wantStatus(t, "append larger than MaxBodyBytes", r, http.StatusRequestEntityTooLarge)
	r = h.do("POST", "/api/import", `{"format":"cairn.memory","version":1,"events":[],"pad":"`+strings.Repeat("y", 9<<10)+`"}`)
	wantStatus(t, "import larger than MaxImportBytes", r, http.StatusRequestEntityTooLarge)
	cookie, csrf := signIn(t, h)
	r = h.doWith("POST", "/sessions/s1/fork", "csrf="+csrf+"&as="+big, withForm(map[string]string{"Cookie": CookieName + "=" + cookie}))
	wantStatus(t, "form larger than MaxBodyBytes", r, http.StatusRequestEntityTooLarge)
	// An event over the store's event limit, in a body within bounds.
	h2 := newHarness(t, testcheck.MemoryStore(t), Config{Limits: cairn.Limits{MaxEventBytes: 512, MaxAppendEvents: 2}})
	writeSession(t, h2.store, "s1", chatEvents(2))
	r = h2.do("POST", "/api/sessions/s1/events", fmt.Sprintf(`{"expect_seq":2,"events":[{"kind":"custom","data":{"type":"x.y","payload":%q}}]}`, strings.Repeat("z", 600)))
	wantStatus(t, "an event over MaxEventBytes", r, http.StatusRequestEntityTooLarge)
	r = h2.do("POST", "/api/sessions/s1/events", map[string]any{"expect_seq": 2, "events": []any{userEvent("1"), userEvent("2"), userEvent("3")}})
	wantStatus(t, "more events than MaxAppendEvents", r, http.StatusRequestEntityTooLarge)
	if rec, _ := h2.store.Load(t.Context(), "s1", 0); len(rec.Events) != 2 {
		t.Errorf("s1 holds %d events after the refused appends, want 2", len(rec.Events))
	}
}

// spyStore records the session IDs every call was made with.
type spyStore struct {
	cairn.Store
	mu  sync.Mutex
	ids []string
}

func (s *spyStore) note(id string) {
	s.mu.Lock()
	s.ids = append(s.ids, id)
	s.mu.Unlock()
}

func (s *spyStore) Create(ctx context.Context, m cairn.SessionMeta) error {
	s.note(m.ID)
	return s.Store.Create(ctx, m)
}

func (s *spyStore) Append(ctx context.Context, id string, seq int64, e ...cairn.Event) error {
	s.note(id)
	return s.Store.Append(ctx, id, seq, e...)
}

func (s *spyStore) Load(ctx context.Context, id string, from int64) (*cairn.Record, error) {
	s.note(id)
	return s.Store.Load(ctx, id, from)
}

func (s *spyStore) Delete(ctx context.Context, id string) error {
	s.note(id)
	return s.Store.Delete(ctx, id)
}

func TestServer_RefusesBadIDsBeforeTheStore(t *testing.T) {
	spy := &spyStore{Store: testcheck.MemoryStore(t)}
	h := newHarness(t, spy, Config{})
	bad := []string{"..%2F..%2Fetc%2Fpasswd", "a.b", "a%00b", strings.Repeat("x", 129), "%C3%A9t%C3%A9"}
	for _, id := range bad {
		for _, p := range []string{"", "/state", "/events", "/stream", "/export"} {
			r := h.do("GET", "/api/sessions/"+id+p, nil)
			wantStatus(t, "GET "+id+p, r, http.StatusBadRequest)
			if e := r.Err(t); e["code"] != "invalid_id" || e["field"] != "id" {
				t.Errorf("GET %s%s: error %v, want invalid_id on id", id, p, e)
			}
		}
		for _, p := range []string{"/events", "/approvals", "/resume", "/fork"} {
			wantStatus(t, "POST "+id+p, h.do("POST", "/api/sessions/"+id+p, `{}`), http.StatusBadRequest)
		}
		wantStatus(t, "DELETE "+id, h.do("DELETE", "/api/sessions/"+id, nil), http.StatusBadRequest)
	}
	for _, tc := range []struct{ method, path, body, field string }{
		{"POST", "/api/sessions", `{"id":"../../x"}`, "id"},
		{"POST", "/api/import?as=" + url.QueryEscape("a/b"), `{"format":"cairn.memory","version":1,"events":[]}`, "as"},
	} {
		r := h.do(tc.method, tc.path, tc.body)
		wantStatus(t, tc.path, r, http.StatusBadRequest)
		if f := r.Err(t)["field"]; f != tc.field {
			t.Errorf("%s: field %v, want %s", tc.path, f, tc.field)
		}
	}
	if len(spy.ids) != 0 {
		t.Fatalf("the store was called with %q", spy.ids)
	}
	writeSession(t, spy, "s1", chatEvents(3))
	spy.ids = nil
	r := h.do("POST", "/api/sessions/s1/fork", map[string]any{"at": 1, "as": "x/../../y"})
	wantStatus(t, "fork as a bad ID", r, http.StatusBadRequest)
	if f := r.Err(t)["field"]; f != "as" {
		t.Errorf("fork as a bad ID: field %v, want as", f)
	}
	if len(spy.ids) != 0 {
		t.Fatalf("the store was called with %q", spy.ids)
	}
}

func TestServer_RefusesOtherHosts(t *testing.T) {
	h := newHarness(t, testcheck.MemoryStore(t), Config{})
	h.srv.cfg.AllowedHosts = []string{strings.TrimPrefix(h.ts.URL, "http://")}
	wantStatus(t, "the allowed host", h.do("GET", "/api/sessions", nil), http.StatusOK)
	r := h.doWith("GET", "/api/sessions", nil, map[string]string{"Authorization": "Bearer " + testToken, "Host": "attacker.example"})
	req, _ := http.NewRequestWithContext(t.Context(), "GET", h.ts.URL+"/api/sessions", nil)
	req.Host = "attacker.example:80"
	req.Header.Set("Authorization", "Bearer "+testToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Fatalf("a request for another host: %d, want 403 (and %d)", res.StatusCode, r.Status)
	}
}

func TestAPI_RefusesBadRequests(t *testing.T) {
	h := newHarness(t, testcheck.MemoryStore(t), Config{})
	writeSession(t, h.store, "s1", chatEvents(7))
	ev := func(s string) string { return `{"expect_seq":7,"events":[` + s + `]}` }
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		code, field              string
	}{
		{"malformed JSON", "POST", "/api/sessions/s1/events", `{"expect_seq":7,`, 400, "bad_request", ""},
		{"no body", "POST", "/api/sessions/s1/events", ``, 400, "bad_request", ""},
		{"unknown field", "POST", "/api/sessions/s1/events", `{"expect_seq":7,"events":[],"extra":1}`, 400, "bad_request", "extra"},
		{"expect_seq missing", "POST", "/api/sessions/s1/events", `{"events":[{"kind":"custom","data":{}}]}`, 400, "bad_request", "expect_seq"},
		{"expect_seq negative", "POST", "/api/sessions/s1/events", `{"expect_seq":-1,"events":[{"kind":"custom","data":{}}]}`, 400, "bad_request", "expect_seq"},
		{"expect_seq a string", "POST", "/api/sessions/s1/events", `{"expect_seq":"7","events":[]}`, 400, "bad_request", "expect_seq"},
		{"no events", "POST", "/api/sessions/s1/events", `{"expect_seq":7,"events":[]}`, 400, "bad_request", "events"},
		{"unknown kind", "POST", "/api/sessions/s1/events", ev(`{"kind":"model.thought","data":{}}`), 400, "invalid_event", "events[0].kind"},
		{"kind missing", "POST", "/api/sessions/s1/events", ev(`{"data":{}}`), 400, "invalid_event", "events[0].kind"},
		{"data missing", "POST", "/api/sessions/s1/events", ev(`{"kind":"message.system"}`), 400, "invalid_event", "events[0].data"},
		{"data field missing", "POST", "/api/sessions/s1/events", ev(`{"kind":"message.system","data":{}}`), 400, "invalid_event", "events[0].data.text"},
		{"data field mistyped", "POST", "/api/sessions/s1/events", ev(`{"kind":"message.system","data":{"text":5}}`), 400, "invalid_event", "events[0].data.text"},
		{"envelope field unknown", "POST", "/api/sessions/s1/events", ev(`{"kind":"custom","data":{"type":"a.b","payload":1},"color":"red"}`), 400, "bad_request", "events[0].color"},
		{"wrong seq", "POST", "/api/sessions/s1/events", ev(`{"kind":"custom","seq":9,"data":{"type":"a.b","payload":1}}`), 400, "invalid_event", "events[0].seq"},
		{"wrong version", "POST", "/api/sessions/s1/events", ev(`{"kind":"custom","v":2,"data":{"type":"a.b","payload":1}}`), 400, "invalid_event", "events[0].v"},
		{"bad time", "POST", "/api/sessions/s1/events", ev(`{"kind":"custom","at":"yesterday","data":{"type":"a.b","payload":1}}`), 400, "invalid_event", "events[0].at"},
		{"missing session", "POST", "/api/sessions/nope/events", `{"expect_seq":0,"events":[{"kind":"custom","data":{"type":"a.b","payload":1}}]}`, 404, "not_found", ""},
		{"limit 0", "GET", "/api/sessions?limit=0", "", 400, "bad_request", "limit"},
		{"limit huge", "GET", "/api/sessions/s1/events?limit=100000", "", 400, "bad_request", "limit"},
		{"unknown status", "GET", "/api/sessions?status=happy", "", 400, "bad_request", "status"},
		{"bad label", "GET", "/api/sessions?label=team", "", 400, "bad_request", "label"},
		{"bad cursor", "GET", "/api/sessions?cursor=%21%21", "", 400, "bad_request", "cursor"},
		{"bad time filter", "GET", "/api/sessions?updated_after=today", "", 400, "bad_request", "updated_after"},
		{"state past the end", "GET", "/api/sessions/s1/state?at=8", "", 400, "bad_request", "at"},
		{"state at a word", "GET", "/api/sessions/s1/state?at=last", "", 400, "bad_request", "at"},
		{"unknown export format", "GET", "/api/sessions/s1/export?format=xml", "", 400, "bad_request", "format"},
		{"unknown import format", "POST", "/api/import?format=xml", `{}`, 400, "bad_request", "format"},
		{"malformed import", "POST", "/api/import", `{"format":"cairn.memory","version":1,"events":[{"v":1}]}`, 400, "invalid_document", "events[0].seq"},
		{"fork past the end", "POST", "/api/sessions/s1/fork", `{"at":99}`, 400, "bad_request", "at"},
		{"fork onto an existing ID", "POST", "/api/sessions/s1/fork", `{"at":1,"as":"s1"}`, 409, "exists", ""},
		{"decision without a call", "POST", "/api/sessions/s1/approvals", `{"approved":true}`, 400, "bad_request", "call_id"},
		{"decision without approved", "POST", "/api/sessions/s1/approvals", `{"call_id":"call_0"}`, 400, "bad_request", "approved"},
		{"decision on a call not pending", "POST", "/api/sessions/s1/approvals", `{"call_id":"call_0","approved":true}`, 409, "not_pending", "call_id"},
		{"resume without an agent", "POST", "/api/sessions/s1/resume", `{}`, 501, "no_agent", ""},
		{"method not allowed", "PUT", "/api/sessions/s1", `{}`, 405, "method_not_allowed", ""},
		{"no such route", "GET", "/api/nothing", "", 404, "no_route", ""},
		{"stream from a word", "GET", "/api/sessions/s1/stream?after=x", "", 400, "bad_request", "after"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.do(tc.method, tc.path, tc.body)
			wantStatus(t, tc.name, r, tc.status)
			e := r.Err(t)
			if e["code"] != tc.code || tc.field != "" && e["field"] != tc.field {
				t.Errorf("error %v, want code %s and field %q", e, tc.code, tc.field)
			}
			if msg, _ := e["message"].(string); msg == "" {
				t.Error("the error has no message")
			}
		})
	}
	r := h.doWith("GET", "/api/sessions/s1/stream", nil, map[string]string{"Authorization": "Bearer " + testToken, "Last-Event-ID": "seven"})
	wantStatus(t, "a Last-Event-ID that is not a seq", r, http.StatusBadRequest)
	if rec, _ := h.store.Load(t.Context(), "s1", 0); len(rec.Events) != 7 {
		t.Errorf("s1 holds %d events after the refused requests, want 7", len(rec.Events))
	}
	assertSessions(t, h, 1)
}

func TestUI_Import(t *testing.T) {
	h := newHarness(t, testcheck.MemoryStore(t), Config{})
	writeSession(t, h.store, "s1", chatEvents(9))
	doc := h.do("GET", "/api/sessions/s1/export", nil).Body
	cookie, csrf := signIn(t, h)
	form := func(csrf string) (string, map[string]string) {
		var b strings.Builder
		mw := multipart.NewWriter(&b)
		mw.WriteField("csrf", csrf)
		mw.WriteField("as", "s1-copy")
		fw, _ := mw.CreateFormFile("file", "s1.json")
		fw.Write(doc)
		mw.Close()
		return b.String(), map[string]string{"Cookie": CookieName + "=" + cookie, "Content-Type": mw.FormDataContentType()}
	}
	body, hd := form("wrong")
	wantStatus(t, "import with a wrong CSRF token", h.doWith("POST", "/import", body, hd), http.StatusForbidden)
	body, hd = form(csrf)
	r := h.doWith("POST", "/import", body, hd)
	if r.Status != http.StatusSeeOther || r.Header.Get("Location") != "/sessions/s1-copy?notice=imported" {
		t.Fatalf("import: %d to %q: %s", r.Status, r.Header.Get("Location"), r.Body)
	}
	if !bytes.Equal(snapshot(t, h, "s1"), snapshot(t, h, "s1-copy")) {
		t.Error("the imported session's state differs from the exported one's")
	}
	body, hd = form(csrf)
	r = h.doWith("POST", "/import", body, hd)
	wantStatus(t, "import onto an existing ID", r, http.StatusConflict)
	if !strings.Contains(string(r.Body), "already exists") {
		t.Errorf("the error page does not say why: %s", r.Body)
	}
}

// TestAPI_RefusesDuplicateKeys sends every operation that takes a JSON
// body (those of openapi.json with a requestBody) a body that names a key
// twice, at the top and deeper: each is a 400 naming the key, and the
// store is as it was. encoding/json would have taken the last of the two.
func TestAPI_RefusesDuplicateKeys(t *testing.T) {
	h := newHarness(t, testcheck.MemoryStore(t), Config{Agent: fixtureAgent(t, t.TempDir()+"/notes.txt"), Memory: longTermStore(t)})
	writeSession(t, h.store, "s1", chatEvents(7))
	call := awaitingSession(t, h.store, h.srv.cfg.Agent, "await")
	sys := func(text string) string { return `{"kind":"message.system","data":{"text":"` + text + `"}}` }
	cases := []struct {
		op, path, body string
		code, field    string
	}{
		{"POST /api/sessions/{id}/events", "/api/sessions/s1/events", `{"expect_seq":7,"events":[` + sys("A") + `],"events":[` + sys("B") + `]}`, "bad_request", "events"},
		{"POST /api/sessions/{id}/events", "/api/sessions/s1/events", `{"expect_seq":6,"events":[` + sys("A") + `],"expect_seq":7}`, "bad_request", "expect_seq"},
		{"POST /api/sessions/{id}/events", "/api/sessions/s1/events", `{"expect_seq":7,"events":[{"kind":"custom","kind":"message.system","data":{"text":"A"}}]}`, "bad_request", "events[0].kind"},
		{"POST /api/sessions/{id}/events", "/api/sessions/s1/events", `{"expect_seq":7,"events":[` + sys("A") + `,{"kind":"message.system","data":{"text":"B","text":"C"}}]}`, "bad_request", "events[1].data.text"},
		{"POST /api/sessions/{id}/events", "/api/sessions/s1/events", `{"expect_seq":7,"events":[{"kind":"custom","data":{"type":"a.b","payload":{"x":[{"y":1,"y":2}]}}}]}`, "bad_request", "events[0].data.payload.x[0].y"},
		{"POST /api/sessions", "/api/sessions", `{"id":"dk2","id":"dk3"}`, "bad_request", "id"},
		{"POST /api/sessions", "/api/sessions", `{"id":"dk4","labels":{"team":"a","team":"b"}}`, "bad_request", "labels.team"},
		{"POST /api/sessions/{id}/approvals", "/api/sessions/await/approvals", `{"call_id":"` + call + `","approved":false,"approved":true}`, "bad_request", "approved"},
		{"POST /api/sessions/{id}/resume", "/api/sessions/await/resume", `{"prompt":"a","prompt":"b"}`, "bad_request", "prompt"},
		{"POST /api/sessions/{id}/fork", "/api/sessions/s1/fork", `{"at":3,"as":"dk5","as":"dk6"}`, "bad_request", "as"},
		{"POST /api/import", "/api/import?format=openai&as=dk7", `{"messages":[{"role":"user","content":"hi"}],"messages":[{"role":"user","content":"ho"}]}`, "invalid_document", "messages"},
		{"POST /api/import", "/api/import?format=openai&as=dk8", `{"messages":[{"role":"user","content":"hi","content":"ho"}]}`, "invalid_document", "content"},
		{"PUT /api/memory/item", "/api/memory/item", `{"namespace":"users/ada","key":"a","key":"b","value":1}`, "bad_request", "key"},
		{"PUT /api/memory/item", "/api/memory/item", `{"namespace":"users/ada","key":"a","value":1,"labels":{"kind":"x","kind":"y"}}`, "bad_request", "labels.kind"},
		{"PUT /api/memory/item", "/api/memory/item", `{"namespace":"users/ada","key":"a","value":{"food":"pizza","food":"soup"}}`, "bad_request", "value.food"},
	}
	// Every operation with a JSON body has a case.
	r := h.do("GET", "/api/openapi.json", nil)
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	r.Decode(t, &doc)
	tested := map[string]bool{}
	for _, tc := range cases {
		tested[tc.op] = true
	}
	for path, item := range doc.Paths {
		for method, raw := range item {
			var op struct {
				RequestBody struct {
					Content map[string]any `json:"content"`
				} `json:"requestBody"`
			}
			if method == "parameters" {
				continue
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
			if op.RequestBody.Content["application/json"] != nil && !tested[strings.ToUpper(method)+" "+path] {
				t.Errorf("%s %s takes JSON and has no case here", strings.ToUpper(method), path)
			}
		}
	}
	for _, tc := range cases {
		t.Run(tc.field, func(t *testing.T) {
			before := storeContents(t, h)
			method, _, _ := strings.Cut(tc.op, " ")
			r := h.do(method, tc.path, tc.body)
			wantStatus(t, tc.path, r, http.StatusBadRequest)
			e := r.Err(t)
			if e["code"] != tc.code || e["field"] != tc.field {
				t.Errorf("error %v, want code %s and field %q", e, tc.code, tc.field)
			}
			if msg, _ := e["message"].(string); !strings.Contains(msg, "twice") && !strings.Contains(msg, "duplicate") {
				t.Errorf("the message %q does not say the key is given twice", msg)
			}
			if after := storeContents(t, h); !maps.Equal(before, after) {
				t.Errorf("the store changed: %v, then %v", before, after)
			}
		})
	}
	page, err := h.srv.cfg.Memory.List(t.Context(), longterm.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 0 {
		t.Errorf("long-term memory holds %d items after the refused puts, want none", len(page.Items))
	}
}

// storeContents maps each session of the store to its last seq.
func storeContents(t *testing.T, h *harness) map[string]int64 {
	t.Helper()
	page, err := h.store.List(t.Context(), cairn.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, s := range page.Sessions {
		out[s.ID] = s.LastSeq
	}
	return out
}
