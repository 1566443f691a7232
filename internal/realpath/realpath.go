// Package realpath gives a file or folder the one name it has whatever
// name it is reached by. The local stores (file, sqlite) key their lock
// files by it, and the command line compares store paths with it.
package realpath

import (
	"net/url"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/cairnhq/cairn"
)

// Of returns the one name of a file or folder whatever name it is
// reached by: absolute, clean, with every symbolic link resolved. For a
// path that does not exist yet, the links of the folders above it are
// resolved and the rest is kept as given.
func Of(p string) string {
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

// LockFile returns the lock file of session id of namespace ns of the
// local store at path: in a folder beside the store's real path, named
// after it with ".locks", so that every name of one store gives one lock.
// An ID that is not valid has none ("").
func LockFile(path, ns, id string) string {
	if cairn.ValidateID(id) != nil {
		return ""
	}
	return filepath.Join(Of(path)+".locks", ns, id+".lock")
}

// URL returns the URL of scheme (sqlite, file) for the absolute path p:
// "sqlite:///abs/cairn.db", and on Windows "sqlite:///C:/dir/cairn.db"
// (not "sqlite://C:\\dir\\cairn.db", whose "C:" would read as a host).
func URL(scheme, p string) string {
	s := filepath.ToSlash(p)
	if !strings.HasPrefix(s, "/") {
		s = "/" + s
	}
	return (&url.URL{Scheme: scheme, Path: s}).String()
}

// FromURL returns the path that the path of a local store's URL names:
// p, except on Windows, where "/C:/dir/cairn.db" (from
// sqlite:///C:/dir/cairn.db, as URL writes it) is "C:/dir/cairn.db".
func FromURL(p string) string { return fromURL(p, runtime.GOOS == "windows") }

func fromURL(p string, windows bool) string {
	if windows && len(p) >= 3 && p[0] == '/' && p[2] == ':' &&
		('a' <= p[1] && p[1] <= 'z' || 'A' <= p[1] && p[1] <= 'Z') {
		return p[1:]
	}
	return p
}
