package cli

import (
	"net/url"
	"os"
	"strings"

	"github.com/cairnhq/cairn/internal/realpath"
)

// LocalPath returns the path on this machine of a local store (the SQLite
// file of a sqlite URL, the folder of a file URL), read as the backends
// read their URLs; "" for any other store or a URL that does not parse.
func LocalPath(storeURL string) string {
	u, err := url.Parse(storeURL)
	if err != nil {
		return ""
	}
	switch strings.ToLower(u.Scheme) {
	case "sqlite", "file":
	default:
		return ""
	}
	if u.Opaque != "" {
		p, err := url.PathUnescape(u.Opaque)
		if err != nil {
			return ""
		}
		return p
	}
	if u.Host != "" && u.Host != "localhost" {
		return ""
	}
	p := realpath.FromURL(u.Path)
	if rest, ok := strings.CutPrefix(p, "/"); ok && strings.HasPrefix(rest, ".") {
		p = rest
	}
	return p
}

func statPath(p string) (os.FileInfo, error) { return os.Stat(p) }
