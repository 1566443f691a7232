// Package crypttest checks that a backend erases what Delete erases, with
// and without encryption, by searching the backend's raw storage for a
// marker written into a session, and that an encrypted namespace takes
// writes under its own keys only. Each backend runs it from its own tests
// with a function that searches its storage: files, keys, rows, documents.
package crypttest

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/testenv"
	"github.com/cairnhq/cairn/internal/text"
	"github.com/cairnhq/cairn/store/crypt"
	"github.com/cairnhq/cairn/store/storetest"
)

// Backend is what the erasure checks need of a backend.
type Backend struct {
	// URL is the store's URL for cairn.Open.
	URL string
	// Raw returns the places (files, keys, tables) of the backend's raw
	// storage that hold needle, searched as bytes; none if it is nowhere.
	Raw func(t *testing.T, needle string) []string
	// Settle, if set, runs after a Delete and before the search: a
	// checkpoint that makes the backend's own erasure take effect.
	Settle func(t *testing.T)
	// Drop, if set, removes what a namespace left on a shared server; it
	// runs when the test ends.
	Drop func(t *testing.T, namespace string)
	// Lingers says that a plain Delete leaves the bytes in Raw's reach
	// even after Settle: encryption is then what makes them unreadable.
	Lingers bool
}

// Events returns a history of every event kind, seqs 1 to 13, with marker
// in the data of each kind that has room for text.
func Events(marker string) []cairn.Event {
	args, _ := json.Marshal(map[string]string{"q": marker})
	val, _ := json.Marshal(marker)
	call := []cairn.ToolCall{{ID: "c1", Name: "search", Args: args}}
	data := []any{
		cairn.RunStarted{RunID: "r1", Agent: "agent " + marker, Model: "offline"},
		cairn.MemoryReset{},
		cairn.MessageSystem{Text: "system " + marker},
		cairn.MessageUser{Parts: []cairn.Part{{Type: "text", Text: "user " + marker}}},
		cairn.ModelResponse{Text: "think " + marker, ToolCalls: call, Model: "offline"},
		cairn.ToolStarted{CallID: "c1", Name: "search", Args: args},
		cairn.ToolResult{CallID: "c1", Name: "search", Output: "found " + marker},
		cairn.StateSet{Set: map[string]json.RawMessage{"note": val}},
		cairn.RunInterrupted{Reason: cairn.InterruptApproval, Pending: call},
		cairn.ApprovalDecided{CallID: "c1", Approved: true, Note: "ok " + marker},
		cairn.MemoryCompacted{Summary: "summary " + marker, UpTo: 3},
		cairn.Custom{Type: "app.note", Payload: val},
		cairn.RunFinished{Status: cairn.StatusCompleted, Output: "answer " + marker},
	}
	kinds := []cairn.Kind{cairn.KindRunStarted, cairn.KindMemoryReset, cairn.KindMessageSystem, cairn.KindMessageUser,
		cairn.KindModelResponse, cairn.KindToolStarted, cairn.KindToolResult, cairn.KindStateSet, cairn.KindRunInterrupted,
		cairn.KindApprovalDecided, cairn.KindMemoryCompacted, cairn.KindCustom, cairn.KindRunFinished}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	out := make([]cairn.Event, len(data))
	for i, d := range data {
		e := cairn.MustEvent(kinds[i], "r1", d)
		e.Seq, e.At = int64(i+1), at.Add(time.Duration(i)*time.Second)
		out[i] = e
	}
	return out
}

// Marker returns a unique marker that no other data holds.
func Marker() string { return "cairn-marker-" + testenv.RandHex(8) }

// NewKeyring returns a keyring of one fresh key.
func NewKeyring(t testing.TB) *crypt.Keyring {
	t.Helper()
	return keyring(t, newKey(t))
}

