package crypt_test

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/wire"
	"github.com/cairnhq/cairn/store/crypt"
	"github.com/cairnhq/cairn/store/crypt/crypttest"
	"github.com/cairnhq/cairn/store/memory"
	_ "github.com/cairnhq/cairn/store/sqlite"
	"github.com/cairnhq/cairn/store/storetest"
)

// backends opens an encrypting store over memory and over SQLite; each
// call with the same name reaches the same data.
func backends(t *testing.T) map[string]func(t *testing.T, ring *crypt.Keyring) crypt.Store {
	return backendsAt(t, filepath.Join(t.TempDir(), "cairn.db"))
}

// backendsAt is backends with the SQLite store at path.
func backendsAt(t *testing.T, path string) map[string]func(t *testing.T, ring *crypt.Keyring) crypt.Store {
	db := memory.NewDB()
	return map[string]func(t *testing.T, ring *crypt.Keyring) crypt.Store{
		"memory": func(t *testing.T, ring *crypt.Keyring) crypt.Store {
			return wrapMemory(t, db, ring, cairn.StoreOptions{})
		},
		"sqlite": func(t *testing.T, ring *crypt.Keyring) crypt.Store {
			s, err := crypt.Open(t.Context(), "sqlite://"+path, cairn.StoreOptions{}, ring)
			return storetest.Opened(t, s, err)
		},
	}
}

func write(t *testing.T, s cairn.Store, id, marker string) []cairn.Event {
	t.Helper()
	if err := s.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
		t.Fatal(err)
	}
	evs := crypttest.Events(marker)
	if err := s.Append(t.Context(), id, 0, evs...); err != nil {
		t.Fatal(err)
	}
	return evs
}

func TestStore_RoundTrip(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ring := crypttest.NewKeyring(t)
			s := open(t, ring)
			marker := crypttest.Marker()
			want := write(t, s, "a", marker)
			rec, err := s.Load(t.Context(), "a", 0)
			if err != nil {
				t.Fatal(err)
			}
			for i, e := range rec.Events {
				if e.Seq != want[i].Seq || e.Kind != want[i].Kind || !e.At.Equal(want[i].At) || !wire.SameJSON(e.Data, want[i].Data) {
					t.Errorf("event %d: got %s %s, want %s %s", i, e.Kind, e.Data, want[i].Kind, want[i].Data)
				}
			}
			if got := rec.Info.FirstMessage; got != "user "+marker {
				t.Errorf("first message = %q, want %q", got, "user "+marker)
			}
			// Listing works on the clear kinds and hints and opens the
			// first message.
			page, err := s.List(t.Context(), cairn.ListOptions{Status: []cairn.Status{cairn.StatusCompleted}})
			if err != nil || len(page.Sessions) != 1 {
				t.Fatalf("List completed: %v, %+v", err, page)
			}
			if info := page.Sessions[0]; info.Steps != 2 || info.LastSeq != 13 || info.FirstMessage != "user "+marker {
				t.Errorf("listed info = %+v, want 2 steps, last seq 13, first message %q", info, "user "+marker)
			}
			// Underneath, nothing holds the marker.
			raw, err := s.Inner().Load(t.Context(), "a", 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range raw.Events {
				if strings.Contains(string(e.Data), marker) {
					t.Errorf("stored seq %d (%s) holds the marker: %s", e.Seq, e.Kind, e.Data)
				}
			}
			if strings.Contains(raw.Info.FirstMessage, marker) {
				t.Errorf("stored first message holds the marker: %q", raw.Info.FirstMessage)
			}
			// Reopened with the same key, from a later seq.
			again := open(t, ring)
			part, err := again.Load(t.Context(), "a", 5)
			if err != nil || len(part.Events) != 9 || !wire.SameJSON(part.Events[0].Data, want[4].Data) {
				t.Fatalf("Load from seq 5 after a reopen: %v, %d events", err, len(part.Events))
			}
		})
	}
}

