package cairngenkit_test

import (
	"testing"

	cairngenkit "github.com/cairnhq/cairn/contrib/genkit"
	"github.com/firebase/genkit/go/core/x/session"
)

// BenchmarkStore_Update measures one turn of a flow on a session saved
// many times: session.Load (Get) and UpdateState (one append), on each
// backend.
func BenchmarkStore_Update(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			bk := benchBackend(b, be.name, be.env)
			st := cairngenkit.NewStore[chat](bk, cairngenkit.StoreOptions{})
			ctx := b.Context()
			if _, err := session.New(ctx, session.WithID[chat]("bench"), session.WithStore[chat](st)); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				sess, err := session.Load(ctx, st, "bench")
				if err != nil {
					b.Fatal(err)
				}
				c := sess.State()
				c.Turns++
				c.Messages = append(c.Messages[max(0, len(c.Messages)-9):], "a message of a few words")
				if err := sess.UpdateState(ctx, c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
