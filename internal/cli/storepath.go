package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/config"
	"github.com/cairnhq/cairn/internal/realpath"
	"github.com/cairnhq/cairn/store/memory"
)

// schemeRe matches the scheme of a URL ("sqlite:", "postgres:"); a
// one-letter one would be a Windows drive.
var schemeRe = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]+:`)

// IsPlainPath reports whether a store is given as a path rather than a URL.
func IsPlainPath(s string) bool { return s != "" && !schemeRe.MatchString(s) }

// StoreArg turns a store given on the command line into a URL: a URL is
// kept; a plain path becomes a sqlite URL (a file, or a name ending in
// .db, .sqlite or .sqlite3) or a file URL (a folder, or a name ending in
// /). A relative path stays relative to the working directory. A path
// whose kind neither its name nor what is there says is a usage error.
func StoreArg(s string) (string, error) {
	if !IsPlainPath(s) {
		return s, nil
	}
	kind, err := pathKind(s)
	if err != nil {
		return "", err
	}
	if filepath.IsAbs(s) {
		return realpath.URL(kind, filepath.Clean(s)), nil
	}
	p := filepath.ToSlash(filepath.Clean(s))
	if !strings.HasPrefix(p, ".") {
		p = "./" + p
	}
	p = "/" + p // sqlite:///./x.db: relative, as the backends read it
	return (&url.URL{Scheme: kind, Path: p}).String(), nil
}

// sqliteMagic starts every SQLite database file.
var sqliteMagic = []byte("SQLite format 3\x00")

// pathKind returns the backend of a store given as a path: sqlite or file.
func pathKind(p string) (string, error) {
	fi, err := os.Stat(p)
	switch {
	case err == nil && fi.IsDir():
		return "file", nil
	case err == nil:
		head := make([]byte, len(sqliteMagic))
		f, err := os.Open(p)
		if err != nil {
			return "", Fail(fmt.Errorf("store %s: %w", p, err), "check that the file is readable")
		}
		defer f.Close()
		n, _ := io.ReadFull(f, head)
		if n == 0 || bytes.Equal(head, sqliteMagic) {
			return "sqlite", nil
		}
		return "", Usage("give a SQLite database, a folder of sessions, or a store URL (postgres://…, redis://…, mongodb://…)",
			"store %s is neither a SQLite database nor a folder", p)
	case !errors.Is(err, fs.ErrNotExist):
		return "", Fail(fmt.Errorf("store %s: %w", p, err), "check the path")
	}
	if strings.HasSuffix(p, "/") || strings.HasSuffix(p, string(filepath.Separator)) {
		return "file", nil
	}
	switch strings.ToLower(filepath.Ext(p)) {
	case ".db", ".sqlite", ".sqlite3":
		return "sqlite", nil
	}
	return "", Usage("end the name in .db for a SQLite database or in / for a folder of sessions, or give a URL: sqlite:///"+
		strings.TrimPrefix(p, "/")+" or file:///"+strings.TrimPrefix(p, "/"),
		"store %s does not exist, and its name does not say which kind of store to create", p)
}

// storeOrigin says where the store setting came from, and so what a
// relative path in it is relative to.
type storeOrigin int

const (
	fromDefault storeOrigin = iota // the project's folder
	fromFile                       // the config file's folder
	fromCommand                    // the working directory (a flag, the environment)
)

// resolveStore makes the configured store's URL point where it means
// from the working directory: a plain path becomes a URL; a relative local
// path of the config file is taken from the file's folder, and the default
// store from the project's root, when those are not the working directory.
func resolveStore(cfg *config.Config, proj config.Project, origin storeOrigin) error {
	if !cfg.Enabled() {
		return nil
	}
	u := cfg.StoreURL()
	base := proj.Root
	if origin == fromFile && cfg.Source != "" {
		base = filepath.Dir(cfg.Source)
	}
	wd, err := os.Getwd()
	if err != nil {
		return Fail(fmt.Errorf("working directory: %w", err), "run cairn from a folder that exists")
	}
	if origin == fromCommand {
		base = wd
	}
	if IsPlainPath(u) {
		p := u
		if !filepath.IsAbs(p) && !samePath(base, wd) {
			p = filepath.Join(base, p)
		}
		nu, err := StoreArg(p)
		if err != nil {
			return err
		}
		cfg.SetStore(nu)
		return nil
	}
	p := LocalPath(u)
	if p == "" || filepath.IsAbs(p) || samePath(base, wd) {
		return nil
	}
	parsed, err := url.Parse(u)
	if err != nil {
		return nil // opening it says what is wrong
	}
	parsed.Opaque, parsed.Host = "", ""
	parsed.Path = filepath.ToSlash(filepath.Join(base, p))
	cfg.SetStore(parsed.String())
	return nil
}

func samePath(a, b string) bool { return realpath.Of(a) == realpath.Of(b) }

// localMissing returns the path of a local store (sqlite, file) that does
// not exist yet, or "" when the store is not local or exists.
func localMissing(u string) string {
	p := LocalPath(u)
	if p == "" {
		return ""
	}
	if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
		return p
	}
	return ""
}

// StoreMissing returns the path of the configured store when it is a local
// one that does not exist yet (nothing has been saved): commands that only
// read say so instead of creating it. "" otherwise.
func (a *App) StoreMissing() string {
	cfg, err := a.Config()
	if err != nil || !cfg.Enabled() {
		return ""
	}
	return localMissing(cfg.StoreURL())
}

// OpenReadStore opens the configured store for a command that only reads:
// a local store that does not exist yet is not created; an empty store
// stands in for it.
func (a *App) OpenReadStore(ctx context.Context) (cairn.Store, string, error) {
	cfg, err := a.Config()
	if err != nil {
		return nil, "", err
	}
	u := cfg.StoreURL()
	if cfg.Enabled() && localMissing(u) != "" {
		opts, err := a.StoreOptions()
		if err != nil {
			return nil, "", err
		}
		s, err := memory.New(opts)
		if err != nil {
			return nil, "", Fail(err, "check --namespace")
		}
		return s, u, nil
	}
	return a.OpenStore(ctx)
}
