package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
)

func listAll(t *testing.T, s cairn.Store, opts cairn.ListOptions) []cairn.SessionInfo {
	t.Helper()
	var out []cairn.SessionInfo
	for range 100 {
		page, err := s.List(t.Context(), opts)
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		out = append(out, page.Sessions...)
		if page.Next == "" {
			return out
		}
		opts.Cursor = page.Next
	}
	t.Fatal("List cursor never ended")
	return nil
}

func ids(infos []cairn.SessionInfo) []string {
	var out []string
	for _, i := range infos {
		out = append(out, i.ID)
	}
	return out
}

// testList checks the order (most recently updated first) and every field
// of the infos.
func testList(t *testing.T, h *harness) {
	s := h.store(t)
	created := h.clock.Now()
	a := newSession(t, s, map[string]string{"team": "a"})
	h.clock.Advance(time.Second)
	b := newSession(t, s, nil)
	h.clock.Advance(time.Second)
	c := newSession(t, s, nil)
	h.clock.Advance(time.Second)
	mustAppend(t, s, a, 0, Conversation(0, "r1", "a's first question")...)
	updatedA := h.clock.Now()
	h.clock.Advance(time.Second)
	mustAppend(t, s, b, 0, UserTurn(0, "r1", "b's question")...)
	mustAppend(t, s, b, 4, UserTurn(4, "r2", "b's second")[:2]...)
	h.clock.Advance(time.Second)

	infos := listAll(t, s, cairn.ListOptions{})
	if got, want := ids(infos), []string{b, a, c}; !slices.Equal(got, want) {
		t.Fatalf("List order = %v, want %v (most recently updated first)", got, want)
	}
	ia := infos[1]
	if ia.FirstMessage != "a's first question" {
		t.Errorf("first message = %q, want %q", ia.FirstMessage, "a's first question")
	}
	if ia.Status != cairn.StatusCompleted {
		t.Errorf("status after a finished run = %q, want completed", ia.Status)
	}
	if ia.Steps != 4 {
		t.Errorf("steps = %d, want 4 (2 model responses and 2 tool results)", ia.Steps)
	}
	if !ia.CreatedAt.Equal(created) || !ia.UpdatedAt.Equal(updatedA) {
		t.Errorf("created %v updated %v, want %v and %v", ia.CreatedAt, ia.UpdatedAt, created, updatedA)
	}
	if ia.Labels["team"] != "a" || ia.LastSeq != 16 {
		t.Errorf("labels %v last seq %d, want team=a and 16", ia.Labels, ia.LastSeq)
	}
	ib := infos[0]
	if ib.Status != cairn.StatusRunning || ib.FirstMessage != "b's question" || ib.Steps != 1 {
		t.Errorf("b: status %q first %q steps %d, want running, %q, 1", ib.Status, ib.FirstMessage, ib.Steps, "b's question")
	}
	if ic := infos[2]; ic.Status != cairn.StatusNew || ic.FirstMessage != "" || ic.Steps != 0 || ic.Labels == nil {
		t.Errorf("c: status %q first %q steps %d labels %v, want new, empty, 0, an empty map", ic.Status, ic.FirstMessage, ic.Steps, ic.Labels)
	}
	// An interrupted run shows as interrupted, an approval as awaiting.
	mustAppend(t, s, c, 0, Number(0, cairn.MustEvent(cairn.KindRunStarted, "r", cairn.RunStarted{RunID: "r"}),
		cairn.MustEvent(cairn.KindRunInterrupted, "r", cairn.RunInterrupted{Reason: cairn.InterruptCancelled}))...)
	if got := listAll(t, s, cairn.ListOptions{Status: []cairn.Status{cairn.StatusInterrupted}}); len(got) != 1 || got[0].ID != c {
		t.Errorf("interrupted sessions = %v, want [%s]", ids(got), c)
	}
}