// TestStore_Refuses swaps, tampers with and forges rows underneath the
// encrypting store, keeping the session's key, and checks that each is
// refused with an error that says where and why.
func TestStore_Refuses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cairn.db")
	for name, open := range backendsAt(t, path) {
		t.Run(name, func(t *testing.T) {
			ring := crypttest.NewKeyring(t)
			s := open(t, ring)
			plain := write(t, s, "a", crypttest.Marker())
			write(t, s, "b", crypttest.Marker())
			rawA, err := s.Inner().Load(t.Context(), "a", 0)
			if err != nil {
				t.Fatal(err)
			}
			rawB, err := s.Inner().Load(t.Context(), "b", 0)
			if err != nil {
				t.Fatal(err)
			}
			tests := []struct {
				name  string
				edit  func(evs []cairn.Event)
				want  error
				words []string
			}{
				{"row from another session", func(evs []cairn.Event) { evs[2] = rawB.Events[2] },
					crypt.ErrTampered, []string{"session a seq 3", "data key"}},
				{"rows swapped in place", func(evs []cairn.Event) {
					evs[4].Data, evs[6].Data = rawA.Events[6].Data, rawA.Events[4].Data
					evs[4].Kind, evs[6].Kind = rawA.Events[6].Kind, rawA.Events[4].Kind
				}, crypt.ErrTampered, []string{"session a seq 5", "does not decrypt"}},
				{"plaintext row", func(evs []cairn.Event) { evs[3] = plain[3] },
					crypt.ErrPlaintext, []string{"session a seq 4 (message.user) is not encrypted"}},
				{"ciphertext changed", func(evs []cairn.Event) {
					evs[6].Data = flipToken(t, evs[6].Data)
				}, crypt.ErrTampered, []string{"seq 7", "does not decrypt"}},
				{"clear status changed", func(evs []cairn.Event) {
					evs[12].Data = []byte(strings.Replace(string(evs[12].Data), `"completed"`, `"failed"`, 1))
				}, crypt.ErrTampered, []string{"seq 13", "clear fields"}},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					evs := clone(rawA.Events)
					tt.edit(evs)
					replaceRows(t, s, "a", evs)
					_, err := s.Load(t.Context(), "a", 0)
					if !errors.Is(err, tt.want) {
						t.Fatalf("Load: got %v, want %v", err, tt.want)
					}
					for _, w := range tt.words {
						if !strings.Contains(err.Error(), w) {
							t.Errorf("error %q does not say %q", err, w)
						}
					}
				})
			}

			// The right rows, the wrong key: the error names both keys.
			replaceRows(t, s, "a", rawA.Events)
			if _, err := s.Load(t.Context(), "a", 0); err != nil {
				t.Fatalf("Load of the untouched rows: %v", err)
			}
			other := crypttest.NewKeyring(t)
			_, err = open(t, other).Load(t.Context(), "a", 0)
			if !errors.Is(err, crypt.ErrUnknownKey) || !strings.Contains(err.Error(), ring.Current()) || !strings.Contains(err.Error(), other.Current()) {
				t.Errorf("Load with another key: got %v, want ErrUnknownKey naming %s and %s", err, ring.Current(), other.Current())
			}
			// Without a key, the namespace is refused, naming its key; a
			// guard that did not look at the marker still refuses each
			// encrypted session.
			if name == "sqlite" {
				_, err := crypt.Open(t.Context(), "sqlite://"+path, cairn.StoreOptions{}, nil)
				var ee *crypt.EncryptedError
				if !errors.As(err, &ee) || !errors.Is(err, crypt.ErrEncrypted) || !strings.Contains(err.Error(), ring.Current()) {
					t.Errorf("Open without a key: got %v, want an EncryptedError naming %s", err, ring.Current())
				}
			}
			guard, err := crypt.Wrap(s.Inner(), crypt.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := guard.Load(t.Context(), "a", 0); !errors.Is(err, crypt.ErrEncrypted) || !errors.Is(err, cairn.ErrSealed) {
				t.Errorf("Load without a key: got %v, want ErrEncrypted", err)
			}
			if err := guard.Append(t.Context(), "a", 13, plain[0]); !errors.Is(err, crypt.ErrEncrypted) {
				t.Errorf("Append without a key: got %v, want ErrEncrypted", err)
			}
			page, err := guard.List(t.Context(), cairn.ListOptions{})
			if err != nil || len(page.Sessions) != 2 || page.Sessions[0].FirstMessage != "" {
				t.Errorf("List without a key: %v, %+v; want two sessions with no first message", err, page)
			}
			// A session written before the key was configured is refused.
			if err := s.Inner().Create(t.Context(), cairn.SessionMeta{ID: "old"}); err != nil {
				t.Fatal(err)
			}
			if err := s.Inner().Append(t.Context(), "old", 0, plain...); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Load(t.Context(), "old", 0); !errors.Is(err, crypt.ErrPlaintext) {
				t.Errorf("Load of an unencrypted session with a key: got %v, want ErrPlaintext", err)
			}
		})
	}
}

