package eino_test

import (
	"bytes"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	eino "github.com/cairnhq/cairn/contrib/eino"
	"github.com/cairnhq/cairn/store/crypt"
	"github.com/cairnhq/cairn/store/memory"
)

// TestCheckPointStore_Encrypted: through store/crypt the checkpoint is
// ciphertext in the backend, read back with the key, and refused without
// it, naming the session.
func TestCheckPointStore_Encrypted(t *testing.T) {
	ctx := t.Context()
	inner, keys := newMem(t), newMem(t)
	key, err := crypt.NewKey("k1", bytes.Repeat([]byte{7}, crypt.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	ring, err := crypt.NewKeyring(key)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := crypt.Wrap(inner, crypt.Options{Keyring: ring, Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	secret := []byte("the graph's state: card 4111-1111")
	if err := eino.NewCheckPointStore(enc, "").Set(ctx, "cp", secret); err != nil {
		t.Fatal(err)
	}
	rec, err := inner.Load(ctx, "cp", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range rec.Events {
		if bytes.Contains(e.Data, []byte("4111")) || bytes.Contains(e.Data, []byte("dGhlIGdyYXBo")) {
			t.Fatalf("plaintext in the backend: %s", e.Data)
		}
	}
	if got, ok, err := eino.NewCheckPointStore(enc, "").Get(ctx, "cp"); err != nil || !ok || !bytes.Equal(got, secret) {
		t.Fatalf("Get with the key = %q, %v, %v", got, ok, err)
	}
	_, _, err = eino.NewCheckPointStore(inner, "").Get(ctx, "cp")
	var se *crypt.SealedError
	if !errors.As(err, &se) || se.Session != "cp" {
		t.Fatalf("Get without the key = %v; want a *crypt.SealedError naming the session", err)
	}
}

// TestCheckPointStore_TTL: a checkpoint expires with its session, at the
// store's TTL after its last Set.
func TestCheckPointStore_TTL(t *testing.T) {
	ctx := t.Context()
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	st, err := memory.New(cairn.StoreOptions{TTL: time.Hour, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cps := eino.NewCheckPointStore(st, "eino-")
	if err := cps.Set(ctx, "cp", []byte("one")); err != nil {
		t.Fatal(err)
	}
	if sid, _ := cps.SessionID("cp"); sid != "eino-cp" {
		t.Fatalf("SessionID = %q, want the prefix before the ID", sid)
	}
	advance(50 * time.Minute)
	if err := cps.Set(ctx, "cp", []byte("two")); err != nil {
		t.Fatal(err)
	}
	advance(50 * time.Minute)
	if got, ok, err := cps.Get(ctx, "cp"); err != nil || !ok || string(got) != "two" {
		t.Fatalf("Get 50 minutes after the last Set = %q, %v, %v; want two", got, ok, err)
	}
	advance(11 * time.Minute)
	if got, ok, err := cps.Get(ctx, "cp"); err != nil || ok {
		t.Fatalf("Get past the TTL = %q, %v, %v; want not found", got, ok, err)
	}
}

func newMem(t *testing.T) cairn.Store {
	t.Helper()
	st, err := memory.New(cairn.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}
