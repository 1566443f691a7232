package mongodb_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/mongodb"
)

// Open a store on a MongoDB server, with majority writes for many workers
// and sessions that expire after a month without an update.
func ExampleOpen() {
	ctx := context.Background()
	s, err := mongodb.Open(ctx, "mongodb://127.0.0.1:27017/cairn?w=majority", cairn.StoreOptions{
		Namespace: "agent_sessions",
		TTL:       30 * 24 * time.Hour,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	if err := s.Create(ctx, cairn.SessionMeta{ID: cairn.NewID()}); err != nil {
		log.Fatal(err)
	}
	fmt.Println("server purges expired sessions itself:", s.NativeExpiry())
}
