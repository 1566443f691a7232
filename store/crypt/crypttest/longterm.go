package crypttest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/testing/testenv"
	"github.com/cairnhq/cairn/internal/text"
	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/longterm/ltdriver"
	"github.com/cairnhq/cairn/store/crypt"
	"github.com/cairnhq/cairn/store/storetest"
)

// LongTermBackend is what the erasure checks of long-term memory need of a
// backend: as Backend, for the URL longterm.Open opens.
type LongTermBackend struct {
	// URL is the store's URL for longterm.Open.
	URL string
	// Raw returns the places of the backend's raw storage that hold
	// needle, searched as bytes; none if it is nowhere.
	Raw func(t *testing.T, needle string) []string
	// Settle, if set, runs after the erasures and before the search.
	Settle func(t *testing.T)
}

// LongTermOpener returns an opener of long-term stores by URL through the
// encrypting store (crypt.OpenLongTerm) with ring: what a backend gives
// lttest.RunByURL to run the suite encrypted.
func LongTermOpener(ring *crypt.Keyring) func(ctx context.Context, url string, opts longterm.Options) (longterm.Store, error) {
	return func(ctx context.Context, url string, opts longterm.Options) (longterm.Store, error) {
		return crypt.OpenLongTerm(ctx, url, opts, ring)
	}
}

// RunLongTerm runs the erasure checks of long-term memory against b.
func RunLongTerm(t *testing.T, b LongTermBackend) {
	t.Run("Plain", func(t *testing.T) { testLongTermPlain(t, b) })
	// The index key is the store's: every encrypting store on it holds
	// one keyring's keys.
	old := newKey(t)
	ring := keyring(t, old)
	t.Run("Encrypted", func(t *testing.T) { testLongTermEncrypted(t, b, ring) })
	t.Run("WrongKey", func(t *testing.T) { testLongTermWrongKey(t, b, ring) })
	// Last: it moves the store's keys to another master key.
	t.Run("Rekey", func(t *testing.T) { testLongTermRekey(t, b, old) })
}

