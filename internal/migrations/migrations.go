// Package migrations reads the numbered SQL files that make a store's
// schema: migrations/NNNN_name.sql, versions dense from 0001. The stores
// built on SQL (sqlite, postgres) embed theirs and read them with Read.
package migrations

import (
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
)

// Migration is one numbered schema change.
type Migration struct {
	Version int    // NNNN, from 1
	File    string // "0001_init.sql"
	Name    string // "0001_init"
	SQL     string
}

// Read returns the migrations of dir in fsys in version order. It refuses
// a folder with none, a name that is not NNNN_name.sql (four digits), and
// versions that do not run 1, 2, 3, … without gaps, naming the file.
func Read(fsys fs.FS, dir string) ([]Migration, error) {
	names, err := fs.Glob(fsys, path.Join(dir, "*.sql"))
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no migrations in %s", dir)
	}
	out := make([]Migration, 0, len(names))
	for _, name := range names { // fs.Glob returns names sorted
		file := path.Base(name)
		num, _, ok := strings.Cut(file, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || len(num) != 4 || v < 1 {
			return nil, fmt.Errorf("migration %s: name is not NNNN_name.sql", file)
		}
		if want := len(out) + 1; v != want {
			return nil, fmt.Errorf("migration %s: version %d where %d comes next", file, v, want)
		}
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, File: file, Name: strings.TrimSuffix(file, ".sql"), SQL: string(b)})
	}
	return out, nil
}
