//go:build linux || darwin

package file_test

import (
	"context"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/file"
	"github.com/cairnhq/cairn/store/storetest"
)

// TestStore_LockFile: the lock file is beside the folder's real path,
// whatever name the store is opened by, and per namespace; an ID that
// breaks the rules has none.
func TestStore_LockFile(t *testing.T) {
	storetest.LocalLockFiles(t, "sessions", true, func(ctx context.Context, path string, opts cairn.StoreOptions) (cairn.Store, error) {
		return file.Open(ctx, path, opts)
	})
}
