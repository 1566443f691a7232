package server

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/internal/testing/testcheck"
)

// hostileNext are targets of a redirect that a browser takes to another
// site, or that turn into such a target once unescaped or cleaned, each
// with what a browser makes of it.
var hostileNext = []struct{ next, browser string }{
	{"//evil.example", "another host"},
	{"///evil.example", "another host: the empty authority is skipped"},
	{"/\\evil.example", "a backslash is a slash: //evil.example"},
	{"\\/evil.example", "a backslash is a slash: //evil.example"},
	{"\\\\evil.example", "backslashes are slashes: //evil.example"},
	{"/\t/evil.example", "the tab is dropped: //evil.example"},
	{"/\n/evil.example", "the newline is dropped: //evil.example"},
	{"/\r/evil.example", "the carriage return is dropped: //evil.example"},
	{"/\r\n/evil.example", "both are dropped: //evil.example"},
	{"/\t\\evil.example", "the tab is dropped, the backslash is a slash: //evil.example"},
	{" //evil.example", "a leading space is trimmed: //evil.example"},
	{"\t//evil.example", "a leading tab is trimmed: //evil.example"},
	{"\x00//evil.example", "a leading control character is trimmed: //evil.example"},
	{"//evil.example ", "another host, the trailing space trimmed"},
	{"/%09/evil.example", "unescaped: /<TAB>/evil.example, then //evil.example"},
	{"/%0a/evil.example", "unescaped: a newline, then //evil.example"},
	{"/%2F/evil.example", "unescaped: //evil.example"},
	{"/%2f%2fevil.example", "unescaped: ///evil.example"},
	{"/%5Cevil.example", "unescaped: /\\evil.example, then //evil.example"},
	{"/.//evil.example", "the dot segment goes: a path of //evil.example"},
	{"/./evil.example", "a dot segment"},
	{"/../evil.example", "a dot-dot segment"},
	{"/sessions/..//evil.example", "the segments go: a path of //evil.example"},
	{"/a//evil.example", "an empty segment"},
	{"/%E2%88%95evil.example", "unescaped: a division slash, which some readers fold to a slash"},
	{"/\u2215evil.example", "a division slash, which some readers fold to a slash"},
	{"/\x7f/evil.example", "a control character"},
	{"https://evil.example/", "another site"},
	{"http:evil.example", "another site: a scheme without slashes"},
	{"http:/\\evil.example", "another site"},
	{"javascript:alert(1)", "a script"},
	{"data:text/html,hi", "a page of the attacker's"},
	{"evil.example", "a relative path: no page of this server"},
	{"sessions", "a relative path"},
	{"", "nothing"},
	{"/login", "the sign-in page again"},
	{"/login?next=/sessions", "the sign-in page again"},
	{"/logout", "the sign-out action"},
}

func TestSafeNext(t *testing.T) {
	for _, tc := range hostileNext {
		if got := safeNext(tc.next); got != "/sessions" {
			t.Errorf("safeNext(%q) = %q, want /sessions (in a browser: %s)", tc.next, got, tc.browser)
		}
	}
	for _, next := range []string{
		"/sessions",
		"/sessions/",
		"/",
		"/sessions/s1",
		"/sessions/s1?from=3&to=9",
		"/sessions/s1/compare?a=1&b=2#state",
		"/sessions?q=two%20words&status=completed",
		"/sessions?next=//evil.example", // a query is not a place to go
		"/sessions/a-b_c",
	} {
		if got := safeNext(next); got != next {
			t.Errorf("safeNext(%q) = %q, want it kept", next, got)
		}
	}
}

// TestServer_LoginStaysOnServer signs in with the one-time link and with
// the form, each with a next of hostileNext, and checks where the answer
// sends the browser.
func TestServer_LoginStaysOnServer(t *testing.T) {
	h := newHarness(t, testcheck.MemoryStore(t), Config{})
	for _, tc := range append(hostileNext, struct{ next, browser string }{"/sessions/s1?from=3", ""}) {
		want := "/sessions"
		if tc.browser == "" {
			want = tc.next
		}
		link := h.srv.LoginURL(h.ts.URL) + "&next=" + url.QueryEscape(tc.next)
		if status, loc := location(t, "GET", link, ""); status != http.StatusSeeOther || loc != want {
			t.Errorf("GET %s: %d to %q, want %s (in a browser: %s)", link, status, loc, want, tc.browser)
		}
		form := "token=" + testToken + "&next=" + url.QueryEscape(tc.next)
		if status, loc := location(t, "POST", h.ts.URL+"/login", form); status != http.StatusSeeOther || loc != want {
			t.Errorf("POST /login %s: %d to %q, want %s (in a browser: %s)", form, status, loc, want, tc.browser)
		}
	}
	// The report's link, as sent: next=/%09/evil.example in the query.
	link := h.srv.LoginURL(h.ts.URL) + "&next=/%09/evil.example"
	if _, loc := location(t, "GET", link, ""); loc != "/sessions" {
		t.Errorf("GET %s: to %q, want /sessions", link, loc)
	}
	// A page asked for without a cookie comes back after the sign-in.
	r := h.doWith("GET", "/sessions/s1/compare?a=1&b=2", nil, nil)
	u, err := url.Parse(r.Header.Get("Location"))
	if r.Status != http.StatusSeeOther || err != nil || u.Path != "/login" {
		t.Fatalf("a page without a cookie: %d to %q, want /login", r.Status, r.Header.Get("Location"))
	}
	r = h.doWith("POST", "/login", "token="+testToken+"&next="+url.QueryEscape(u.Query().Get("next")), withForm(nil))
	if got := r.Header.Get("Location"); got != "/sessions/s1/compare?a=1&b=2" {
		t.Errorf("after the sign-in: to %q, want the page asked for", got)
	}
}

// location sends a request (a form when form is not empty) and returns the
// answer's status and its Location header as sent, which an http.Client
// would refuse to parse when it holds a control character.
func location(t *testing.T, method, target, form string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, target, strings.NewReader(form))
	if err != nil {
		t.Fatal(err)
	}
	if form != "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	res, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	res.Body.Close()
	return res.StatusCode, res.Header.Get("Location")
}
