package crypt_test

import (
	"sync"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/crypt"
	"github.com/cairnhq/cairn/store/memory"
	"github.com/cairnhq/cairn/store/storetest"
)

func newKeyring(t *testing.T) *crypt.Keyring {
	t.Helper()
	k, err := crypt.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	r, err := crypt.NewKeyring(k)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// wrapMemory opens an encrypting store over db with ring.
func wrapMemory(t testing.TB, db *memory.DB, ring *crypt.Keyring, opts cairn.StoreOptions) crypt.Store {
	t.Helper()
	if opts.Namespace == "" {
		opts.Namespace = cairn.DefaultNamespace
	}
	inner := opts
	inner.Limits = crypt.InnerLimits(opts.Limits)
	data, err := db.Open(inner)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := db.Open(cairn.StoreOptions{Namespace: crypt.KeyNamespace(opts.Namespace), Now: opts.Now})
	if err != nil {
		t.Fatal(err)
	}
	s, err := crypt.Wrap(data, crypt.Options{Keyring: ring, Keys: keys, Namespace: opts.Namespace, Limits: opts.Limits})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestStore_Conformance(t *testing.T) {
	var mu sync.Mutex
	dbs := map[*testing.T]*memory.DB{}
	ring := newKeyring(t)
	storetest.Run(t, storetest.Abilities{Leases: true, Claims: true, Sweep: true, Snapshots: true}, func(t *testing.T, opts cairn.StoreOptions) cairn.Store {
		mu.Lock()
		db := dbs[t]
		if db == nil {
			db = memory.NewDB()
			dbs[t] = db
		}
		mu.Unlock()
		return wrapMemory(t, db, ring, opts)
	})
}
