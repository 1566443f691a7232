package cairngenkit_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cairnhq/cairn"
	cairngenkit "github.com/cairnhq/cairn/contrib/genkit"
	"github.com/firebase/genkit/go/core/x/session"
	"github.com/firebase/genkit/go/core/x/streaming"
)

// lostReply is a store whose appends, while lose is set, are written and
// then reported failed, as when the reply of the server is lost.
type lostReply struct {
	cairn.Store
	lose atomic.Bool
}

var errLost = errors.New("connection reset (the reply was lost)")

func (s *lostReply) Append(ctx context.Context, id string, expectSeq int64, events ...cairn.Event) error {
	if err := s.Store.Append(ctx, id, expectSeq, events...); err != nil {
		return err
	}
	if s.lose.Load() {
		return errLost
	}
	return nil
}

// TestStreamManager_LostReply: a chunk and an end whose replies are lost
// are recorded once each, and the writer goes on from the right place.
func TestStreamManager_LostReply(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		cs := &lostReply{Store: b.open(t)}
		m := cairngenkit.NewStreamManager(cs, cairngenkit.StreamOptions{})
		in, err := m.Open(ctx, "lost1")
		if err != nil {
			t.Fatal(err)
		}
		cs.lose.Store(true)
		if err := in.Write(ctx, json.RawMessage(`"a"`)); !errors.Is(err, errLost) {
			t.Fatalf("write with the reply lost: %v", err)
		}
		cs.lose.Store(false)
		if err := in.Write(ctx, json.RawMessage(`"b"`)); err != nil {
			t.Fatalf("write after a lost reply: %v", err)
		}
		cs.lose.Store(true)
		if err := in.Done(ctx, json.RawMessage(`"ab"`)); !errors.Is(err, errLost) {
			t.Fatalf("done with the reply lost: %v", err)
		}
		cs.lose.Store(false)
		if err := in.Done(ctx, json.RawMessage(`"ab"`)); err != nil {
			t.Fatalf("done again: %v", err)
		}
		ch, unsub, err := m.Subscribe(ctx, "lost1")
		if err != nil {
			t.Fatal(err)
		}
		defer unsub()
		chunks, end := collect(t, ch)
		if strings.Join(chunks, ",") != `"a","b"` || end.Type != streaming.StreamEventDone || string(end.Output) != `"ab"` {
			t.Errorf("stream = %v, %+v; want a, b, done ab", chunks, end)
		}
		rec, err := cs.Load(ctx, "lost1", 0)
		if err != nil || len(rec.Events) != 4 {
			t.Errorf("the session holds %d events (%v); want 4: start, a, b, end", len(rec.Events), err)
		}
	})
}

// TestStore_LostReply: a save whose reply is lost is sent again before the
// next save, and recorded once; when another writer got in meanwhile, the
// next save is a conflict.
func TestStore_LostReply(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		cs := &lostReply{Store: b.open(t)}
		st := cairngenkit.NewStore[chat](cs, cairngenkit.StoreOptions{})
		sess, err := session.New(ctx, session.WithID[chat]("lost2"), session.WithStore[chat](st))
		if err != nil {
			t.Fatal(err)
		}
		cs.lose.Store(true)
		if err := sess.UpdateState(ctx, chat{Turns: 1}); !errors.Is(err, errLost) {
			t.Fatalf("save with the reply lost: %v", err)
		}
		cs.lose.Store(false)
		if err := sess.UpdateState(ctx, chat{Turns: 2}); err != nil {
			t.Fatalf("save after a lost reply: %v", err)
		}
		rec, err := cs.Load(ctx, "lost2", 0)
		if err != nil || len(rec.Events) != 3 {
			t.Fatalf("the session holds %d events (%v); want 3: new, turn 1, turn 2", len(rec.Events), err)
		}
		if d, err := st.View().Get(ctx, "lost2"); err != nil || d.State.Turns != 2 {
			t.Fatalf("state = %+v, %v; want 2 turns", d, err)
		}

		// A lost reply, then another writer saves: the next save is refused.
		cs.lose.Store(true)
		if err := sess.UpdateState(ctx, chat{Turns: 3}); !errors.Is(err, errLost) {
			t.Fatalf("save with the reply lost: %v", err)
		}
		cs.lose.Store(false)
		other, err := session.Load(ctx, st.View(), "lost2")
		if err != nil {
			t.Fatal(err)
		}
		if err := other.UpdateState(ctx, chat{Turns: 30}); err != nil {
			t.Fatal(err)
		}
		if err := sess.UpdateState(ctx, chat{Turns: 4}); !errors.Is(err, cairn.ErrConflict) {
			t.Fatalf("save after another writer's: %v; want a conflict", err)
		}
	})
}
