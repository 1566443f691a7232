package cairngenkit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cairnhq/cairn"
	cairngenkit "github.com/cairnhq/cairn/contrib/genkit"
	"github.com/cairnhq/cairn/store/memory"
	"github.com/firebase/genkit/go/core/x/session"
	"github.com/firebase/genkit/go/core/x/streaming"
)

// A Genkit session kept in a cairn store: its state survives the process,
// and a writer that saves over a newer state is refused.
func ExampleStore() {
	ctx := context.Background()
	cs, err := memory.New(cairn.StoreOptions{}) // or cairn.Open(ctx, "sqlite:…" / "postgres://…" / "redis://…", …)
	if err != nil {
		panic(err)
	}
	defer cs.Close()
	type Cart struct{ Items []string }
	store := cairngenkit.NewStore[Cart](cs, cairngenkit.StoreOptions{})

	sess, err := session.New(ctx, session.WithID[Cart]("cart-1"), session.WithStore[Cart](store))
	if err != nil {
		panic(err)
	}
	if err := sess.UpdateState(ctx, Cart{Items: []string{"tea"}}); err != nil {
		panic(err)
	}

	// Another process (here: another view) loads it and adds an item.
	other, err := session.Load(ctx, store.View(), "cart-1")
	if err != nil {
		panic(err)
	}
	fmt.Println("loaded:", other.State().Items)
	if err := other.UpdateState(ctx, Cart{Items: append(other.State().Items, "milk")}); err != nil {
		panic(err)
	}

	// The first one's view is stale now: its save is refused.
	err = sess.UpdateState(ctx, Cart{Items: []string{"coffee"}})
	fmt.Println("stale save refused:", errors.Is(err, cairn.ErrConflict))

	info, err := cs.Stat(ctx, "cart-1")
	if err != nil {
		panic(err)
	}
	fmt.Println("saves recorded:", info.LastSeq)
	// Output:
	// loaded: [tea]
	// stale save refused: true
	// saves recorded: 3
}

// A durable stream: the chunks are events of a cairn session, so a reader
// that comes back later gets them all, and the result.
func ExampleStreamManager() {
	ctx := context.Background()
	cs, err := memory.New(cairn.StoreOptions{})
	if err != nil {
		panic(err)
	}
	defer cs.Close()
	m := cairngenkit.NewStreamManager(cs, cairngenkit.StreamOptions{})

	in, err := m.Open(ctx, "stream-1")
	if err != nil {
		panic(err)
	}
	for _, c := range []string{`"a"`, `"b"`, `"c"`} {
		if err := in.Write(ctx, json.RawMessage(c)); err != nil {
			panic(err)
		}
	}
	if err := in.Done(ctx, json.RawMessage(`"abc"`)); err != nil {
		panic(err)
	}

	// A reader that had received the first chunk before a restart.
	events, unsubscribe, err := m.SubscribeFrom(ctx, "stream-1", 1)
	if err != nil {
		panic(err)
	}
	defer unsubscribe()
	for ev := range events {
		switch ev.Type {
		case streaming.StreamEventChunk:
			fmt.Println("chunk", string(ev.Chunk))
		case streaming.StreamEventDone:
			fmt.Println("done", string(ev.Output))
		}
	}
	// Output:
	// chunk "b"
	// chunk "c"
	// done "abc"
}
