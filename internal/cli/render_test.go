package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/steps"
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

// TestTranscriptLines_Steps: the records of durable steps read as steps
// in a transcript: position, name, start, result or error, and whether
// the caller resolved them; other custom types stay custom.
func TestTranscriptLines_Steps(t *testing.T) {
	ctx := t.Context()
	store, err := memory.New(cairn.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := steps.Open(ctx, store, "t", steps.Options{Name: "loop"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := steps.Run(ctx, s, "fetch", func(context.Context) (map[string]int, error) { return map[string]int{"n": 3}, nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := steps.Run(ctx, s, "send", func(context.Context) (bool, error) { return false, errors.New("refused") }, steps.NotIdempotent()); err == nil {
		t.Fatal("no error")
	}
	if err := s.Finish(ctx, "ok"); err != nil {
		t.Fatal(err)
	}
	rec, err := store.Load(ctx, "t", 0)
	if err != nil {
		t.Fatal(err)
	}
	other := cairn.MustEvent(cairn.KindCustom, "r", cairn.Custom{Type: "myapp.note", Payload: json.RawMessage(`{"a":1}`)})
	other.Seq = int64(len(rec.Events) + 1)
	lines, err := TranscriptLines(append(rec.Events, other))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range lines[1:] {
		got = append(got, l.Who+": "+l.Text)
	}
	want := []string{
		`step: 1 fetch → {"n":3}`,
		`step: 2 send started`,
		`step: 2 send failed (error): refused`,
		`run: finished completed`,
		`custom: myapp.note {"a":1}`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("transcript\n got %q\nwant %q", got, want)
	}
	if !strings.HasPrefix(lines[0].Text, "started ") || !strings.Contains(lines[0].Text, "agent loop") {
		t.Errorf("first line %q", lines[0].Text)
	}
}
