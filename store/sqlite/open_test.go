package sqlite_test

import (
	"context"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/sqlite"
	"github.com/cairnhq/cairn/store/storetest"
)

// TestOpen_ManyProcesses opens one new database file from many processes
// (this test binary again) at the same moment, round after round: in each
// round every process opens the round's new file, creates a session of its
// own, appends to it and closes the store. Processes opening a new file
// at once used to fail with "database is locked (SQLITE_BUSY)": in one
// round of 30 or so, within 100 rounds in each of 6 runs.
func TestOpen_ManyProcesses(t *testing.T) {
	storetest.OpenTogether(t, "CAIRN_SQLITE_TEST_OPEN_CHILD", 6, 100, "cairn.db", openPath)
}

// openPath opens the database at path, with synchronous=NORMAL: the tests
// that open many stores need no fsync of each commit.
func openPath(ctx context.Context, path string, opts cairn.StoreOptions) (cairn.Store, error) {
	return sqlite.Open(ctx, path, sqlite.Options{StoreOptions: opts, Synchronous: "NORMAL"})
}
