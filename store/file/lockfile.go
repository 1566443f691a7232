//go:build linux || darwin

package file

import (
	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/realpath"
)

var _ cairn.LocalLocker = (*Store)(nil)

// LockFile implements cairn.LocalLocker: the lock files are in a folder
// beside the store's folder, named after it with ".locks".
func (s *Store) LockFile(id string) string {
	return realpath.LockFile(s.dir, s.opts.Namespace, id)
}
