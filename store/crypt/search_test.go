package crypt_test

import (
	"errors"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/sessions"
	"github.com/cairnhq/cairn/store/crypt"
	"github.com/cairnhq/cairn/store/crypt/crypttest"
	"github.com/cairnhq/cairn/store/memory"
	"github.com/cairnhq/cairn/store/storetest"
)

// TestSealed_NotSearched: the events an encrypting store writes give the
// store beneath no text to index (cairn.Event.SearchText is "" for each),
// so that a store that searches finds none of a sealed session's words,
// and the wrapper offers no search of its own. A session written in clear
// to the same store is found.
func TestSealed_NotSearched(t *testing.T) {
	mem, keys := memoryWithKeys(t)
	s, err := crypt.Wrap(mem, crypt.Options{Keyring: crypttest.NewKeyring(t), Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.(driver.Searcher); ok {
		t.Errorf("the encrypting store offers search")
	}
	ctx := t.Context()
	if err := s.Create(ctx, cairn.SessionMeta{ID: "sealed"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "sealed", 0, storetest.Conversation(0, "r1", "zebracorn secrets")...); err != nil {
		t.Fatal(err)
	}
	rec, err := mem.Load(ctx, "sealed", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range rec.Events {
		if got := e.SearchText(); got != "" {
			t.Errorf("sealed seq %d (%s): SearchText %q, want \"\"", e.Seq, e.Kind, got)
		}
	}
	for _, q := range []string{"zebracorn", "secrets", "cairn1", "héllo", "arithmetic", "appended"} {
		if hits, err := mem.Search(ctx, q, 10); err != nil || len(hits) != 0 {
			t.Errorf("Search(%q) under the sealed session = %v, %v; want none", q, hits, err)
		}
	}
	// The same words in clear, through the store itself, are found.
	if err := mem.Create(ctx, cairn.SessionMeta{ID: "clear"}); err != nil {
		t.Fatal(err)
	}
	if err := mem.Append(ctx, "clear", 0, storetest.Conversation(0, "r1", "zebracorn secrets")...); err != nil {
		t.Fatal(err)
	}
	if hits, err := mem.Search(ctx, "zebracorn", 10); err != nil || len(hits) != 1 || hits[0].ID != "clear" {
		t.Errorf("Search(zebracorn) = %v, %v; want the clear session", hits, err)
	}
}

// TestGuard_Searches: a guard (no keyring) wraps a store whose sessions
// are in clear, and sessions.Search searches through it; an encrypting
// store refuses with sessions.ErrNoSearch.
func TestGuard_Searches(t *testing.T) {
	mem, keys := memoryWithKeys(t)
	guard, err := crypt.Wrap(mem, crypt.Options{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := guard.Create(ctx, cairn.SessionMeta{ID: "clear"}); err != nil {
		t.Fatal(err)
	}
	if err := guard.Append(ctx, "clear", 0, storetest.UserTurn(0, "r1", "zebracorn")...); err != nil {
		t.Fatal(err)
	}
	found, err := sessions.Search(ctx, guard, "zebracorn", sessions.SearchOptions{})
	if err != nil || len(found) != 1 || found[0].Session.ID != "clear" || found[0].Seq != 2 {
		t.Errorf("search through a guard: %+v, %v; want the session at seq 2", found, err)
	}
	enc, err := crypt.Wrap(mem, crypt.Options{Keyring: crypttest.NewKeyring(t), Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sessions.Search(ctx, enc, "zebracorn", sessions.SearchOptions{}); !errors.Is(err, sessions.ErrNoSearch) {
		t.Errorf("search through an encrypting store: %v, want sessions.ErrNoSearch", err)
	}
}

// memoryWithKeys returns a memory store's default namespace and its key
// namespace, on one DB.
func memoryWithKeys(t *testing.T) (mem, keys *memory.Store) {
	t.Helper()
	db := memory.NewDB()
	mem, err := db.Open(cairn.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if keys, err = db.Open(cairn.StoreOptions{Namespace: crypt.KeyNamespace("")}); err != nil {
		t.Fatal(err)
	}
	return mem, keys
}
