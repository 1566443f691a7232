package cli

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
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
	p := u.Path
	if rest, ok := strings.CutPrefix(p, "/"); ok && strings.HasPrefix(rest, ".") {
		p = rest
	}
	return p
}

// RealPath returns the one name of a file or folder whatever name it is
// reached by: absolute, clean, with every symbolic link resolved. For a
// path that does not exist yet, the links of the folders above it are
// resolved and the rest is kept as given.
func RealPath(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	var rest []string
	for dir := abs; ; {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(append([]string{real}, rest...)...)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return abs
		}
		rest = append([]string{filepath.Base(dir)}, rest...)
		dir = parent
	}
}

func statPath(p string) (os.FileInfo, error) { return os.Stat(p) }
