// Package storeurl parses the URLs that name stores, for cairn.Open and
// longterm.Open alike.
package storeurl

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/cairnhq/cairn/internal/text"
)

// Parse parses a store's URL. Beside what url.Parse reads, it reads URLs
// that name several hosts, such as "mongodb://h1:27017,h2:27017/db", which
// url.Parse refuses. The error names the URL with its password hidden.
func Parse(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err == nil {
		return u, nil
	}
	if u, ok := parseMultiHost(raw); ok {
		return u, nil
	}
	// url.Parse's error repeats the URL, password and all: keep its
	// reason alone.
	if ue, ok := err.(*url.Error); ok {
		err = ue.Err
	}
	return nil, fmt.Errorf("malformed URL %q: %v", text.RedactURL(raw), err)
}

// parseMultiHost parses URLs that name several hosts, such as
// "mongodb://h1:27017,h2:27017/db?replicaSet=rs", which url.Parse refuses
// (it reads one port). The hosts stay together in Host, so u.String()
// gives the URL back for the backend's own parser.
func parseMultiHost(raw string) (*url.URL, bool) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok || scheme == "" || !strings.Contains(rest, ",") {
		return nil, false
	}
	authority, tail := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority, tail = rest[:i], rest[i:]
	}
	base, err := url.Parse(scheme + "://placeholder" + tail)
	if err != nil {
		return nil, false
	}
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		userinfo, err := url.Parse(scheme + "://" + authority[:at+1] + "placeholder")
		if err != nil {
			return nil, false
		}
		base.User = userinfo.User
		authority = authority[at+1:]
	}
	for _, h := range strings.Split(authority, ",") {
		if h == "" || strings.ContainsAny(h, " /?#@") {
			return nil, false
		}
	}
	base.Host = authority
	return base, true
}

// Backends maps each URL scheme of the session stores in this module to the
// package whose import registers it.
var Backends = map[string]string{
	"file":        "store/file",
	"memory":      "store/memory",
	"mongodb":     "store/mongodb",
	"mongodb+srv": "store/mongodb",
	"postgres":    "store/postgres",
	"postgresql":  "store/postgres",
	"redis":       "store/redis",
	"rediss":      "store/redis",
	"sqlite":      "store/sqlite",
}

// Unknown returns the text of the error for a URL scheme that no backend
// registered: the scheme, the URL (already redacted), what is registered,
// and, for a scheme in pkgs (scheme to package under the module), the
// import that registers it.
func Unknown(scheme, redacted string, known []string, pkgs map[string]string) string {
	k := "none registered"
	if len(known) > 0 {
		k = "known: " + strings.Join(known, ", ")
	}
	msg := fmt.Sprintf("unknown scheme %q in %q (%s)", scheme, redacted, k)
	if pkg, ok := pkgs[scheme]; ok {
		return msg + fmt.Sprintf(`: import _ "github.com/cairnhq/cairn/%s" (or "github.com/cairnhq/cairn/store/all") to register it`, pkg)
	}
	return msg + `: import _ "github.com/cairnhq/cairn/store/all" registers every backend's scheme`
}
