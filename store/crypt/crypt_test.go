package crypt_test

import (
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/crypt"
	"github.com/cairnhq/cairn/store/crypt/crypttest"
	"github.com/cairnhq/cairn/store/memory"
	"github.com/cairnhq/cairn/store/storetest"
)

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
	return storetest.Opened(t, s, err)
}

func TestStore_Conformance(t *testing.T) {
	db := storetest.PerTest(func(*testing.T) *memory.DB { return memory.NewDB() })
	ring := crypttest.NewKeyring(t)
	storetest.Run(t, storetest.Abilities{Leases: true, Claims: true, Sweep: true, Snapshots: true}, func(t *testing.T, opts cairn.StoreOptions) cairn.Store {
		return wrapMemory(t, db(t), ring, opts)
	})
}
