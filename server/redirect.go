package server

import (
	"net/http"
	"net/url"
	"strings"
)

// seeOther answers with a redirect (303) to target, which must be a page
// of this server (localPath); any other target redirects to /sessions.
// Every redirect of the server goes through it, so that none can lead a
// browser elsewhere, whatever part of a request its target was made of.
func seeOther(w http.ResponseWriter, r *http.Request, target string) {
	if _, ok := localPath(target); !ok {
		target = "/sessions"
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
}

// safeNext is where a browser goes after signing in: next when it is a
// page of this server other than the sign-in and sign-out pages, and
// /sessions otherwise.
func safeNext(next string) string {
	p, ok := localPath(next)
	if !ok || p == "/login" || p == "/logout" {
		return "/sessions"
	}
	return next
}

// localPath reports whether target, a URL that may come from a request,
// leads a browser to a page of this server and nowhere else, and returns
// its path, unescaped.
//
// A browser does not read a URL as net/url does: it drops tabs and line
// breaks anywhere in it, trims control characters and spaces at its ends,
// reads a backslash as a slash and "//host" as another site, so that
// "/\t/evil.example", "/\\evil.example" and " //evil.example" all lead to
// evil.example. Instead of following those rules, localPath accepts only
// what no reader can take for another site: printable ASCII without
// spaces or backslashes, no scheme, no host, and a path that starts with
// one "/" and whose segments are neither empty (but the last: a trailing
// slash), nor "." or "..", nor hold, once unescaped, anything but
// printable ASCII other than a backslash ("/%2F/evil.example",
// "/%09/evil.example" and "/.//evil.example" are refused). A query and a
// fragment may follow.
func localPath(target string) (string, bool) {
	if !plainASCII(target) {
		return "", false
	}
	u, err := url.Parse(target)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" || !strings.HasPrefix(target, "/") {
		return "", false
	}
	segs := strings.Split(strings.TrimPrefix(u.Path, "/"), "/")
	for i, seg := range segs {
		if seg == "" && i < len(segs)-1 || seg == "." || seg == ".." || !plainASCII(seg) {
			return "", false
		}
	}
	return u.Path, true
}

// plainASCII reports whether s holds only printable ASCII other than the
// space and the backslash.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || c == '\\' {
			return false
		}
	}
	return true
}
