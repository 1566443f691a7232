package server

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// CookieName is the cookie of a signed-in browser.
const CookieName = "cairn_ui"

// uiSessionTTL is how long a browser stays signed in.
const uiSessionTTL = 12 * time.Hour

// maxUISessions bounds the signed-in browsers kept; the oldest go first.
const maxUISessions = 1000

// authority holds the access tokens, the one-time login codes and the
// signed-in browsers, and checks each request against them (check,
// checkCSRF).
//
// Every request but the login page and the static files carries a token:
// a program sends one of the configured tokens as a bearer token; a
// browser gets a cookie, cairn_ui, by opening a one-time login link or by
// pasting a token into the login page. The cookie names a browser session
// held in memory (a server restart signs browsers out). A request that the
// cookie authenticates and that changes anything must also carry the
// session's CSRF token (the form field csrf or the header X-CSRF-Token)
// and, when the browser sends one, an Origin of this server.
type authority struct {
	tokens [][32]byte // SHA-256 of each token, compared in constant time

	mu       sync.Mutex
	codes    map[[32]byte]bool       // one-time login codes not yet used
	sessions map[[32]byte]*uiSession // signed-in browsers, by SHA-256 of the cookie
	now      func() time.Time
}

// uiSession is one signed-in browser.
type uiSession struct {
	CSRF    string
	Expires time.Time
}

type uiKey struct{}

func newAuthority(tokens []string) *authority {
	a := &authority{codes: map[[32]byte]bool{}, sessions: map[[32]byte]*uiSession{}, now: time.Now}
	for _, t := range tokens {
		a.tokens = append(a.tokens, sha256.Sum256([]byte(t)))
	}
	return a
}

func randomString() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// NewToken returns a random access token (43 characters of base64url).
func NewToken() string { return randomString() }

func (a *authority) validToken(t string) bool {
	sum := sha256.Sum256([]byte(t))
	ok := 0
	for _, want := range a.tokens {
		ok |= subtle.ConstantTimeCompare(sum[:], want[:])
	}
	return ok == 1
}

// newCode makes a one-time login code.
func (a *authority) newCode() string {
	c := randomString()
	a.mu.Lock()
	a.codes[sha256.Sum256([]byte(c))] = true
	a.mu.Unlock()
	return c
}

// useCode consumes a one-time login code.
func (a *authority) useCode(c string) bool {
	k := sha256.Sum256([]byte(c))
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.codes[k] {
		return false
	}
	delete(a.codes, k)
	return true
}

// signIn starts a browser session and sets its cookie.
func (a *authority) signIn(w http.ResponseWriter, r *http.Request) {
	cookie := randomString()
	a.mu.Lock()
	now := a.now()
	for k, s := range a.sessions {
		if now.After(s.Expires) {
			delete(a.sessions, k)
		}
	}
	if len(a.sessions) >= maxUISessions {
		var oldest [32]byte
		var at time.Time
		for k, s := range a.sessions {
			if at.IsZero() || s.Expires.Before(at) {
				oldest, at = k, s.Expires
			}
		}
		delete(a.sessions, oldest)
	}
	a.sessions[sha256.Sum256([]byte(cookie))] = &uiSession{CSRF: randomString(), Expires: now.Add(uiSessionTTL)}
	a.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: cookie, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: int(uiSessionTTL / time.Second)})
}

// signOut ends the browser session of r.
func (a *authority) signOut(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(CookieName); err == nil {
		a.mu.Lock()
		delete(a.sessions, sha256.Sum256([]byte(c.Value)))
		a.mu.Unlock()
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: -1})
}

// check authenticates r: a bearer token (ui nil) or a browser's cookie.
func (a *authority) check(r *http.Request) (ui *uiSession, err error) {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, tok, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			return nil, &apiError{Status: http.StatusUnauthorized, Code: "unauthorized",
				Message: "the Authorization header must be \"Bearer TOKEN\""}
		}
		if !a.validToken(strings.TrimSpace(tok)) {
			return nil, &apiError{Status: http.StatusUnauthorized, Code: "unauthorized",
				Message: "the access token is not valid", Hint: "use the token cairn serve printed, or one from its token file"}
		}
		return nil, nil
	}
	if c, err := r.Cookie(CookieName); err == nil {
		a.mu.Lock()
		s := a.sessions[sha256.Sum256([]byte(c.Value))]
		a.mu.Unlock()
		if s != nil && a.now().Before(s.Expires) {
			return s, nil
		}
		return nil, &apiError{Status: http.StatusUnauthorized, Code: "unauthorized",
			Message: "the browser session has ended", Hint: "sign in again at /login"}
	}
	return nil, &apiError{Status: http.StatusUnauthorized, Code: "unauthorized",
		Message: "an access token is required", Hint: "send Authorization: Bearer TOKEN with the token cairn serve printed"}
}

// checkCSRF refuses a request authenticated by cookie that changes
// something without the session's CSRF token, or from another origin.
func (a *authority) checkCSRF(r *http.Request, ui *uiSession) error {
	if o := r.Header.Get("Origin"); o != "" && !sameOrigin(o, r) {
		return &apiError{Status: http.StatusForbidden, Code: "csrf", Message: "the request comes from another site (Origin " + o + ")"}
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return &apiError{Status: http.StatusForbidden, Code: "csrf", Message: "the request comes from another site (Sec-Fetch-Site " + site + ")"}
	}
	got := r.Header.Get("X-CSRF-Token")
	if got == "" {
		v, err := formValue(r, "csrf")
		if err != nil {
			return err
		}
		got = v
	}
	if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(ui.CSRF)) != 1 {
		return &apiError{Status: http.StatusForbidden, Code: "csrf", Message: "the form's CSRF token is missing or wrong",
			Hint: "reload the page and try again"}
	}
	return nil
}

// formValue reads one field of a urlencoded or multipart form body.
func formValue(r *http.Request, name string) (string, error) {
	ct := r.Header.Get("Content-Type")
	switch {
	case strings.HasPrefix(ct, "multipart/form-data"):
		if r.MultipartForm == nil {
			if err := r.ParseMultipartForm(1 << 20); err != nil {
				return "", formError(err)
			}
		}
		return r.FormValue(name), nil
	case strings.HasPrefix(ct, "application/x-www-form-urlencoded"):
		if err := r.ParseForm(); err != nil {
			return "", formError(err)
		}
		return r.PostForm.Get(name), nil
	}
	return "", nil
}

// formError is the answer to a form body that does not parse.
func formError(err error) error {
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return err
	}
	return badRequest("", "the form does not parse: %v", err)
}

func sameOrigin(origin string, r *http.Request) bool {
	u, err := url.Parse(origin)
	if err != nil {
		return false
	}
	return strings.EqualFold(u.Host, r.Host)
}
