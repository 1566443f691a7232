package sqlite_test

import (
	"testing"

	"github.com/cairnhq/cairn/store/storetest"
)

// TestStore_LockFile: the lock file is beside the database's real path,
// whatever name the store is opened by, and per namespace; an ID that
// breaks the rules has none.
func TestStore_LockFile(t *testing.T) {
	storetest.LocalLockFiles(t, "real.db", false, openPath)
}
