package lttest

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn/longterm"
)

func testAbilities(t *testing.T, h *harness) {
	for i, s := range []longterm.Store{h.store(t), h.store(t)} {
		_, has := s.(longterm.Sweeper)
		switch {
		case h.abilities.Sweep && !has:
			t.Errorf("open %d: the backend declares Sweep, but %T does not implement longterm.Sweeper", i+1, s)
		case !h.abilities.Sweep && has:
			t.Errorf("open %d: %T implements longterm.Sweeper, but the backend does not declare Sweep in lttest.Abilities", i+1, s)
		}
	}
}

// sameItem compares two items field by field, times by instant.
func sameItem(t *testing.T, what string, got, want *longterm.Item) {
	t.Helper()
	g, w := *got, *want
	for _, p := range []*longterm.Item{&g, &w} {
		p.CreatedAt, p.UpdatedAt, p.ExpiresAt = time.Time{}, time.Time{}, time.Time{}
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s:\n got %+v\nwant %+v", what, g, w)
	}
	if !got.CreatedAt.Equal(want.CreatedAt) || !got.UpdatedAt.Equal(want.UpdatedAt) || !got.ExpiresAt.Equal(want.ExpiresAt) {
		t.Errorf("%s: times (created, updated, expires) got %v %v %v, want %v %v %v", what,
			got.CreatedAt, got.UpdatedAt, got.ExpiresAt, want.CreatedAt, want.UpdatedAt, want.ExpiresAt)
	}
}

// testPutGet puts an item with every field and reads it back, from the
// same store and from a reopened one.
func testPutGet(t *testing.T, h *harness) {
	s := h.store(t)
	now := h.clock.Now()
	in := longterm.Item{
		Namespace:   h.ns("users/ada"),
		Key:         "favorite-food",
		Value:       json.RawMessage(` { "food" : "pizza", "since": 2019, "tags": ["a", "b"], "x": null } `),
		Text:        "Ada's favorite food is pizza",
		Labels:      map[string]string{"kind": "preference", "lang": "en"},
		Vector:      []float32{0.25, -1, 3.5e-7, 1e30},
		VectorModel: "test-model",
		Source:      longterm.Source{Session: "chat-42", Seq: 17},
		Version:     99, // ignored
		CreatedAt:   now.Add(-time.Hour),
	}
	got := mustPut(t, s, in, longterm.PutOptions{})
	want := in
	want.Value = json.RawMessage(`{"food":"pizza","since":2019,"tags":["a","b"],"x":null}`)
	want.Version = got.Version
	want.CreatedAt, want.UpdatedAt = now, now
	if got.Version <= 0 {
		t.Errorf("Put returned version %d, want a positive version", got.Version)
	}
	sameItem(t, "Put's result", got, &want)
	sameItem(t, "Get", mustGet(t, s, in.Namespace, in.Key), &want)
	sameItem(t, "Get after a reopen", mustGet(t, h.store(t), in.Namespace, in.Key), &want)

	// What Put returned is the caller's: changing it changes nothing stored.
	got.Labels["kind"] = "changed"
	got.Vector[0] = 42
	got.Value[1] = 'X'
	sameItem(t, "Get after the caller changed Put's result", mustGet(t, s, in.Namespace, in.Key), &want)

	// An item in clear UTF-8 of several scripts.
	u := longterm.Item{Namespace: h.ns("i18n"), Key: "greeting", Value: json.RawMessage(`"¡Hola, señora Ødegård! 你好 🌍"`), Text: "café crème 你好 🌍"}
	gu := mustPut(t, s, u, longterm.PutOptions{})
	if g := mustGet(t, s, u.Namespace, u.Key); string(g.Value) != string(u.Value) || g.Text != u.Text || g.Version != gu.Version {
		t.Errorf("Get of a UTF-8 item: value %s text %q, want %s %q", g.Value, g.Text, u.Value, u.Text)
	}
}

