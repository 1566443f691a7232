package crypt_test

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/longterm/lttest"
	"github.com/cairnhq/cairn/store/crypt"
	"github.com/cairnhq/cairn/store/crypt/crypttest"
	"github.com/cairnhq/cairn/store/memory"
	_ "github.com/cairnhq/cairn/store/sqlite" // sqlite://
	"github.com/cairnhq/cairn/store/storetest"
)

// TestLongTermConformance runs the long-term memory suite through the
// encrypting store, over the memory backend and over SQLite (whose text
// index then holds the hashes of words).
func TestLongTermConformance(t *testing.T) {
	ring := crypttest.NewKeyring(t)
	t.Run("memory", func(t *testing.T) {
		db := storetest.PerTest(func(*testing.T) *memory.DB { return memory.NewDB() })
		lttest.Run(t, lttest.Abilities{Sweep: true}, func(t *testing.T, opts longterm.Options) longterm.Store {
			inner, err := db(t).OpenLongTerm(longterm.Options{Now: opts.Now, MaxItemSize: crypt.InnerItemSize(opts.MaxItemSize)})
			if err != nil {
				t.Fatal(err)
			}
			s, err := crypt.WrapLongTerm(inner, ring, opts)
			return storetest.Opened(t, s, err)
		})
	})
	t.Run("sqlite", func(t *testing.T) {
		dbURL := func(t *testing.T) string { return "sqlite://" + filepath.Join(t.TempDir(), "cairn.db") }
		lttest.RunByURL(t, lttest.Abilities{Sweep: true}, dbURL, crypttest.LongTermOpener(ring))
	})
}

// TestLongTerm_OpenWithoutKey: longterm.Open refuses a store whose memory
// is encrypted (its items would read as sealed tokens, its keys as items),
// and opens it with Sealed, for a wrapper; an unencrypted store opens.
func TestLongTerm_OpenWithoutKey(t *testing.T) {
	ctx := t.Context()
	u := "sqlite://" + filepath.Join(t.TempDir(), "cairn.db")
	plain, err := longterm.Open(ctx, u, longterm.Options{})
	if err != nil {
		t.Fatalf("open a store with no memory yet: %v", err)
	}
	if _, err := plain.Put(ctx, longterm.Item{Namespace: "users/ada", Key: "food", Text: "pizza"}, longterm.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	plain.Close()
	s, err := crypt.OpenLongTerm(ctx, u, longterm.Options{}, crypttest.NewKeyring(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, longterm.Item{Namespace: "users/bob", Key: "drink", Text: "tea"}, longterm.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err = longterm.Open(ctx, u, longterm.Options{})
	if !errors.Is(err, longterm.ErrEncrypted) || !strings.Contains(err.Error(), "crypt.OpenLongTerm") {
		t.Fatalf("longterm.Open of an encrypted store without its key: %v, want ErrEncrypted naming crypt.OpenLongTerm", err)
	}
	raw, err := longterm.Open(ctx, u, longterm.Options{Sealed: true})
	if err != nil {
		t.Fatalf("longterm.Open with Sealed: %v", err)
	}
	defer raw.Close()
	it, err := raw.Get(ctx, "users/bob", "drink")
	if err != nil || !sealedValue(it.Value) {
		t.Errorf("the sealed form read with Sealed: %s, %v; want a sealed token", it.Value, err)
	}
}

// sealedValue reports whether v is a JSON string holding a sealed token.
func sealedValue(v []byte) bool {
	var tok string
	if json.Unmarshal(v, &tok) != nil {
		return false
	}
	_, _, ok := crypt.ParseToken(tok)
	return ok
}