// replaceRows puts events in place of a session's stored rows, keeping
// its data key.
func replaceRows(t *testing.T, s crypt.Store, id string, events []cairn.Event) {
	t.Helper()
	in := s.Inner()
	if err := in.Delete(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	if err := in.Create(t.Context(), cairn.SessionMeta{ID: id}); err != nil {
		t.Fatal(err)
	}
	if err := in.Append(t.Context(), id, 0, events...); err != nil {
		t.Fatal(err)
	}
}

// flipToken changes one character of the ciphertext in a sealed tool.result.
func flipToken(t *testing.T, data []byte) []byte {
	t.Helper()
	var r cairn.ToolResult
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	b := []byte(r.CallID)
	i := len(b) - 5
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	r.CallID = string(b)
	out, _ := json.Marshal(r)
	return out
}

func TestStore_RekeyAndDelete(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			oldKey, _ := crypt.GenerateKey()
			newKey, _ := crypt.GenerateKey()
			oldRing, _ := crypt.NewKeyring(oldKey)
			s := open(t, oldRing)
			marker := crypttest.Marker()
			for _, id := range []string{"a", "b", "c"} {
				write(t, s, id, marker)
			}
			if err := s.Create(t.Context(), cairn.SessionMeta{ID: "empty"}); err != nil {
				t.Fatal(err)
			}
			both, err := crypt.NewKeyring(newKey, oldKey)
			if err != nil {
				t.Fatal(err)
			}
			var calls []int
			res, err := open(t, both).Rekey(t.Context(), func(done, total int) { calls = append(calls, done*10+total) })
			if err != nil {
				t.Fatal(err)
			}
			if res != (crypt.RekeyResult{Sessions: 3, Rewrapped: 3}) || len(calls) != 3 || calls[2] != 33 {
				t.Errorf("Rekey = %+v, progress %v; want 3 sessions rewrapped, progress to 3/3", res, calls)
			}
			if res, err := open(t, both).Rekey(t.Context(), nil); err != nil || res.Rewrapped != 0 || res.Current != 3 {
				t.Errorf("second Rekey = %+v, %v; want all 3 already current", res, err)
			}
			// Only the new key now: everything reads, and new sessions too.
			newRing, _ := crypt.NewKeyring(newKey)
			n := open(t, newRing)
			for _, id := range []string{"a", "b", "c"} {
				rec, err := n.Load(t.Context(), id, 0)
				if err != nil || rec.Info.FirstMessage != "user "+marker {
					t.Fatalf("Load(%s) with only the new key: %v", id, err)
				}
			}
			write(t, n, "d", marker)
			if _, err := open(t, oldRing).Load(t.Context(), "d", 0); !errors.Is(err, crypt.ErrUnknownKey) {
				t.Errorf("Load of a new session with only the old key: got %v, want ErrUnknownKey", err)
			}
			// Delete destroys the data key: the rows, put back, do not open.
			raw, _ := n.Inner().Load(t.Context(), "a", 0)
			if err := n.Delete(t.Context(), "a"); err != nil {
				t.Fatal(err)
			}
			if _, err := n.Load(t.Context(), "a", 0); !errors.Is(err, cairn.ErrNotFound) {
				t.Errorf("Load after Delete: got %v, want ErrNotFound", err)
			}
			if err := n.Delete(t.Context(), "a"); !errors.Is(err, cairn.ErrNotFound) {
				t.Errorf("second Delete: got %v, want ErrNotFound", err)
			}
			res, err = open(t, newRing).Rekey(t.Context(), nil)
			if err != nil || res.Sessions != 3 {
				t.Errorf("Rekey after a Delete = %+v, %v; want 3 sessions with a key (b, c, d)", res, err)
			}
			if err := n.Inner().Create(t.Context(), cairn.SessionMeta{ID: "a"}); err != nil {
				t.Fatal(err)
			}
			if err := n.Inner().Append(t.Context(), "a", 0, raw.Events...); err != nil {
				t.Fatal(err)
			}
			if _, err := n.Load(t.Context(), "a", 0); !errors.Is(err, crypt.ErrUnknownKey) {
				t.Errorf("Load of the deleted rows put back: got %v, want ErrUnknownKey", err)
			}
		})
	}
}

func clone(evs []cairn.Event) []cairn.Event { return append([]cairn.Event(nil), evs...) }
