package cairngenkit_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/cairnhq/cairn"
	cairngenkit "github.com/cairnhq/cairn/contrib/genkit"
	"github.com/cairnhq/cairn/store/crypt"
	"github.com/cairnhq/cairn/store/memory"
	"github.com/firebase/genkit/go/core/x/session"
)

// TestStore_Sealed: through store/crypt a Genkit session's state is
// encrypted in the backend and reads back with the key; read without the
// key it is refused, naming the session, and nothing is written after it.
func TestStore_Sealed(t *testing.T) {
	ctx := t.Context()
	ns := "genkit_" + cairn.NewID()[24:]
	db := memory.NewDB()
	open := func(ns string) cairn.Store {
		st, err := db.Open(cairn.StoreOptions{Namespace: ns})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	inner, keys := open(ns), open(crypt.KeyNamespace(ns))
	key, err := crypt.NewKey("k1", bytes.Repeat([]byte{7}, crypt.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	ring, err := crypt.NewKeyring(key)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := crypt.Wrap(inner, crypt.Options{Keyring: ring, Keys: keys, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	st := cairngenkit.NewStore[chat](enc, cairngenkit.StoreOptions{})
	if _, err := session.New(ctx, session.WithID[chat]("enc1"), session.WithStore[chat](st), session.WithInitialState(chat{Messages: []string{"the vault code is 4711"}})); err != nil {
		t.Fatal(err)
	}
	rec, err := inner.Load(ctx, "enc1", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range rec.Events {
		if strings.Contains(string(e.Data), "4711") {
			t.Fatalf("plaintext in the backend: %s", e.Data)
		}
	}
	if d, err := st.View().Get(ctx, "enc1"); err != nil || d == nil || d.State.Messages[0] != "the vault code is 4711" {
		t.Fatalf("with the key: %+v, %v", d, err)
	}
	plain := cairngenkit.NewStore[chat](inner, cairngenkit.StoreOptions{})
	_, err = plain.Get(ctx, "enc1")
	var se *crypt.SealedError
	if !errors.As(err, &se) || se.Session != "enc1" {
		t.Fatalf("without the key: %v; want a *crypt.SealedError", err)
	}
	if err := plain.Save(ctx, "enc1", &session.Data[chat]{State: chat{Turns: 1}}); !errors.Is(err, cairn.ErrConflict) {
		t.Errorf("save without the key: %v; want it refused", err)
	}
	if rec, err := inner.Load(ctx, "enc1", 0); err != nil || len(rec.Events) != 1 {
		t.Errorf("the backend holds %d events (%v); want 1", len(rec.Events), err)
	}
}