// testListPaging pages through 7 sessions two at a time, with updates
// between pages, and sees each exactly once.
func testListPaging(t *testing.T, h *harness) {
	s := h.store(t)
	var want []string
	for range 7 {
		id := newSession(t, s, nil)
		want = append([]string{id}, want...)
		h.clock.Advance(time.Second)
	}
	// Two sessions with the same updated time are ordered by ID.
	same := []string{newSession(t, s, nil), newSession(t, s, nil)}
	slices.Sort(same)
	want = append([]string{same[1], same[0]}, want...)
	h.clock.Advance(time.Second)

	var got []string
	opts := cairn.ListOptions{Limit: 2}
	for page := 0; ; page++ {
		p, err := s.List(t.Context(), opts)
		if err != nil {
			t.Fatalf("List page %d: %v", page, err)
		}
		if len(p.Sessions) > 2 {
			t.Fatalf("page %d has %d sessions, limit 2", page, len(p.Sessions))
		}
		got = append(got, ids(p.Sessions)...)
		if p.Next == "" {
			break
		}
		opts.Cursor = p.Next
		if page > 10 {
			t.Fatal("too many pages")
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("paged list = %v\nwant %v", got, want)
	}
	if _, err := s.List(t.Context(), cairn.ListOptions{Cursor: "!!not a cursor"}); err == nil {
		t.Error("List with a malformed cursor succeeded")
	}
}

func testListFilters(t *testing.T, h *harness) {
	s := h.store(t)
	before := h.clock.Now()
	done := newSession(t, s, map[string]string{"env": "prod", "team": "x"})
	mustAppend(t, s, done, 0, UserTurn(0, "r", "q")...)
	h.clock.Advance(time.Minute)
	mid := h.clock.Now()
	h.clock.Advance(time.Minute)
	fresh := newSession(t, s, map[string]string{"env": "dev"})
	cases := []struct {
		name string
		opts cairn.ListOptions
		want []string
	}{
		{"status completed", cairn.ListOptions{Status: []cairn.Status{cairn.StatusCompleted}}, []string{done}},
		{"status new or completed", cairn.ListOptions{Status: []cairn.Status{cairn.StatusNew, cairn.StatusCompleted}}, []string{fresh, done}},
		{"label", cairn.ListOptions{Labels: map[string]string{"env": "prod"}}, []string{done}},
		{"two labels", cairn.ListOptions{Labels: map[string]string{"env": "prod", "team": "x"}}, []string{done}},
		{"label mismatch", cairn.ListOptions{Labels: map[string]string{"env": "prod", "team": "y"}}, nil},
		{"updated after", cairn.ListOptions{UpdatedAfter: mid}, []string{fresh}},
		{"updated before", cairn.ListOptions{UpdatedBefore: mid}, []string{done}},
		{"window", cairn.ListOptions{UpdatedAfter: before.Add(-time.Second), UpdatedBefore: h.clock.Now().Add(time.Second)}, []string{fresh, done}},
	}
	for _, c := range cases {
		if got := ids(listAll(t, s, c.opts)); !slices.Equal(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}

// testListLabelOrder checks that a List by label follows the sessions'
// updates: a labelled session that gets appended to comes first in its
// label's List, with one label or two, on every page.
func testListLabelOrder(t *testing.T, h *harness) {
	s := h.store(t)
	var oldest, want []string // want: the team=a sessions in List order
	for i := range 4 {
		labels := map[string]string{"team": "a", "env": "prod"}
		if i == 2 {
			labels = map[string]string{"team": "b", "env": "prod"}
		}
		id := newSession(t, s, labels)
		if labels["team"] == "a" {
			want = append([]string{id}, want...)
			oldest = append(oldest, id)
		}
		h.clock.Advance(time.Second)
	}
	byLabel := cairn.ListOptions{Labels: map[string]string{"team": "a"}, Limit: 1}
	if got := ids(listAll(t, s, byLabel)); !slices.Equal(got, want) {
		t.Fatalf("List(team=a) = %v, want %v", got, want)
	}
	// The oldest session of the label is appended to: it comes first.
	mustAppend(t, s, oldest[0], 0, UserTurn(0, "r", "q")...)
	want = append([]string{oldest[0]}, want[:len(want)-1]...)
	h.clock.Advance(time.Second)
	for _, labels := range []map[string]string{{"team": "a"}, {"team": "a", "env": "prod"}} {
		for _, limit := range []int{1, 2, 0} {
			o := cairn.ListOptions{Labels: labels, Limit: limit}
			if got := ids(listAll(t, s, o)); !slices.Equal(got, want) {
				t.Errorf("List(%v, limit %d) after an append to %s = %v, want %v", labels, limit, oldest[0], got, want)
			}
		}
	}
	// And again, for the one now last.
	mustAppend(t, s, oldest[1], 0, UserTurn(0, "r", "q")...)
	want = append([]string{oldest[1]}, want[:len(want)-1]...)
	if got := ids(listAll(t, s, byLabel)); !slices.Equal(got, want) {
		t.Errorf("List(team=a) after an append to %s = %v, want %v", oldest[1], got, want)
	}
	if got := ids(listAll(t, s, cairn.ListOptions{Labels: map[string]string{"team": "a"},
		Status: []cairn.Status{cairn.StatusCompleted}})); !slices.Equal(got, want[:2]) {
		t.Errorf("List(team=a, completed) = %v, want %v", got, want[:2])
	}
}

// testListPrefix checks ListOptions.Prefix: IDs that start with it, in
// List order, with the other filters and paging, and no character of an ID
// taken as a wildcard (an SQL LIKE would take '_' as one).
func testListPrefix(t *testing.T, h *harness) {
	s := h.store(t)
	create := func(id string, labels map[string]string) {
		t.Helper()
		if err := s.Create(t.Context(), cairn.SessionMeta{ID: id, CreatedAt: h.clock.Now(), Labels: labels}); err != nil {
			t.Fatalf("Create(%s): %v", id, err)
		}
		h.clock.Advance(time.Second)
	}
	for _, id := range []string{"ab-1", "ab-2", "abc", "a_b", "aXb", "A", "b", "ab"} {
		create(id, nil)
	}
	create("ab-3", map[string]string{"env": "prod"})
	mustAppend(t, s, "ab-2", 0, UserTurn(0, "r", "q")...)
	h.clock.Advance(time.Second)
	cases := []struct {
		name string
		opts cairn.ListOptions
		want []string
	}{
		{"prefix", cairn.ListOptions{Prefix: "ab"}, []string{"ab-2", "ab-3", "ab", "abc", "ab-1"}},
		{"prefix, paged by 2", cairn.ListOptions{Prefix: "ab", Limit: 2}, []string{"ab-2", "ab-3", "ab", "abc", "ab-1"}},
		{"a whole ID that starts others", cairn.ListOptions{Prefix: "abc"}, []string{"abc"}},
		{"'_' is no wildcard", cairn.ListOptions{Prefix: "a_"}, []string{"a_b"}},
		{"case-sensitive", cairn.ListOptions{Prefix: "A"}, []string{"A"}},
		{"one character", cairn.ListOptions{Prefix: "b"}, []string{"b"}},
		{"no match", cairn.ListOptions{Prefix: "abd"}, nil},
		{"no match past every ID", cairn.ListOptions{Prefix: "zz"}, nil},
		{"a prefix longer than the IDs", cairn.ListOptions{Prefix: "ab-10"}, nil},
		{"with a status", cairn.ListOptions{Prefix: "ab", Status: []cairn.Status{cairn.StatusCompleted}}, []string{"ab-2"}},
		{"with a label", cairn.ListOptions{Prefix: "ab", Labels: map[string]string{"env": "prod"}}, []string{"ab-3"}},
		{"with a label of another prefix", cairn.ListOptions{Prefix: "b", Labels: map[string]string{"env": "prod"}}, nil},
	}
	for _, c := range cases {
		if got := ids(listAll(t, s, c.opts)); !slices.Equal(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}
