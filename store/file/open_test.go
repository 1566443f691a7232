//go:build linux || darwin

package file

import (
	"context"
	"os"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/storetest"
)

const openChildEnv = "CAIRN_FILE_TEST_OPEN_CHILD"

// TestOpen_ManyProcesses opens one new store folder from many processes
// (this test binary again) at the same moment, round after round: in each
// round every process opens the round's new folder, creates a session of
// its own, appends to it and closes the store. They make the folder, the
// namespace's folder and the journal folder, and take journals, at the
// same time.
func TestOpen_ManyProcesses(t *testing.T) {
	if os.Getenv(openChildEnv) != "" {
		newJournalSize = minJournalSize // each process makes a journal: a small one
	}
	storetest.OpenTogether(t, openChildEnv, 6, 60, "store", func(ctx context.Context, path string, opts cairn.StoreOptions) (cairn.Store, error) {
		return Open(ctx, path, opts)
	})
}
