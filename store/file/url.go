package file

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/text"
)

func init() {
	cairn.Register("file", func(ctx context.Context, u *url.URL, opts cairn.StoreOptions) (cairn.Store, error) {
		dir, err := dirFromURL(u)
		if err != nil {
			return nil, err
		}
		return Open(ctx, dir, opts)
	})
}

// dirFromURL returns the folder a "file:" URL names. "file:///abs/dir" is an
// absolute path; "file:rel/dir" is relative to the working directory, and so
// is "file:///./rel/dir" (a first path segment starting with a dot). The
// host, if any, must be "localhost"; the URL takes no query.
func dirFromURL(u *url.URL) (string, error) {
	bad := func(why string) error {
		return fmt.Errorf("open file store: %s in %q (want file:///abs/dir or file:rel/dir)", why, text.RedactURL(u.String()))
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", bad("unexpected query or fragment")
	}
	if u.Opaque != "" {
		dir, err := url.PathUnescape(u.Opaque)
		if err != nil {
			return "", bad("malformed path")
		}
		return dir, nil
	}
	if u.Host != "" && u.Host != "localhost" {
		return "", bad("host " + u.Host + " is not this machine")
	}
	p := u.Path
	if p == "" {
		return "", bad("no folder")
	}
	if rel := strings.TrimPrefix(p, "/"); strings.HasPrefix(rel, ".") {
		return rel, nil
	}
	return p, nil
}
