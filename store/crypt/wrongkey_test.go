package crypt_test

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/store/crypt"
	"github.com/cairnhq/cairn/store/crypt/crypttest"
	"github.com/cairnhq/cairn/store/memory"
	"github.com/cairnhq/cairn/store/storetest"
)

// keyedBackend opens an encrypting store over one backend's data, and
// says what a process without a key is told of the namespace.
type keyedBackend struct {
	open func(t *testing.T, ring *crypt.Keyring) crypt.Store
	// keys returns the master key IDs that a process without a key is
	// told the namespace is encrypted under: the marker's.
	keys func(t *testing.T) []string
}

// keyedBackends is backends with a look at the namespace's marker.
func keyedBackends(t *testing.T) map[string]keyedBackend {
	path := filepath.Join(t.TempDir(), "cairn.db")
	open := backendsAt(t, path)
	db := memory.NewDB()
	markerOf := func(t *testing.T, err error) []string {
		t.Helper()
		var ee *crypt.EncryptedError
		if !errors.As(err, &ee) {
			t.Fatalf("a process without a key: got %v, want an EncryptedError", err)
		}
		return ee.KeyIDs
	}
	return map[string]keyedBackend{
		"memory": {
			open: func(t *testing.T, ring *crypt.Keyring) crypt.Store {
				return wrapMemory(t, db, ring, cairn.StoreOptions{})
			},
			keys: func(t *testing.T) []string {
				_, err := wrapMemory(t, db, nil, cairn.StoreOptions{}).List(t.Context(), cairn.ListOptions{})
				return markerOf(t, err)
			},
		},
		"sqlite": {
			open: open["sqlite"],
			keys: func(t *testing.T) []string {
				_, err := crypt.Open(t.Context(), "sqlite://"+path, cairn.StoreOptions{}, nil)
				return markerOf(t, err)
			},
		},
	}
}

// namedKey returns the key id whose secret is fill repeated.
func namedKey(t *testing.T, id, fill string) crypt.Key {
	t.Helper()
	k, err := crypt.NewKey(id, []byte(strings.Repeat(fill, crypt.KeySize)))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// keyring returns a keyring whose current key is current.
func keyring(t *testing.T, current crypt.Key, old ...crypt.Key) *crypt.Keyring {
	t.Helper()
	r, err := crypt.NewKeyring(current, old...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestStore_WrongKeyWrites: in a namespace sealed under k1, a store whose
// key is k2 may read nothing (as before) and now write nothing either:
// Create, Append, a snapshot, a lease, a claim, Delete, Sweep and Repair
// are each refused with a *WrongKeyError naming the namespace, both keys,
// k2's fingerprint and rekey; nothing reaches the wrapped store, and the
// namespace's marker still names k1 alone. Another key given k1's ID is
// refused too. k1 goes on writing, and rekey, run with k1, still adds a
// key.
func TestStore_WrongKeyWrites(t *testing.T) {
	for name, b := range keyedBackends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			k1, k2 := namedKey(t, "k1", "1"), namedKey(t, "k2", "2")
			ring1, ring2 := keyring(t, k1), keyring(t, k2)
			s1 := b.open(t, ring1)
			write(t, s1, "a", crypttest.Marker())
			if got := b.keys(t); !slices.Equal(got, []string{"k1"}) {
				t.Fatalf("the marker names %v, want [k1]", got)
			}

			s2 := b.open(t, ring2)
			refused := func(op string, err error) {
				t.Helper()
				var wk *crypt.WrongKeyError
				if !errors.Is(err, crypt.ErrWrongKey) || !errors.As(err, &wk) {
					t.Errorf("%s with key k2: got %v, want a WrongKeyError", op, err)
					return
				}
				for _, w := range []string{"namespace default", "master key k1", "key k2", k2.Fingerprint(), "rekey"} {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("%s with key k2: error %q does not say %q", op, err, w)
					}
				}
			}
			refused("Create", s2.Create(ctx, cairn.SessionMeta{ID: "e3"}))
			if _, err := s1.Inner().Load(ctx, "e3", 0); !errors.Is(err, cairn.ErrNotFound) {
				t.Errorf("after a refused Create the wrapped store holds e3: %v", err)
			}
			refused("Append", s2.Append(ctx, "a", 13, storetest.Custom(14, "x")))
			// Both backends keep snapshots and leases; memory has claims.
			refused("PutSnapshot", s2.(cairn.Snapshotter).PutSnapshot(ctx, "a", cairn.Snapshot{Seq: 13, Data: []byte(`{}`)}))
			_, err := s2.(cairn.Leaser).Acquire(ctx, "a", "h2", time.Minute)
			refused("Acquire", err)
			_, err = s2.(cairn.Leaser).Takeover(ctx, "a", "h2", time.Minute)
			refused("Takeover", err)
			if c, ok := s2.(driver.Claimer); ok {
				_, err := c.ClaimNext(ctx, "h2", time.Minute, cairn.ListOptions{})
				refused("ClaimNext", err)
			}
			refused("Delete", s2.Delete(ctx, "a"))
			_, err = s2.Sweep(ctx)
			refused("Sweep", err)
			_, err = s2.Repair(ctx, "a", crypt.RepairOptions{})
			refused("Repair", err)

			// Nothing changed: a is whole and k1 alone is the namespace's.
			if rec, err := s1.Load(ctx, "a", 0); err != nil || len(rec.Events) != 13 {
				t.Fatalf("a with k1 after k2's writes: %v", err)
			}
			if got := b.keys(t); !slices.Equal(got, []string{"k1"}) {
				t.Errorf("after k2's writes the marker names %v, want [k1]", got)
			}

			// Another key that calls itself k1 is not k1.
			fake := namedKey(t, "k1", "3")
			fakeRing := keyring(t, fake)
			err = b.open(t, fakeRing).Create(ctx, cairn.SessionMeta{ID: "e4"})
			var wk *crypt.WrongKeyError
			if !errors.As(err, &wk) || !wk.SameID || !strings.Contains(err.Error(), fake.Fingerprint()) {
				t.Errorf("Create with another key of ID k1: got %v, want a WrongKeyError for a key of the same ID", err)
			}

			// Rekey with a keyring that holds none of the namespace's keys
			// is refused before it adds its key.
			k3 := namedKey(t, "k3", "4")
			ring32 := keyring(t, k3, k2)
			if _, err := b.open(t, ring32).Rekey(ctx, nil); !errors.Is(err, crypt.ErrWrongKey) || !strings.Contains(err.Error(), "k1") {
				t.Errorf("Rekey with keys k3 and k2 of a namespace of k1: got %v, want ErrWrongKey naming k1", err)
			}
			if got := b.keys(t); !slices.Equal(got, []string{"k1"}) {
				t.Errorf("after a refused rekey the marker names %v, want [k1]", got)
			}

			// k1 still writes; rekey run with k1 adds k2, which then writes.
			write(t, s1, "b", crypttest.Marker())
			ring21 := keyring(t, k2, k1)
			if res, err := b.open(t, ring21).Rekey(ctx, nil); err != nil || res.Rewrapped != 2 {
				t.Fatalf("Rekey with k1 to k2 = %+v, %v; want 2 data keys rewrapped", res, err)
			}
			if got := b.keys(t); !slices.Equal(got, []string{"k1", "k2"}) {
				t.Errorf("after rekey the marker names %v, want [k1 k2]", got)
			}
			write(t, b.open(t, ring2), "c", crypttest.Marker())
		})
	}
}