func openLongTerm(t *testing.T, b LongTermBackend, opts longterm.Options) longterm.Store {
	t.Helper()
	s, err := longterm.Open(t.Context(), b.URL, opts)
	if err != nil {
		t.Fatalf("open %s: %v", text.RedactURL(b.URL), err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// vectorNeedles returns the forms a vector takes in raw storage: its
// float32s little-endian, and those bytes in base64.
func vectorNeedles(v []float32) []string {
	raw := ltdriver.EncodeVector(v)
	return []string{string(raw), base64.StdEncoding.EncodeToString(raw)}
}

// markedVector returns a vector that no other data holds.
func markedVector() []float32 {
	v := make([]float32, 8)
	for i := range v {
		var x uint32
		fmt.Sscanf(testenv.RandHex(4), "%x", &x)
		v[i] = float32(x%100000)/100000 + 0.001
	}
	return v
}

// testLongTermPlain writes items with markers in every field, erases them
// in each way a store erases (Delete, DeleteNamespace of a prefix, a
// replace, expiry and Sweep), and searches raw storage for every marker.
func testLongTermPlain(t *testing.T, b LongTermBackend) {
	clock := storetest.NewClock()
	s := openLongTerm(t, b, longterm.Options{Now: clock.Now})
	ctx := t.Context()
	root := "er_" + testenv.RandHex(5)
	m := map[string]string{}
	for _, f := range []string{"namespace", "key", "value", "label", "model", "session", "replaced value", "deleted value", "expired value"} {
		m[f] = Marker()
	}
	// The markers of the texts are single tokens, lower case, each with a
	// first letter no other word of the test has: a text index that
	// stores its terms with the prefix they share with the one before
	// (FTS5 does) then stores them whole, where the search sees them.
	for i, f := range []string{"text", "replaced", "deleted", "expired"} {
		m[f] = string(rune('v'+i)) + "q" + testenv.RandHex(8)
	}
	put := func(it longterm.Item, opts longterm.PutOptions) {
		t.Helper()
		if _, err := s.Put(ctx, it, opts); err != nil {
			t.Fatalf("Put(%s %s): %v", it.Namespace, it.Key, err)
		}
	}
	val := func(s string) json.RawMessage { b, _ := json.Marshal(map[string]string{"secret": s}); return b }
	for i := range 50 {
		put(longterm.Item{Namespace: root + "/other", Key: fmt.Sprint("k", i), Text: fmt.Sprintf("filler text %d about otters", i)}, longterm.PutOptions{})
	}
	vec := markedVector()
	ns := root + "/users/" + m["namespace"] + "/notes"
	put(longterm.Item{Namespace: ns, Key: m["key"], Value: val(m["value"]), Text: "remember " + m["text"] + " always",
		Labels: map[string]string{"topic": m["label"]}, Vector: vec, VectorModel: m["model"],
		Source: longterm.Source{Session: m["session"], Seq: 7}}, longterm.PutOptions{})
	bob := root + "/users/bob"
	put(longterm.Item{Namespace: bob, Key: "note", Value: val(m["replaced value"]), Text: "old " + m["replaced"]}, longterm.PutOptions{})
	put(longterm.Item{Namespace: bob, Key: "gone", Value: val(m["deleted value"]), Text: "gone " + m["deleted"]}, longterm.PutOptions{})
	put(longterm.Item{Namespace: bob, Key: "tmp", Value: val(m["expired value"]), Text: "tmp " + m["expired"]}, longterm.PutOptions{TTL: time.Minute})
	for f, marker := range m {
		if where := b.Raw(t, marker); len(where) == 0 {
			t.Fatalf("the %s marker is not in raw storage before the erasures: the search cannot see them", f)
		}
	}
	if found := rawAny(t, b, vectorNeedles(vec)); len(found) == 0 {
		t.Fatal("the vector is not in raw storage before the erasures: the search cannot see them")
	}

	put(longterm.Item{Namespace: bob, Key: "note", Text: "new phrase"}, longterm.PutOptions{})
	if err := s.Delete(ctx, bob, "gone", 0); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	if sw, ok := s.(longterm.Sweeper); ok {
		if n, err := sw.Sweep(ctx); err != nil || n != 1 {
			t.Fatalf("Sweep = %d, %v; want the expired item", n, err)
		}
	} else if err := s.Delete(ctx, bob, "tmp", 0); !errors.Is(err, longterm.ErrNotFound) {
		t.Fatalf("Delete of the expired item: %v", err)
	}
	if n, err := s.DeleteNamespace(ctx, root+"/users/"+m["namespace"]); err != nil || n != 1 {
		t.Fatalf("DeleteNamespace = %d, %v; want 1", n, err)
	}
	if b.Settle != nil {
		b.Settle(t)
	}
	for f, marker := range m {
		if where := b.Raw(t, marker); len(where) > 0 {
			t.Errorf("after the erasures the %s marker is still in %s", f, strings.Join(where, ", "))
		}
	}
	if where := rawAny(t, b, vectorNeedles(vec)); len(where) > 0 {
		t.Errorf("after DeleteNamespace the vector is still in %s", strings.Join(where, ", "))
	}
	// What is left reads as before.
	if rs, err := s.Search(ctx, longterm.SearchOptions{Query: "otters", Prefix: root, Limit: 100}); err != nil || len(rs) != 50 {
		t.Errorf("search for the filler after the erasures: %d results, %v", len(rs), err)
	}
	if rs, err := s.Search(ctx, longterm.SearchOptions{Query: "new phrase", Prefix: root}); err != nil || len(rs) != 1 {
		t.Errorf("search for the replacing text: %d results, %v", len(rs), err)
	}
}

// testLongTermEncrypted writes an item through the encrypting store: the
// markers of its value, text and vector never reach raw storage, the
// hashes of its words do. DeleteNamespace erases the namespace's data key
// first, and the item's sealed form, put back as a backup would, no
// longer opens.
func testLongTermEncrypted(t *testing.T, b LongTermBackend, ring *crypt.Keyring) {
	ctx := t.Context()
	s, err := crypt.OpenLongTerm(ctx, b.URL, longterm.Options{}, ring)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ns := "er_" + testenv.RandHex(5) + "/users/ada"
	value, word := Marker(), "vq"+testenv.RandHex(8)
	vec := markedVector()
	v, _ := json.Marshal(map[string]string{"secret": value})
	if _, err := s.Put(ctx, longterm.Item{Namespace: ns, Key: "k", Value: v, Text: "remember " + word, Vector: vec, VectorModel: "m"}, longterm.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, ns, "k")
	if err != nil || !strings.Contains(string(got.Value), value) || !strings.Contains(got.Text, word) || len(got.Vector) != len(vec) {
		t.Fatalf("Get through the key = %+v, %v; want the item back", got, err)
	}
	if rs, err := s.Search(ctx, longterm.SearchOptions{Query: word, Prefix: ns}); err != nil || len(rs) != 1 || rs[0].Item.Text != got.Text {
		t.Fatalf("search for the word through the key: %+v, %v", rs, err)
	}
	for what, needle := range map[string]string{"value": value, "text": word} {
		if where := b.Raw(t, needle); len(where) > 0 {
			t.Errorf("the %s marker was written in clear to %s", what, strings.Join(where, ", "))
		}
	}
	if where := rawAny(t, b, vectorNeedles(vec)); len(where) > 0 {
		t.Errorf("the vector was written in clear to %s", strings.Join(where, ", "))
	}
	kept, err := s.Inner().Get(ctx, ns, "k")
	if err != nil {
		t.Fatal(err)
	}
	hashes := strings.Fields(kept.Text)
	if len(hashes) != 2 || strings.Contains(kept.Text, word) {
		t.Fatalf("the wrapped store indexes %q for %q", kept.Text, "remember "+word)
	}
	if where := b.Raw(t, hashes[1]); len(where) == 0 {
		t.Fatal("the hash of the word is not in raw storage: the search cannot see its erasure")
	}
	var tok string
	if err := json.Unmarshal(kept.Value, &tok); err != nil {
		t.Fatalf("the wrapped store holds a value that is not a token: %s", kept.Value)
	}
	sealedText := tok[strings.LastIndexByte(tok, '.')+1:]
	key, err := s.Inner().Get(ctx, crypt.LongTermKeys+"/"+ns, "data")
	if err != nil {
		t.Fatalf("the namespace's data key: %v", err)
	}
	var kr struct {
		W string `json:"w"`
	}
	if err := json.Unmarshal(key.Value, &kr); err != nil || kr.W == "" {
		t.Fatalf("key record %s: %v", key.Value, err)
	}
	for what, needle := range map[string]string{"the wrapped data key": kr.W, "the sealed item": sealedText} {
		if where := b.Raw(t, needle); len(where) == 0 {
			t.Fatalf("%s is not in raw storage: the search cannot see its erasure", what)
		}
	}

	if n, err := s.DeleteNamespace(ctx, ns); err != nil || n != 1 {
		t.Fatalf("DeleteNamespace = %d, %v", n, err)
	}
	if b.Settle != nil {
		b.Settle(t)
	}
	for what, needle := range map[string]string{"the wrapped data key": kr.W, "the sealed item": sealedText, "the hash of the word": hashes[1]} {
		if where := b.Raw(t, needle); len(where) > 0 {
			t.Errorf("after DeleteNamespace %s is still in %s", what, strings.Join(where, ", "))
		}
	}
	// The sealed item put back, as a backup would hold it: its key is gone.
	if _, err := s.Inner().Put(ctx, *kept, longterm.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, ns, "k"); !errors.Is(err, crypt.ErrUnknownKey) {
		t.Errorf("Get of the item put back after DeleteNamespace: %v, want ErrUnknownKey", err)
	}
	// A value in clear among sealed ones is refused.
	if _, err := s.Inner().Put(ctx, longterm.Item{Namespace: ns, Key: "clear", Value: json.RawMessage(`"hello"`)}, longterm.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, ns, "clear"); !errors.Is(err, crypt.ErrPlaintext) {
		t.Errorf("Get of an item written in clear: %v, want ErrPlaintext", err)
	}
}

// testLongTermWrongKey opens a store written under one key with another:
// reads fail with ErrUnknownKey, and so do writes, writing nothing.
func testLongTermWrongKey(t *testing.T, b LongTermBackend, ring *crypt.Keyring) {
	ctx := t.Context()
	ns := "er_" + testenv.RandHex(5)
	s1, err := crypt.OpenLongTerm(ctx, b.URL, longterm.Options{}, ring)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s1.Close() })
	if _, err := s1.Put(ctx, longterm.Item{Namespace: ns, Key: "k", Text: "hello"}, longterm.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	s2, err := crypt.OpenLongTerm(ctx, b.URL, longterm.Options{}, NewKeyring(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s2.Close() })
	if _, err := s2.Get(ctx, ns, "k"); !errors.Is(err, crypt.ErrUnknownKey) {
		t.Errorf("Get under another key: %v, want ErrUnknownKey", err)
	}
	if _, err := s2.Put(ctx, longterm.Item{Namespace: ns + "/other", Key: "k", Text: "hello"}, longterm.PutOptions{}); !errors.Is(err, crypt.ErrUnknownKey) {
		t.Errorf("Put under another key: %v, want ErrUnknownKey", err)
	}
	if _, err := s1.Inner().Get(ctx, ns+"/other", "k"); !errors.Is(err, longterm.ErrNotFound) {
		t.Errorf("after a refused Put the wrapped store holds the item: %v", err)
	}
	if _, err := s2.Search(ctx, longterm.SearchOptions{Query: "hello", Prefix: ns}); !errors.Is(err, crypt.ErrUnknownKey) {
		t.Errorf("Search under another key: %v, want ErrUnknownKey", err)
	}
}

func rawAny(t *testing.T, b LongTermBackend, needles []string) []string {
	var out []string
	for _, n := range needles {
		out = append(out, b.Raw(t, n)...)
	}
	return out
}

// testLongTermRekey moves every key of a store written under old to a new
// master key: afterwards the new key alone reads, searches and writes, the
// old key alone still reads, and a second run rewraps nothing. A keyring
// with neither key is refused, writing nothing, and reads nothing.
func testLongTermRekey(t *testing.T, b LongTermBackend, old crypt.Key) {
	ctx := t.Context()
	ns := "rk_" + testenv.RandHex(5)
	s1 := openWithKeys(t, b, old)
	for _, n := range []string{ns + "/a", ns + "/b"} {
		if _, err := s1.Put(ctx, longterm.Item{Namespace: n, Key: "k", Value: json.RawMessage(`"kept"`), Text: "rekeyed lighthouse"}, longterm.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	keys, err := s1.Inner().List(ctx, longterm.ListOptions{Prefix: crypt.LongTermKeys, Limit: longterm.MaxListLimit})
	if err != nil {
		t.Fatal(err)
	}
	stored := len(keys.Items) // the index key, these two namespaces' and the earlier tests'
	if stored < 3 {
		t.Fatalf("%d keys stored under %s, want the index key and two namespaces' at least", stored, crypt.LongTermKeys)
	}

	stranger := openWithKeys(t, b, newKey(t))
	if res, err := stranger.Rekey(ctx, nil); !errors.Is(err, crypt.ErrUnknownKey) || res.Rewrapped != 0 {
		t.Errorf("Rekey with neither key: %+v, %v; want ErrUnknownKey and nothing rewrapped", res, err)
	}

	next := newKey(t)
	s2 := openWithKeys(t, b, next, old)
	var calls, lastDone, lastTotal int
	res, err := s2.Rekey(ctx, func(done, total int) { calls, lastDone, lastTotal = calls+1, done, total })
	if err != nil {
		t.Fatal(err)
	}
	if want := (crypt.LongTermRekeyResult{Keys: stored, Rewrapped: stored}); res != want {
		t.Errorf("Rekey = %+v, want %+v", res, want)
	}
	if calls != stored || lastDone != stored || lastTotal != stored {
		t.Errorf("progress called %d times, last (%d, %d); want %d, ending (%d, %d)", calls, lastDone, lastTotal, stored, stored, stored)
	}
	if res, err := s2.Rekey(ctx, nil); err != nil || res != (crypt.LongTermRekeyResult{Keys: stored, Current: stored}) {
		t.Errorf("Rekey again = %+v, %v; want all %d current", res, err, stored)
	}

	s3 := openWithKeys(t, b, next)
	for _, n := range []string{ns + "/a", ns + "/b"} {
		it, err := s3.Get(ctx, n, "k")
		if err != nil || string(it.Value) != `"kept"` {
			t.Fatalf("Get %s/k with the new key alone: %v, %v", n, it, err)
		}
	}
	found, err := s3.Search(ctx, longterm.SearchOptions{Query: "lighthouse", Prefix: ns})
	if err != nil || len(found) != 2 {
		t.Errorf("Search with the new key alone: %d found, %v; want 2", len(found), err)
	}
	if _, err := s3.Put(ctx, longterm.Item{Namespace: ns + "/c", Key: "k", Text: "new"}, longterm.PutOptions{}); err != nil {
		t.Errorf("Put with the new key alone: %v", err)
	}
	s4 := openWithKeys(t, b, old)
	// Until its file is destroyed the old key reads on, as with session
	// keys: a process not yet moved to the new key keeps working.
	if it, err := s4.Get(ctx, ns+"/a", "k"); err != nil || string(it.Value) != `"kept"` {
		t.Errorf("Get with the old key alone after Rekey: %v, %v", it, err)
	}
	if _, err := stranger.Get(ctx, ns+"/a", "k"); !errors.Is(err, crypt.ErrUnknownKey) {
		t.Errorf("Get with neither key after Rekey: %v, want ErrUnknownKey", err)
	}
}

// openWithKeys opens b's long-term store through a keyring of keys, the
// first current, closed at the end of the test.
func openWithKeys(t *testing.T, b LongTermBackend, keys ...crypt.Key) crypt.LongTerm {
	t.Helper()
	s, err := crypt.OpenLongTerm(t.Context(), b.URL, longterm.Options{}, keyring(t, keys...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
