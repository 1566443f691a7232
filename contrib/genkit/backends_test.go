package cairngenkit_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cairnhq/cairn"
	_ "github.com/cairnhq/cairn/store/all"
)

// backend is a store the tests run on: a URL and a namespace of the
// test's own, so that tests running at once on a shared server never meet.
type backend struct {
	name string
	url  string
	ns   string
}

// backends are the stores every test runs on: sqlite in a temporary
// folder, and postgres and redis on the servers CAIRN_TEST_POSTGRES and
// CAIRN_TEST_REDIS name (skipped, naming the variable, when unset).
var backends = []struct {
	name string
	env  string // "" for sqlite
}{
	{"sqlite", ""},
	{"postgres", "CAIRN_TEST_POSTGRES"},
	{"redis", "CAIRN_TEST_REDIS"},
}

// forEach runs fn on every backend, in a subtest named for it.
func forEach(t *testing.T, fn func(t *testing.T, b backend)) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			b := backend{name: be.name, ns: "genkit_" + cairn.NewID()[24:]}
			if be.env == "" {
				b.url = "sqlite://" + filepath.ToSlash(filepath.Join(t.TempDir(), "cairn.db"))
			} else {
				b.url = os.Getenv(be.env)
				if b.url == "" {
					t.Skipf("%s is not set: set it to a %s server's URL to run this test", be.env, be.name)
				}
			}
			fn(t, b)
		})
	}
}

// open opens b's store, closed when the test ends.
func (b backend) open(t *testing.T) cairn.Store {
	t.Helper()
	st, err := cairn.Open(t.Context(), b.url, cairn.StoreOptions{Namespace: b.ns})
	if err != nil {
		t.Fatalf("open %s store: %v", b.name, err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// benchBackend opens the backend name for a benchmark, in a namespace of
// its own, or skips it as forEach does.
func benchBackend(b *testing.B, name, env string) cairn.Store {
	b.Helper()
	url := "sqlite://" + filepath.ToSlash(filepath.Join(b.TempDir(), "cairn.db"))
	if env != "" {
		if url = os.Getenv(env); url == "" {
			b.Skipf("%s is not set: set it to a %s server's URL to run this benchmark", env, name)
		}
	}
	st, err := cairn.Open(b.Context(), url, cairn.StoreOptions{Namespace: "genkit_" + cairn.NewID()[24:]})
	if err != nil {
		b.Fatalf("open %s store: %v", name, err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}
