package sqlite

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/realpath"
)

func init() {
	cairn.Register("sqlite", func(ctx context.Context, u *url.URL, opts cairn.StoreOptions) (cairn.Store, error) {
		path, o, err := parseURL(u)
		if err != nil {
			return nil, err
		}
		o.StoreOptions = opts
		s, err := Open(ctx, path, o)
		if err != nil {
			return nil, err
		}
		return s, nil
	})
}

// parseURL returns the file path and options a sqlite URL names:
//
//	sqlite:///abs/path.db      absolute path /abs/path.db
//	sqlite:relative/path.db    relative to the working directory
//	sqlite:///.cairn/cairn.db  relative too: a first segment starting with '.'
//
// The query may hold synchronous=full|normal; any other parameter is an
// error.
func parseURL(u *url.URL) (string, Options, error) {
	var o Options
	bad := func(msg string) (string, Options, error) {
		return "", o, fmt.Errorf("sqlite URL %q: %s (use sqlite:///abs/path.db, sqlite:relative/path.db or sqlite:///.cairn/cairn.db)",
			u.Redacted(), msg)
	}
	if u.User != nil || u.Host != "" {
		return bad("a host is not allowed")
	}
	if u.Fragment != "" {
		return bad("a fragment is not allowed")
	}
	var path string
	if u.Opaque != "" {
		p, err := url.PathUnescape(u.Opaque)
		if err != nil {
			return bad("malformed path: " + err.Error())
		}
		path = p
	} else {
		path = realpath.FromURL(u.Path)
		if rest, ok := strings.CutPrefix(path, "/"); ok && strings.HasPrefix(rest, ".") {
			path = rest
		}
	}
	if path == "" || strings.HasSuffix(path, "/") {
		return bad("no file name")
	}
	q := u.Query()
	var unknown []string
	for k := range q {
		if k != "synchronous" {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return bad("unknown query parameter " + strings.Join(unknown, ", ") + "; the only one is synchronous=full|normal")
	}
	if v, ok := q["synchronous"]; ok {
		if len(v) != 1 {
			return bad("synchronous given more than once")
		}
		mode, err := synchronousMode(v[0])
		if err != nil {
			return bad(err.Error())
		}
		o.Synchronous = mode
	}
	return path, o, nil
}
