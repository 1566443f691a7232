package sessions_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/sessions"
	"github.com/cairnhq/cairn/store/memory"
	"github.com/cairnhq/cairn/store/storetest"
)

// hidden hides every optional ability of the store it holds.
type hidden struct{ cairn.Store }

func TestSearch(t *testing.T) {
	ctx := t.Context()
	clock := storetest.NewClock()
	st, err := memory.New(cairn.StoreOptions{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	write := func(id, team, text string) {
		t.Helper()
		if err := st.Create(ctx, cairn.SessionMeta{ID: id, Labels: map[string]string{"team": team}}); err != nil {
			t.Fatal(err)
		}
		if err := st.Append(ctx, id, 0, storetest.UserTurn(0, "r1", text)...); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Minute)
	}
	long := strings.Repeat("filler words here ", 30) + "the Quokka went home " + strings.Repeat("more filler ", 30)
	write("s1", "a", long)
	write("s2", "b", "quokka quokka")
	write("s3", "a", "no match")
	for i := range 60 {
		write(fmt.Sprintf("m%02d", i), "b", "quokka and friends")
	}
	write("s4", "a", "quokka at last")

	got, err := sessions.Search(ctx, st, "QUOKKA", sessions.SearchOptions{Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Session.ID != "s2" || got[0].Seq != 2 || got[0].Kind != cairn.KindMessageUser || got[0].Snippet != "quokka quokka" {
		t.Fatalf("Search = %+v, want s2 first at its user message, and 3 in all", got)
	}

	// Filters are applied after the ranking, reading as many hits as
	// they need: the sessions of team a are below 60 of team b.
	got, err = sessions.Search(ctx, st, "quokka", sessions.SearchOptions{Labels: map[string]string{"team": "a"}})
	if err != nil {
		t.Fatal(err)
	}
	if ids := foundIDs(got); ids != "s4 s1" {
		t.Errorf("team a: %s, want s4 s1", ids)
	}
	snip := got[1].Snippet
	if !strings.Contains(snip, "the Quokka went home") || !strings.HasPrefix(snip, "…") || !strings.HasSuffix(snip, "…") || len([]rune(snip)) > 200 {
		t.Errorf("snippet of a long message: %q", snip)
	}
	got, err = sessions.Search(ctx, st, "quokka", sessions.SearchOptions{UpdatedAfter: clock.Now().Add(-90 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if ids := foundIDs(got); ids != "s4" {
		t.Errorf("updated in the last 90s: %s, want s4", ids)
	}
	got, err = sessions.Search(ctx, st, "quokka", sessions.SearchOptions{Status: []cairn.Status{cairn.StatusFailed}})
	if err != nil || len(got) != 0 {
		t.Errorf("status failed: %v, %v; want none", foundIDs(got), err)
	}
	got, err = sessions.Search(ctx, st, "?!", sessions.SearchOptions{})
	if err != nil || got == nil || len(got) != 0 {
		t.Errorf("a query without a word: %#v, %v; want an empty list", got, err)
	}
	if _, err := sessions.Search(ctx, hidden{st}, "quokka", sessions.SearchOptions{}); !errors.Is(err, sessions.ErrNoSearch) {
		t.Errorf("a store without search: %v, want ErrNoSearch", err)
	}
}

func foundIDs(fs []sessions.Found) string {
	var ids []string
	for _, f := range fs {
		ids = append(ids, f.Session.ID)
	}
	return strings.Join(ids, " ")
}

func TestSnippet(t *testing.T) {
	words := map[string]bool{"naïve": true}
	for _, tt := range []struct{ text, want string }{
		{"a  Naïve\n text", "a Naïve text"},
		{"nothing here", "nothing here"},
		{strings.Repeat("x ", 100) + "naïve" + strings.Repeat(" y", 100), "…" + strings.Repeat("x ", 27) + "naïve" + strings.Repeat(" y", 51) + "…"},
	} {
		if got := sessions.Snippet(tt.text, words, 160); got != tt.want {
			t.Errorf("Snippet(%.30q…) =\n%q, want\n%q", tt.text, got, tt.want)
		}
	}
}