// testPutDefaults checks what Put fills in: null for no value, the text
// derived from the value, no labels.
func testPutDefaults(t *testing.T, h *harness) {
	s := h.store(t)
	ns := h.ns("d")
	got := mustPut(t, s, longterm.Item{Namespace: ns, Key: "empty", Text: "nothing here"}, longterm.PutOptions{})
	if string(got.Value) != "null" {
		t.Errorf("Put with no value: value %q, want null", got.Value)
	}
	mustPut(t, s, longterm.Item{Namespace: ns, Key: "derived", Value: json.RawMessage(`{"favorite_color":"ultramarine","count":7,"ok":true}`)}, longterm.PutOptions{})
	g := mustGet(t, s, ns, "derived")
	if g.Text != "favorite_color ultramarine count 7 ok true" {
		t.Errorf("text derived from the value: %q, want %q", g.Text, "favorite_color ultramarine count 7 ok true")
	}
	if g.Labels != nil || g.Vector != nil || g.VectorModel != "" || g.Source != (longterm.Source{}) || !g.ExpiresAt.IsZero() {
		t.Errorf("an item put without labels, vector, source and TTL came back with %v %v %q %+v %v", g.Labels, g.Vector, g.VectorModel, g.Source, g.ExpiresAt)
	}
	rs := search(t, s, longterm.SearchOptions{Query: "ultramarine", Prefix: h.root})
	if got := resultPlaces(rs); !slices.Equal(got, []string{ns + " derived"}) {
		t.Errorf("search for a word of the value: %v, want the item whose text was derived", got)
	}
	// A vector model without a vector is dropped.
	mustPut(t, s, longterm.Item{Namespace: ns, Key: "model", Text: "x", VectorModel: "m"}, longterm.PutOptions{})
	if g := mustGet(t, s, ns, "model"); g.VectorModel != "" {
		t.Errorf("an item put with a vector model and no vector has model %q, want none", g.VectorModel)
	}
}

// testReplace replaces an item: a higher version, the creation time kept,
// every other field the new Put's, the old text no longer found.
func testReplace(t *testing.T, h *harness) {
	s := h.store(t)
	ns := h.ns("r")
	created := h.clock.Now()
	v1 := mustPut(t, s, longterm.Item{Namespace: ns, Key: "k", Value: json.RawMessage(`1`), Text: "aubergine",
		Labels: map[string]string{"a": "1"}, Vector: []float32{1, 0}, VectorModel: "m", Source: longterm.Source{Session: "s1", Seq: 3}},
		longterm.PutOptions{TTL: time.Hour})
	h.clock.Advance(time.Minute)
	v2 := mustPut(t, s, longterm.Item{Namespace: ns, Key: "k", Value: json.RawMessage(`2`), Text: "courgette"}, longterm.PutOptions{})
	if v2.Version <= v1.Version {
		t.Errorf("replace: version %d after %d, want a higher one", v2.Version, v1.Version)
	}
	want := &longterm.Item{Namespace: ns, Key: "k", Value: json.RawMessage(`2`), Text: "courgette", Version: v2.Version,
		CreatedAt: created, UpdatedAt: created.Add(time.Minute)}
	sameItem(t, "Get after a replace", mustGet(t, s, ns, "k"), want)
	if rs := search(t, s, longterm.SearchOptions{Query: "aubergine", Prefix: h.root}); len(rs) != 0 {
		t.Errorf("search for the replaced text found %v", resultPlaces(rs))
	}
	if rs := search(t, s, longterm.SearchOptions{Query: "courgette", Prefix: h.root}); len(rs) != 1 {
		t.Errorf("search for the new text found %v, want the item", resultPlaces(rs))
	}
	if rs := search(t, s, longterm.SearchOptions{Vector: []float32{1, 0}, VectorModel: "m", Prefix: h.root}); len(rs) != 0 {
		t.Errorf("vector search found the replaced vector: %v", resultPlaces(rs))
	}
	if p, _ := s.List(t.Context(), longterm.ListOptions{Prefix: h.root, Labels: map[string]string{"a": "1"}}); p == nil || len(p.Items) != 0 {
		t.Errorf("list by the replaced label: %+v", p)
	}
}

