package file

import (
	"path/filepath"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/realpath"
)

var _ cairn.LocalLocker = (*Store)(nil)

// LockFile implements cairn.LocalLocker: the lock files are in a folder
// beside the store's folder, named after it with ".locks".
func (s *Store) LockFile(id string) string {
	if cairn.ValidateID(id) != nil {
		return ""
	}
	return filepath.Join(realpath.Of(s.dir)+".locks", s.opts.Namespace, id+".lock")
}
