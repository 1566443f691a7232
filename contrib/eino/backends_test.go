package eino_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/cairnhq/cairn"
	_ "github.com/cairnhq/cairn/store/all"
)

// backend is a store the tests run on, named by URL so that another
// process can open it too.
type backend struct {
	name string
	env  string // the variable that names its server; "" for sqlite
}

var backends = []backend{
	{name: "sqlite"},
	{name: "postgres", env: "CAIRN_TEST_POSTGRES"},
	{name: "redis", env: "CAIRN_TEST_REDIS"},
}

// url returns the backend's store URL, skipping the test, naming the
// variable, when the backend's server is not configured.
func (b backend) url(t *testing.T) string {
	t.Helper()
	if b.env == "" {
		return "sqlite://" + filepath.Join(t.TempDir(), "cairn.db")
	}
	u := os.Getenv(b.env)
	if u == "" {
		t.Skipf("%s is not set: no %s server to test on", b.env, b.name)
	}
	return u
}

// open opens the store of url, closed when the test ends.
func open(t *testing.T, url string) cairn.Store {
	t.Helper()
	st, err := cairn.Open(t.Context(), url, cairn.StoreOptions{})
	if err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// newID returns a session ID no other test uses, on a shared server too.
func newID(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

// cleanup deletes the sessions ids when the test ends.
func cleanup(t *testing.T, st cairn.Store, ids ...string) {
	t.Cleanup(func() {
		for _, id := range ids {
			_ = st.Delete(context.Background(), id)
		}
	})
}
