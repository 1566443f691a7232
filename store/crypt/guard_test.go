package crypt_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/crypt"
	"github.com/cairnhq/cairn/store/crypt/crypttest"
	"github.com/cairnhq/cairn/store/storetest"
)

// TestOpen_GuardRefusesEncryptedNamespace: once a session of a namespace is
// sealed, a process without the key can neither read, list, write, create
// nor delete there: Open says which master keys the namespace uses. Another
// namespace of the same store is not affected.
func TestOpen_GuardRefusesEncryptedNamespace(t *testing.T) {
	url := "sqlite://" + filepath.Join(t.TempDir(), "c.db")
	k1, _ := crypt.GenerateKey()
	ring, _ := crypt.NewKeyring(k1)
	keyed, err := crypt.Open(t.Context(), url, cairn.StoreOptions{Namespace: "enc"}, ring)
	if err != nil {
		t.Fatal(err)
	}
	defer keyed.Close()

	// A namespace whose sessions are only created holds nothing sealed yet.
	if err := keyed.Create(t.Context(), cairn.SessionMeta{ID: "e0"}); err != nil {
		t.Fatal(err)
	}
	guard, err := crypt.Open(t.Context(), url, cairn.StoreOptions{Namespace: "enc"}, nil)
	if err != nil {
		t.Fatalf("Open without a key before anything is sealed: %v", err)
	}
	defer guard.Close()

	write(t, keyed, "e1", crypttest.Marker())

	_, err = crypt.Open(t.Context(), url, cairn.StoreOptions{Namespace: "enc"}, nil)
	var ee *crypt.EncryptedError
	if !errors.As(err, &ee) || !errors.Is(err, crypt.ErrEncrypted) || ee.Namespace != "enc" || len(ee.KeyIDs) != 1 || ee.KeyIDs[0] != ring.Current() {
		t.Fatalf("Open without a key: got %v, want an EncryptedError for namespace enc naming key %s", err, ring.Current())
	}
	// The guard opened before the first seal refuses the session it meets
	// and, at its next Create, the namespace.
	if _, err := guard.Load(t.Context(), "e1", 0); !errors.Is(err, cairn.ErrSealed) {
		t.Errorf("guard Load of a sealed session: got %v, want ErrSealed", err)
	}
	if err := guard.Append(t.Context(), "e1", 13, storetest.Custom(14, "plain")); !errors.Is(err, crypt.ErrEncrypted) {
		t.Errorf("guard Append to a sealed session: got %v, want ErrEncrypted", err)
	}
	if err := guard.Create(t.Context(), cairn.SessionMeta{ID: "p1"}); !errors.As(err, &ee) {
		t.Errorf("guard Create in an encrypted namespace: got %v, want an EncryptedError", err)
	}
	for _, op := range []func() error{
		func() error { _, err := guard.List(t.Context(), cairn.ListOptions{}); return err },
		func() error { return guard.Delete(t.Context(), "e1") },
	} {
		if err := op(); !errors.Is(err, crypt.ErrEncrypted) || !strings.Contains(err.Error(), ring.Current()) {
			t.Errorf("guard after the namespace was marked: got %v, want ErrEncrypted naming %s", err, ring.Current())
		}
	}
	if rec, err := keyed.Load(t.Context(), "e1", 0); err != nil || len(rec.Events) != 13 {
		t.Fatalf("the session with the key: %v", err)
	}

	// Another namespace of the same file is not encrypted.
	other, err := crypt.Open(t.Context(), url, cairn.StoreOptions{Namespace: "plain"}, nil)
	if err != nil {
		t.Fatalf("Open of an unencrypted namespace without a key: %v", err)
	}
	defer other.Close()
	if err := other.Create(t.Context(), cairn.SessionMeta{ID: "p1"}); err != nil {
		t.Fatal(err)
	}

	// The marker's ID is reserved; rekey and sweep pass it by and add the
	// new key to it.
	if err := keyed.Create(t.Context(), cairn.SessionMeta{ID: "_cairn_namespace_encrypted"}); !errors.Is(err, cairn.ErrInvalidID) {
		t.Errorf("Create of the marker's ID: got %v, want ErrInvalidID", err)
	}
	k2, _ := crypt.GenerateKey()
	both, _ := crypt.NewKeyring(k2, k1)
	re, err := crypt.Open(t.Context(), url, cairn.StoreOptions{Namespace: "enc"}, both)
	if err != nil {
		t.Fatal(err)
	}
	defer re.Close()
	if res, err := re.Rekey(t.Context(), nil); err != nil || res.Sessions != 1 {
		t.Fatalf("Rekey = %+v, %v; want 1 session (the marker is not one)", res, err)
	}
	if _, err := re.Sweep(t.Context()); err != nil {
		t.Fatal(err)
	}
	_, err = crypt.Open(t.Context(), url, cairn.StoreOptions{Namespace: "enc"}, nil)
	if !errors.As(err, &ee) || strings.Join(ee.KeyIDs, ",") != ring.Current()+","+k2.ID {
		t.Errorf("after rekey and sweep: got %v, want an EncryptedError naming %s and %s", err, ring.Current(), k2.ID)
	}
}

// TestOpen_GuardFindsUnmarkedNamespace: a namespace encrypted before
// namespaces were marked is found by its data keys.
func TestOpen_GuardFindsUnmarkedNamespace(t *testing.T) {
	url := "sqlite://" + filepath.Join(t.TempDir(), "c.db")
	ring := crypttest.NewKeyring(t)
	keyed, err := crypt.Open(t.Context(), url, cairn.StoreOptions{}, ring)
	if err != nil {
		t.Fatal(err)
	}
	defer keyed.Close()
	write(t, keyed, "e1", crypttest.Marker())
	keys, err := cairn.Open(t.Context(), url, cairn.StoreOptions{Namespace: crypt.KeyNamespace("")})
	if err != nil {
		t.Fatal(err)
	}
	defer keys.Close()
	if err := keys.Delete(t.Context(), "_cairn_namespace_encrypted"); err != nil {
		t.Fatalf("drop the marker: %v", err)
	}
	_, err = crypt.Open(t.Context(), url, cairn.StoreOptions{}, nil)
	var ee *crypt.EncryptedError
	if !errors.As(err, &ee) || len(ee.KeyIDs) != 1 || ee.KeyIDs[0] != ring.Current() {
		t.Errorf("Open without a key of an unmarked encrypted namespace: got %v, want an EncryptedError naming %s", err, ring.Current())
	}
}

// TestOpen_GuardLongNamespace: a namespace too long to have a key
// namespace was never encrypted; without a key it opens as it did.
func TestOpen_GuardLongNamespace(t *testing.T) {
	ns := strings.Repeat("n", 128)
	s, err := crypt.Open(t.Context(), "sqlite://"+filepath.Join(t.TempDir(), "c.db"), cairn.StoreOptions{Namespace: ns}, nil)
	if err != nil {
		t.Fatalf("Open of namespace of 128 characters without a key: %v", err)
	}
	defer s.Close()
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: "a"}); err != nil {
		t.Fatal(err)
	}
}
