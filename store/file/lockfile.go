//go:build linux || darwin

package file

import (
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/internal/realpath"
)

var _ driver.LocalLocker = (*Store)(nil)

// LockFile implements driver.LocalLocker: the lock files are in a folder
// beside the store's folder, named after it with ".locks".
func (s *Store) LockFile(id string) string {
	return realpath.LockFile(s.dir, s.opts.Namespace, id)
}