// testVersions checks conditional puts and deletes: a stale version, an
// item that exists or does not, and a version from before a delete (ABA).
func testVersions(t *testing.T, h *harness) {
	s := h.store(t)
	ctx := t.Context()
	ns := h.ns("v")
	put := func(value string, if_ int64) (*longterm.Item, error) {
		return s.Put(ctx, longterm.Item{Namespace: ns, Key: "k", Value: json.RawMessage(value)}, longterm.PutOptions{IfVersion: if_})
	}
	value := func() string {
		g, err := s.Get(ctx, ns, "k")
		if err != nil {
			return err.Error()
		}
		return string(g.Value)
	}
	if _, err := put(`0`, 5); !errors.Is(err, longterm.ErrConflict) {
		t.Errorf("Put IfVersion 5 of a missing item: %v, want ErrConflict", err)
	}
	wantNotFound(t, s, ns, "k")
	v1, err := put(`1`, longterm.IfAbsent)
	if err != nil {
		t.Fatalf("Put IfAbsent of a missing item: %v", err)
	}
	if _, err := put(`9`, longterm.IfAbsent); !errors.Is(err, longterm.ErrConflict) {
		t.Errorf("Put IfAbsent of an existing item: %v, want ErrConflict", err)
	}
	v2, err := put(`2`, v1.Version)
	if err != nil {
		t.Fatalf("Put IfVersion %d (current): %v", v1.Version, err)
	}
	if _, err := put(`9`, v1.Version); !errors.Is(err, longterm.ErrConflict) {
		t.Errorf("Put IfVersion %d (stale, now %d): %v, want ErrConflict", v1.Version, v2.Version, err)
	}
	if err := s.Delete(ctx, ns, "k", v1.Version); !errors.Is(err, longterm.ErrConflict) {
		t.Errorf("Delete ifVersion %d (stale): %v, want ErrConflict", v1.Version, err)
	}
	if got := value(); got != "2" {
		t.Fatalf("after refused writes the value is %s, want 2", got)
	}
	if err := s.Delete(ctx, ns, "k", v2.Version); err != nil {
		t.Fatalf("Delete ifVersion %d (current): %v", v2.Version, err)
	}
	// The key is created again; a version read before the delete must not
	// match the new item, even after as many writes as the old one had.
	n1, err := put(`3`, longterm.IfAbsent)
	if err != nil {
		t.Fatalf("Put IfAbsent after a delete: %v", err)
	}
	if _, err := put(`4`, n1.Version); err != nil {
		t.Fatalf("Put IfVersion %d: %v", n1.Version, err)
	}
	for _, old := range []int64{v1.Version, v2.Version} {
		if _, err := put(`9`, old); !errors.Is(err, longterm.ErrConflict) {
			t.Errorf("Put IfVersion %d, a version from before the delete: %v, want ErrConflict", old, err)
		}
		if err := s.Delete(ctx, ns, "k", old); !errors.Is(err, longterm.ErrConflict) {
			t.Errorf("Delete ifVersion %d, a version from before the delete: %v, want ErrConflict", old, err)
		}
	}
	if got := value(); got != "4" {
		t.Errorf("the value is %s, want 4", got)
	}
	// A namespace erased and written again: still no old version matches.
	cur := mustGet(t, s, ns, "k")
	if _, err := s.DeleteNamespace(ctx, ns); err != nil {
		t.Fatal(err)
	}
	if _, err := put(`5`, 0); err != nil {
		t.Fatal(err)
	}
	if g := mustGet(t, s, ns, "k"); g.Version <= cur.Version {
		t.Errorf("after DeleteNamespace the key's new version is %d, not above %d", g.Version, cur.Version)
	}
	// Unconditional puts always succeed and always raise the version.
	prev := mustGet(t, s, ns, "k").Version
	for i := range 3 {
		g, err := put(fmt.Sprint(10+i), 0)
		if err != nil || g.Version <= prev {
			t.Fatalf("unconditional Put %d: version %v after %d, %v", i, g, prev, err)
		}
		prev = g.Version
	}
}

