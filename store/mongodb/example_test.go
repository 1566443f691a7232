package mongodb_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/mongodb"
)

// Open a store on a MongoDB server, with majority writes for many workers
// and sessions that expire after a month without an update, write a
// session's first turn and read it back. (The tests run it against
// CAIRN_TEST_MONGODB.)
func ExampleOpen() {
	ctx := context.Background()
	s, err := mongodb.Open(ctx, os.Getenv("MONGODB_URI"), cairn.StoreOptions{ // e.g. mongodb://127.0.0.1:27017/cairn?w=majority
		Namespace: "agent_sessions",
		TTL:       30 * 24 * time.Hour,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	_ = s.Delete(ctx, "order-42") // the example's session from an earlier run, if any

	if err := s.Create(ctx, cairn.SessionMeta{ID: "order-42"}); err != nil {
		log.Fatal(err)
	}
	var mem cairn.Memory
	evs, err := mem.Add(
		cairn.MustEvent(cairn.KindRunStarted, "run-1", cairn.RunStarted{RunID: "run-1", Agent: "support_bot"}),
		cairn.MustEvent(cairn.KindMessageUser, "run-1", cairn.MessageUser{Parts: []cairn.Part{{Type: "text", Text: "Where is my order?"}}}),
	)
	if err != nil {
		log.Fatal(err)
	}
	if err := s.Append(ctx, "order-42", 0, evs...); err != nil {
		log.Fatal(err)
	}
	info, err := s.Stat(ctx, "order-42")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(info.Status, info.LastSeq, info.FirstMessage)
	if err := s.Delete(ctx, "order-42"); err != nil {
		log.Fatal(err)
	}
	// Output:
	// running 2 Where is my order?
}