// TestStore_CheckSessionsWrongKey: a session whose data key is wrapped
// only by a key the keyring lacks (k2's, written while a rekey to k2 was
// under way) is reported by CheckSessions and Check with k1, naming the
// key it needs; the sessions k1 opens are not.
func TestStore_CheckSessionsWrongKey(t *testing.T) {
	for name, b := range keyedBackends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			k1, k2 := namedKey(t, "k1", "1"), namedKey(t, "k2", "2")
			ring1, ring2 := keyring(t, k1), keyring(t, k2)
			ring21 := keyring(t, k2, k1)
			s1 := b.open(t, ring1)
			write(t, s1, "a", crypttest.Marker())
			if _, err := b.open(t, ring21).Rekey(ctx, nil); err != nil {
				t.Fatal(err)
			}
			write(t, b.open(t, ring2), "e3", crypttest.Marker())

			rep, err := s1.CheckSessions(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			reps := map[string]*driver.CheckReport{"CheckSessions": rep}
			if c, ok := s1.(driver.Checker); ok {
				if reps["Check"], err = c.Check(ctx); err != nil {
					t.Fatal(err)
				}
			}
			for op, rep := range reps {
				if rep.Sessions != 2 || len(rep.Problems) != 1 {
					t.Fatalf("%s with k1: %d sessions, problems %+v; want 2 sessions and e3's problem", op, rep.Sessions, rep.Problems)
				}
				p := rep.Problems[0]
				if p.Session != "e3" || !p.Damage || !strings.Contains(p.Msg, "wrapped by key k2") || !strings.Contains(p.Fix, "key k2") {
					t.Errorf("%s with k1: problem %+v; want e3 damaged, wrapped by key k2, with the key as the fix", op, p)
				}
			}
			if rep, err := s1.CheckSessions(ctx, 1); err != nil || rep.Sessions != 1 {
				t.Errorf("CheckSessions of 1 session: %+v, %v; want 1 session checked", rep, err)
			}
			if rep, err := b.open(t, ring21).CheckSessions(ctx, 0); err != nil || len(rep.Problems) != 0 {
				t.Errorf("CheckSessions with k2 and k1: %+v, %v; want no problem", rep, err)
			}
		})
	}
}
