package sqlite

import (
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/internal/realpath"
)

var _ driver.LocalLocker = (*Store)(nil)

// LockFile implements driver.LocalLocker: the lock files are in a folder
// beside the database, named after it with ".locks".
func (s *Store) LockFile(id string) string {
	return realpath.LockFile(s.path, s.opts.Namespace, id)
}