// newKey returns a fresh master key.
func newKey(t testing.TB) crypt.Key {
	t.Helper()
	k, err := crypt.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// keyring returns the keyring of keys, the first current.
func keyring(t testing.TB, keys ...crypt.Key) *crypt.Keyring {
	t.Helper()
	r, err := crypt.NewKeyring(keys[0], keys[1:]...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Run runs the erasure checks and the key checks against b.
func Run(t *testing.T, b Backend) {
	t.Run("Plain", func(t *testing.T) { testPlain(t, b) })
	t.Run("Encrypted", func(t *testing.T) { testEncrypted(t, b) })
	t.Run("WrongKey", func(t *testing.T) { testWrongKey(t, b) })
	t.Run("FirstKeyRace", func(t *testing.T) { testFirstKeyRace(t, b) })
}

// namespaceKeys returns the master keys a process without a key is told
// namespace ns is encrypted under: its marker's.
func namespaceKeys(t *testing.T, b Backend, ns string) []string {
	t.Helper()
	s, err := crypt.Open(t.Context(), b.URL, cairn.StoreOptions{Namespace: ns}, nil)
	if err == nil {
		s.Close()
		return nil
	}
	var ee *crypt.EncryptedError
	if !errors.As(err, &ee) {
		t.Fatalf("open without a key: %v", err)
	}
	return ee.KeyIDs
}

// testWrongKey writes a session under one key, then tries to create and
// append under another: both are refused with crypt.ErrWrongKey, nothing
// reaches the backend, and the namespace's marker names the first key
// alone.
func testWrongKey(t *testing.T, b Backend) {
	ns := "er_" + testenv.RandHex(5)
	ring1, ring2 := NewKeyring(t), NewKeyring(t)
	s1 := open(t, b, ns, ring1)
	write(t, s1, "a", Marker())
	s2 := open(t, b, ns, ring2)
	if err := s2.Create(t.Context(), cairn.SessionMeta{ID: "e3"}); !errors.Is(err, crypt.ErrWrongKey) {
		t.Errorf("Create under another key: got %v, want ErrWrongKey", err)
	}
	if _, err := s1.Inner().Load(t.Context(), "e3", 0); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("after a refused Create the backend holds the session: %v", err)
	}
	more := Events(Marker())[:1]
	more[0].Seq = 14
	if err := s2.Append(t.Context(), "a", 13, more...); !errors.Is(err, crypt.ErrWrongKey) {
		t.Errorf("Append under another key: got %v, want ErrWrongKey", err)
	}
	if got := namespaceKeys(t, b, ns); len(got) != 1 || got[0] != ring1.Current() {
		t.Errorf("the marker names %v, want [%s]", got, ring1.Current())
	}
	if rec, err := s1.Load(t.Context(), "a", 0); err != nil || rec.Info.LastSeq != 13 {
		t.Errorf("the session under its own key: %v", err)
	}
}

// testFirstKeyRace has two processes with two keys seal the first
// sessions of a namespace at once: one key becomes the namespace's, the
// other's write is refused, and the marker names one key.
func testFirstKeyRace(t *testing.T, b Backend) {
	ns := "er_" + testenv.RandHex(5)
	rings := []*crypt.Keyring{NewKeyring(t), NewKeyring(t)}
	stores := []crypt.Store{open(t, b, ns, rings[0]), open(t, b, ns, rings[1])}
	ids := []string{"a", "b"}
	for i, s := range stores {
		if err := s.Create(t.Context(), cairn.SessionMeta{ID: ids[i]}); err != nil {
			t.Fatalf("Create(%s) before anything is sealed: %v", ids[i], err)
		}
	}
	won, errs := storetest.Race(len(stores), crypt.ErrWrongKey, func(i int) (int, error) {
		if err := stores[i].Append(t.Context(), ids[i], 0, Events(Marker())...); err != nil {
			return i, fmt.Errorf("the append under key %s: %w", rings[i].Current(), err)
		}
		return i, nil
	})
	for _, err := range errs {
		t.Errorf("%v, want nil or ErrWrongKey", err)
	}
	if len(won) != 1 {
		t.Fatalf("appends that succeeded under two keys: %v (errors %v), want exactly one", won, errs)
	}
	if got := namespaceKeys(t, b, ns); len(got) != 1 || got[0] != rings[won[0]].Current() {
		t.Errorf("the marker names %v, want [%s]", got, rings[won[0]].Current())
	}
}

func open(t *testing.T, b Backend, ns string, ring *crypt.Keyring) crypt.Store {
	t.Helper()
	if b.Drop != nil {
		t.Cleanup(func() {
			b.Drop(t, ns)
			b.Drop(t, crypt.KeyNamespace(ns))
		})
	}
	s, err := crypt.Open(t.Context(), b.URL, cairn.StoreOptions{Namespace: ns}, ring)
	if err != nil {
		t.Fatalf("open %s: %v", text.RedactURL(b.URL), err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func write(t *testing.T, s cairn.Store, id, marker string) {
	t.Helper()
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
		t.Fatalf("Create(%s): %v", id, err)
	}
	if err := s.Append(t.Context(), id, 0, Events(marker)...); err != nil {
		t.Fatalf("Append(%s): %v", id, err)
	}
}

// snapshot puts a snapshot holding marker as session id's, when s keeps
// snapshots, and reports whether it did. The data is opaque to a store: a
// marker in it stands for a session's state.
func snapshot(t *testing.T, s cairn.Store, id, marker string) bool {
	t.Helper()
	sn, ok := s.(cairn.Snapshotter)
	if !ok {
		return false
	}
	data, _ := json.Marshal(map[string]string{"state": "snapshot " + marker})
	if err := sn.PutSnapshot(t.Context(), id, cairn.Snapshot{Seq: 13, Data: data}); err != nil {
		t.Fatalf("PutSnapshot(%s): %v", id, err)
	}
	return true
}

// testPlain deletes an unencrypted session, with its snapshot when the
// store keeps them, and searches for their markers.
func testPlain(t *testing.T, b Backend) {
	s := open(t, b, "er_"+testenv.RandHex(5), nil)
	marker, snapMarker := Marker(), Marker()
	write(t, s, "plain", marker)
	if where := b.Raw(t, marker); len(where) == 0 {
		t.Fatal("the marker is not in raw storage before the delete: the search cannot see an erasure")
	}
	snapped := snapshot(t, s, "plain", snapMarker)
	if where := b.Raw(t, snapMarker); snapped && len(where) == 0 {
		t.Fatal("the snapshot's marker is not in raw storage before the delete: the search cannot see its erasure")
	}
	if err := s.Delete(t.Context(), "plain"); err != nil {
		t.Fatal(err)
	}
	if b.Settle != nil {
		b.Settle(t)
	}
	for _, m := range []string{marker, snapMarker} {
		where := b.Raw(t, m)
		switch {
		case len(where) > 0 && !b.Lingers:
			t.Errorf("after Delete the marker is still in %s", strings.Join(where, ", "))
		case len(where) > 0:
			t.Logf("after Delete an unencrypted store keeps the marker in %s until it compacts; encryption covers this", strings.Join(where, ", "))
		}
	}
}

// testEncrypted writes a session through the encrypting store: its marker
// never reaches raw storage. Delete removes the data key, and rows kept
// from before (a backup, a WAL, dead tuples) no longer open.
func testEncrypted(t *testing.T, b Backend) {
	ns := "er_" + testenv.RandHex(5)
	ring := NewKeyring(t)
	s := open(t, b, ns, ring)
	marker, snapMarker := Marker(), Marker()
	write(t, s, "sealed", marker)
	snapped := snapshot(t, s, "sealed", snapMarker)
	rec, err := s.Load(t.Context(), "sealed", 0)
	if err != nil {
		t.Fatalf("Load through the key: %v", err)
	}
	if !strings.Contains(string(rec.Events[3].Data), marker) || !strings.Contains(rec.Info.FirstMessage, marker) {
		t.Fatalf("Load through the key does not give the marker back: %s, first %q", rec.Events[3].Data, rec.Info.FirstMessage)
	}
	if where := b.Raw(t, marker); len(where) > 0 {
		t.Fatalf("the marker was written in clear to %s", strings.Join(where, ", "))
	}
	var sealedSnap []byte // the snapshot as the backend holds it
	if snapped {
		got, err := s.(cairn.Snapshotter).LoadSnapshot(t.Context(), "sealed")
		if err != nil || got == nil || !strings.Contains(string(got.Data), snapMarker) {
			t.Fatalf("LoadSnapshot through the key = %v, %v; want the snapshot's marker back", got, err)
		}
		if where := b.Raw(t, snapMarker); len(where) > 0 {
			t.Fatalf("the snapshot's marker was written in clear to %s", strings.Join(where, ", "))
		}
		held, err := s.Inner().(cairn.Snapshotter).LoadSnapshot(t.Context(), "sealed")
		if err != nil || held == nil {
			t.Fatalf("LoadSnapshot of the wrapped store: %v, %v", held, err)
		}
		_, ciphertext, ok := crypt.ParseToken(string(held.Data))
		if !ok {
			t.Fatalf("the wrapped store holds a snapshot that is not a token: %.60s", held.Data)
		}
		// Its ciphertext as the backend stores it: the token's text, or
		// the bytes of the token.
		sealedSnap = held.Data[len(held.Data)-len(base64.RawURLEncoding.EncodeToString(ciphertext)):]
		if where := b.Raw(t, string(sealedSnap)); len(where) == 0 {
			t.Fatal("the sealed snapshot is not in raw storage: the search cannot see its erasure")
		}
	}

	// What a backup or a leftover page holds: the sealed rows.
	kept, err := s.Inner().Load(t.Context(), "sealed", 0)
	if err != nil {
		t.Fatal(err)
	}
	wrapped := wrappedKey(t, b, ns, "sealed")
	if where := b.Raw(t, wrapped); len(where) == 0 {
		t.Fatal("the wrapped data key is not in raw storage: the search cannot see its erasure")
	}

	if err := s.Delete(t.Context(), "sealed"); err != nil {
		t.Fatal(err)
	}
	if b.Settle != nil {
		b.Settle(t)
	}
	if _, err := s.Load(t.Context(), "sealed", 0); !errors.Is(err, cairn.ErrNotFound) {
		t.Errorf("Load after Delete: got %v, want ErrNotFound", err)
	}
	if !b.Lingers {
		if where := b.Raw(t, wrapped); len(where) > 0 {
			t.Errorf("after Delete the wrapped data key is still in %s", strings.Join(where, ", "))
		}
		tok := sealedText(t, kept.Events[3].Data)
		if where := b.Raw(t, tok); len(where) > 0 {
			t.Errorf("after Delete the sealed events are still in %s", strings.Join(where, ", "))
		}
		if where := b.Raw(t, string(sealedSnap)); snapped && len(where) > 0 {
			t.Errorf("after Delete the sealed snapshot is still in %s", strings.Join(where, ", "))
		}
	}

	// Put the kept rows back under the same ID: they do not open, for
	// their data key went with the Delete.
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: "sealed"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Inner().Append(t.Context(), "sealed", 0, kept.Events...); err != nil {
		t.Fatalf("restore the kept rows: %v", err)
	}
	if _, err := s.Load(t.Context(), "sealed", 0); !errors.Is(err, crypt.ErrUnknownKey) {
		t.Errorf("Load of restored rows after Delete: got %v, want ErrUnknownKey", err)
	}
}

// wrappedKey returns the base64 text of the session's wrapped data key, as
// the key namespace stores it.
func wrappedKey(t *testing.T, b Backend, ns, id string) string {
	t.Helper()
	keys, err := cairn.Open(t.Context(), b.URL, cairn.StoreOptions{Namespace: crypt.KeyNamespace(ns)})
	if err != nil {
		t.Fatal(err)
	}
	defer keys.Close()
	rec, err := keys.Load(t.Context(), id, 0)
	if err != nil || len(rec.Events) == 0 {
		t.Fatalf("Load of the data key: %v (%d records)", err, len(rec.Events))
	}
	var c cairn.Custom
	var kr struct {
		W string `json:"w"`
	}
	if err := json.Unmarshal(rec.Events[0].Data, &c); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(c.Payload, &kr); err != nil || kr.W == "" {
		t.Fatalf("key record %s: %v", c.Payload, err)
	}
	if _, err := base64.StdEncoding.DecodeString(kr.W); err != nil {
		t.Fatal(err)
	}
	return kr.W
}

// sealedText returns the token of a sealed message.user.
func sealedText(t *testing.T, data []byte) string {
	t.Helper()
	var m cairn.MessageUser
	if err := json.Unmarshal(data, &m); err != nil || len(m.Parts) != 2 {
		t.Fatalf("sealed message.user %s: %v", data, err)
	}
	return m.Parts[1].Text
}
