package cli

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/memory"
)

// TestStoreShortIDs checks the short forms StoreShortIDs finds through
// prefix questions against those of every ID at once (shortIDs), on IDs
// crowded enough to share long starts: made in the same millisecond, or
// differing only near their end.
func TestStoreShortIDs(t *testing.T) {
	store, err := memory.New(cairn.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	var ids []string
	add := func(id string) {
		if err := store.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for range 200 {
		add(cairn.NewID())
	}
	base := "0192f3a4-5b6c-7d8e-9f01-23456789ab"
	for i := range 20 {
		add(fmt.Sprintf("%s%02x", base, i*7))
	}
	add("0192f3a4-5b6c-7d8e-9f01-2345678") // not generated: shown whole
	add("plain-name")
	for range 50 {
		add(fmt.Sprintf("0192f3a%d-%04x-7000-8000-000000000000", r.IntN(10), r.IntN(1<<16)))
	}
	var infos []cairn.SessionInfo
	for _, id := range ids {
		infos = append(infos, cairn.SessionInfo{ID: id})
	}
	got, err := StoreShortIDs(t.Context(), store, infos)
	if err != nil {
		t.Fatal(err)
	}
	want := shortIDs(ids)
	if !maps.Equal(got, want) {
		for _, id := range slices.Sorted(maps.Keys(want)) {
			if got[id] != want[id] {
				t.Errorf("%s: got %q, want %q", id, got[id], want[id])
			}
		}
	}
	// Each short form names one session: the commands that take a prefix
	// find exactly it (a whole ID is found as itself first).
	for id, s := range got {
		if s == id {
			continue
		}
		page, err := store.List(t.Context(), cairn.ListOptions{Prefix: s, Limit: 2})
		if err != nil || len(page.Sessions) != 1 || page.Sessions[0].ID != id {
			t.Errorf("prefix %q of %s names %v (%v)", s, id, page.Sessions, err)
		}
	}
}

// shortIDs is the short forms computed from every ID at once, the way
// sessions list did before it paged: the reference StoreShortIDs must match.
// It returns the form of each ID to show people: a generated ID (a
// UUID, whose first characters are its creation time) is cut to the
// shortest prefix of at least 8 characters that no other of ids starts
// with, as git shows commits, so that it still names one session for the
// commands that take a prefix; any other ID is shown whole.
func shortIDs(ids []string) map[string]string {
	sorted := slices.Clone(ids)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	out := make(map[string]string, len(ids))
	for i, id := range sorted {
		if !uuidRe.MatchString(id) {
			out[id] = id
			continue
		}
		// The longest prefix shared with a neighbour in sorted order is
		// the longest shared with any ID.
		n := 0
		if i > 0 {
			n = max(n, commonPrefix(id, sorted[i-1]))
		}
		if i+1 < len(sorted) {
			n = max(n, commonPrefix(id, sorted[i+1]))
		}
		out[id] = shortAt(id, max(minShort, n+1))
	}
	return out
}