// testConcurrentPut has writers race, through several opened stores, on
// one expected version and on the creation of one key: exactly one wins
// each race, every other gets ErrConflict, and the item is the winner's.
func testConcurrentPut(t *testing.T, h *harness) {
	const writers = 8
	stores := []longterm.Store{h.store(t), h.store(t)}
	ns := h.ns("race")
	race := func(name string, ifVersion int64) {
		t.Helper()
		errs := make([]error, writers)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range writers {
			wg.Go(func() {
				<-start
				_, errs[i] = stores[i%len(stores)].Put(t.Context(), longterm.Item{Namespace: ns, Key: name,
					Value: json.RawMessage(fmt.Sprint(i)), Text: fmt.Sprintf("writer %d", i)}, longterm.PutOptions{IfVersion: ifVersion})
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Errorf("%s: writers %d and %d both won", name, winner, i)
			case err == nil:
				winner = i
			case !errors.Is(err, longterm.ErrConflict):
				t.Errorf("%s: writer %d: %v, want nil or ErrConflict", name, i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("%s: no writer won: %v", name, errs)
		}
		if g := mustGet(t, stores[0], ns, name); string(g.Value) != fmt.Sprint(winner) {
			t.Errorf("%s: the item holds %s, the winner was writer %d", name, g.Value, winner)
		}
	}
	race("created", longterm.IfAbsent)
	v := mustPut(t, stores[0], item(ns, "replaced", "first"), longterm.PutOptions{})
	race("replaced", v.Version)
}

func testDelete(t *testing.T, h *harness) {
	s := h.store(t)
	ctx := t.Context()
	ns := h.ns("del")
	if err := s.Delete(ctx, ns, "nothing", 0); !errors.Is(err, longterm.ErrNotFound) {
		t.Errorf("Delete of a missing item: %v, want ErrNotFound", err)
	}
	mustPut(t, s, longterm.Item{Namespace: ns, Key: "gone", Text: "marmalade", Vector: []float32{0, 1}, VectorModel: "m"}, longterm.PutOptions{})
	mustPut(t, s, item(ns, "kept", "marmalade toast"), longterm.PutOptions{})
	if err := s.Delete(ctx, ns, "gone", 0); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if err := s.Delete(ctx, ns, "gone", 0); !errors.Is(err, longterm.ErrNotFound) {
		t.Errorf("second Delete: %v, want ErrNotFound", err)
	}
	for _, st := range []longterm.Store{s, h.store(t)} {
		wantNotFound(t, st, ns, "gone")
		if got := places(listAll(t, st, longterm.ListOptions{Prefix: h.root})); !slices.Equal(got, []string{ns + " kept"}) {
			t.Errorf("List after Delete: %v", got)
		}
		if got := resultPlaces(search(t, st, longterm.SearchOptions{Query: "marmalade", Prefix: h.root})); !slices.Equal(got, []string{ns + " kept"}) {
			t.Errorf("Search after Delete: %v", got)
		}
		if got := search(t, st, longterm.SearchOptions{Vector: []float32{0, 1}, VectorModel: "m", Prefix: h.root}); len(got) != 0 {
			t.Errorf("vector search after Delete: %v", resultPlaces(got))
		}
	}
}

// testDeleteNamespace erases a namespace and those under it, and nothing
// beside: "a/b" takes "a/b" and "a/b/c", not "a/bc" nor "a".
func testDeleteNamespace(t *testing.T, h *harness) {
	s := h.store(t)
	ctx := t.Context()
	for _, p := range []string{"a", "a/b", "a/b/c", "a/b/c/d", "a/bc", "a/b-c", "ab"} {
		for _, k := range []string{"k1", "k2"} {
			mustPut(t, s, item(h.ns(p), k, "zanzibar "+p), longterm.PutOptions{})
		}
	}
	mustPut(t, s, item(h.ns("a/b"), "expired", "zanzibar"), longterm.PutOptions{TTL: time.Second})
	h.clock.Advance(time.Second)
	n, err := s.DeleteNamespace(ctx, h.ns("a/b"))
	if err != nil || n != 6 {
		t.Errorf("DeleteNamespace(a/b) = %d, %v; want 6 (three namespaces of two live items)", n, err)
	}
	want := []string{}
	for _, p := range []string{"a", "a/b-c", "a/bc", "ab"} {
		for _, k := range []string{"k1", "k2"} {
			want = append(want, h.ns(p)+" "+k)
		}
	}
	for _, st := range []longterm.Store{s, h.store(t)} {
		if got := places(listAll(t, st, longterm.ListOptions{Prefix: h.root})); !slices.Equal(got, want) {
			t.Errorf("List after DeleteNamespace:\n got %v\nwant %v", got, want)
		}
		rs := search(t, st, longterm.SearchOptions{Query: "zanzibar", Prefix: h.root, Limit: 100})
		if got := resultPlaces(rs); len(got) != len(want) {
			t.Errorf("Search after DeleteNamespace: %v", got)
		}
		p, err := st.Namespaces(ctx, longterm.NamespaceOptions{Prefix: h.root})
		if err != nil {
			t.Fatal(err)
		}
		if wantNS := []string{h.ns("a"), h.ns("a/b-c"), h.ns("a/bc"), h.ns("ab")}; !slices.Equal(p.Namespaces, wantNS) {
			t.Errorf("Namespaces after DeleteNamespace: %v, want %v", p.Namespaces, wantNS)
		}
	}
	if n, err := s.DeleteNamespace(ctx, h.ns("a/b")); err != nil || n != 0 {
		t.Errorf("DeleteNamespace of an empty namespace = %d, %v; want 0, nil", n, err)
	}
	if _, err := s.DeleteNamespace(ctx, ""); !errors.Is(err, longterm.ErrInvalid) {
		t.Errorf("DeleteNamespace(\"\") = %v, want ErrInvalid: erasing everything is not a namespace delete", err)
	}
	mustPut(t, s, item(h.ns("a/b"), "again", "zanzibar"), longterm.PutOptions{})
	mustGet(t, s, h.ns("a/b"), "again")
	if n, err := s.DeleteNamespace(ctx, h.root); err != nil || n != 9 {
		t.Errorf("DeleteNamespace(root) = %d, %v; want 9", n, err)
	}
	if got := listAll(t, s, longterm.ListOptions{Prefix: h.root}); len(got) != 0 {
		t.Errorf("List after erasing the root: %v", places(got))
	}
}

// testTTL checks that an expired item is invisible to every read at once,
// counts as absent for IfAbsent, and that a Put without a TTL makes an
// item permanent.
// testLongTTL: an item whose TTL runs past the years a Unix time in
// nanoseconds holds (2262) lives: it is read, listed and found, a sweep
// leaves it, and its expiry is after now.
func testLongTTL(t *testing.T, h *harness) {
	s := h.store(t)
	ns := h.ns("longttl")
	got := mustPut(t, s, item(ns, "k", "wombat"), longterm.PutOptions{TTL: 280 * 365 * 24 * time.Hour})
	if !got.ExpiresAt.After(h.clock.Now().Add(200 * 365 * 24 * time.Hour)) {
		t.Errorf("ExpiresAt = %v, want about 280 years on", got.ExpiresAt)
	}
	if sw, ok := s.(longterm.Sweeper); ok {
		if _, err := sw.Sweep(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	for _, st := range []longterm.Store{s, h.store(t)} {
		it := mustGet(t, st, ns, "k")
		if !it.ExpiresAt.After(h.clock.Now()) {
			t.Errorf("ExpiresAt read back = %v, not after now", it.ExpiresAt)
		}
		if got := places(listAll(t, st, longterm.ListOptions{Prefix: ns})); !slices.Equal(got, []string{ns + " k"}) {
			t.Errorf("List: %v", got)
		}
		if got := resultPlaces(search(t, st, longterm.SearchOptions{Query: "wombat", Prefix: ns})); !slices.Equal(got, []string{ns + " k"}) {
			t.Errorf("Search: %v", got)
		}
	}
}

func testTTL(t *testing.T, h *harness) {
	s := h.store(t)
	ctx := t.Context()
	ns := h.ns("ttl")
	now := h.clock.Now()
	got := mustPut(t, s, longterm.Item{Namespace: ns, Key: "short", Text: "quokka", Vector: []float32{1}, VectorModel: "m"}, longterm.PutOptions{TTL: time.Hour})
	if !got.ExpiresAt.Equal(now.Add(time.Hour)) {
		t.Errorf("ExpiresAt = %v, want %v", got.ExpiresAt, now.Add(time.Hour))
	}
	mustPut(t, s, item(ns, "perm", "quokka"), longterm.PutOptions{TTL: time.Hour})
	mustPut(t, s, item(ns, "perm", "quokka"), longterm.PutOptions{}) // permanent now
	mustPut(t, s, item(h.ns("ttl/only"), "x", "quokka"), longterm.PutOptions{TTL: 30 * time.Minute})
	h.clock.Advance(time.Hour - time.Nanosecond)
	mustGet(t, s, ns, "short")
	h.clock.Advance(time.Nanosecond)
	for _, st := range []longterm.Store{s, h.store(t)} {
		wantNotFound(t, st, ns, "short")
		if got := places(listAll(t, st, longterm.ListOptions{Prefix: h.root})); !slices.Equal(got, []string{ns + " perm"}) {
			t.Errorf("List after expiry: %v", got)
		}
		if got := resultPlaces(search(t, st, longterm.SearchOptions{Query: "quokka", Prefix: h.root})); !slices.Equal(got, []string{ns + " perm"}) {
			t.Errorf("Search after expiry: %v", got)
		}
		if got := search(t, st, longterm.SearchOptions{Vector: []float32{1}, VectorModel: "m", Prefix: h.root}); len(got) != 0 {
			t.Errorf("vector search after expiry: %v", resultPlaces(got))
		}
		p, err := st.Namespaces(ctx, longterm.NamespaceOptions{Prefix: h.root})
		if err != nil || !slices.Equal(p.Namespaces, []string{ns}) {
			t.Errorf("Namespaces after expiry: %v, %v; want only %s", p, err, ns)
		}
	}
	if err := s.Delete(ctx, ns, "short", 0); !errors.Is(err, longterm.ErrNotFound) {
		t.Errorf("Delete of an expired item: %v, want ErrNotFound", err)
	}
	again, err := s.Put(ctx, item(ns, "short", "quokka"), longterm.PutOptions{IfVersion: longterm.IfAbsent})
	if err != nil {
		t.Fatalf("Put IfAbsent over an expired item: %v", err)
	}
	if again.Version <= got.Version || !again.CreatedAt.Equal(h.clock.Now()) {
		t.Errorf("the item put again after expiry: version %d (expired one %d), created %v; want a higher version, created now", again.Version, got.Version, again.CreatedAt)
	}
	if _, err := s.Put(ctx, item(ns, "short", "quokka"), longterm.PutOptions{IfVersion: got.Version}); !errors.Is(err, longterm.ErrConflict) {
		t.Errorf("Put with the expired item's version: %v, want ErrConflict", err)
	}
	h.clock.Advance(1000 * time.Hour)
	mustGet(t, s, ns, "perm")
}

// testSweep checks that Sweep erases the expired items, counts them, and
// leaves the live ones.
func testSweep(t *testing.T, h *harness) {
	s := h.store(t)
	sw := s.(longterm.Sweeper)
	ns := h.ns("sweep")
	for i := range 5 {
		ttl := time.Duration(0)
		if i%2 == 0 {
			ttl = time.Minute
		}
		mustPut(t, s, item(ns, fmt.Sprint("k", i), "wombat"), longterm.PutOptions{TTL: ttl})
	}
	h.clock.Advance(time.Minute)
	n, err := sw.Sweep(t.Context())
	if err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	// Other tests' items may expire on a shared store: at least ours.
	if n < 3 {
		t.Errorf("Sweep erased %d items, want at least the 3 expired ones", n)
	}
	if got := places(listAll(t, s, longterm.ListOptions{Prefix: h.root})); !slices.Equal(got, []string{ns + " k1", ns + " k3"}) {
		t.Errorf("List after Sweep: %v", got)
	}
	if n, err := sw.Sweep(t.Context()); err != nil || n != 0 {
		t.Logf("second Sweep: %d, %v (other tests' items may have expired)", n, err)
	}
}

// testProvenance checks that Source comes back from every read.
func testProvenance(t *testing.T, h *harness) {
	s := h.store(t)
	src := longterm.Source{Session: "0195f1c2-7d3a-7c3e-9a4b-1f2e3d4c5b6a", Seq: 1234567}
	ns := h.ns("prov")
	mustPut(t, s, longterm.Item{Namespace: ns, Key: "k", Text: "ocelot", Source: src}, longterm.PutOptions{})
	mustPut(t, s, longterm.Item{Namespace: ns, Key: "session-only", Text: "ocelot", Source: longterm.Source{Session: "s-1"}}, longterm.PutOptions{})
	if g := mustGet(t, s, ns, "k"); g.Source != src {
		t.Errorf("Get: source %+v, want %+v", g.Source, src)
	}
	if l := listAll(t, s, longterm.ListOptions{Prefix: ns}); len(l) != 2 || l[0].Source != src || l[1].Source != (longterm.Source{Session: "s-1"}) {
		t.Errorf("List: sources %+v", l)
	}
	rs := search(t, s, longterm.SearchOptions{Query: "ocelot", Prefix: ns})
	for _, r := range rs {
		if want := map[string]longterm.Source{"k": src, "session-only": {Session: "s-1"}}[r.Item.Key]; r.Item.Source != want {
			t.Errorf("Search: %s source %+v, want %+v", r.Item.Key, r.Item.Source, want)
		}
	}
	if len(rs) != 2 {
		t.Errorf("Search found %d items, want 2", len(rs))
	}
}

// testDeleteBySession erases the items a session produced, in every
// namespace, and nothing else: not another session's, not one without a
// source, and not one replaced meanwhile by another session's.
func testDeleteBySession(t *testing.T, h *harness) {
	s := h.store(t)
	ctx := t.Context()
	session := "sess-" + h.root[3:]
	other := "other-" + h.root[3:]
	from := func(ns, key, sess string) {
		it := item(h.ns(ns), key, "quince "+key)
		it.Source = longterm.Source{Session: sess, Seq: 3}
		mustPut(t, s, it, longterm.PutOptions{})
	}
	from("users/ada", "a1", session)
	from("users/ada/notes", "a2", session)
	from("agents/facts", "a3", session)
	from("users/ada", "b1", other)
	mustPut(t, s, item(h.ns("users/ada"), "none", "quince"), longterm.PutOptions{})
	from("users/ada", "moved", session)
	from("users/ada", "moved", other) // replaced: another session's now
	n, err := longterm.DeleteBySession(ctx, s, session)
	if err != nil || n != 3 {
		t.Fatalf("DeleteBySession = %d, %v; want 3", n, err)
	}
	want := []string{h.ns("users/ada") + " b1", h.ns("users/ada") + " moved", h.ns("users/ada") + " none"}
	for _, st := range []longterm.Store{s, h.store(t)} {
		if got := places(listAll(t, st, longterm.ListOptions{Prefix: h.root})); !slices.Equal(got, want) {
			t.Errorf("List after DeleteBySession:\n got %v\nwant %v", got, want)
		}
		if got := resultPlaces(search(t, st, longterm.SearchOptions{Query: "quince", Prefix: h.root, Limit: 100})); len(got) != len(want) {
			t.Errorf("Search after DeleteBySession: %v", got)
		}
	}
	if n, err := longterm.DeleteBySession(ctx, s, session); err != nil || n != 0 {
		t.Errorf("DeleteBySession again = %d, %v; want 0, nil", n, err)
	}
	if _, err := longterm.DeleteBySession(ctx, s, ""); !errors.Is(err, longterm.ErrInvalid) {
		t.Errorf("DeleteBySession(\"\") = %v, want ErrInvalid", err)
	}
}
