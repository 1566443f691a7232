package postgres_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/postgres"
)

// Open a store that owns its connection pool, write a session's first
// turn and read it back. (The tests run it against CAIRN_TEST_POSTGRES.)
func ExampleOpen() {
	ctx := context.Background()
	s, err := postgres.Open(ctx, os.Getenv("DATABASE_URL"), cairn.StoreOptions{Namespace: "support_bot"})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	_ = s.Delete(ctx, "order-42") // the example's session from an earlier run, if any

	if err := s.Create(ctx, cairn.SessionMeta{ID: "order-42", Labels: map[string]string{"user": "42"}}); err != nil {
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
	fmt.Println(info.Status, info.LastSeq, info.FirstMessage, "in schema", s.Schema())
	if err := s.Delete(ctx, "order-42"); err != nil {
		log.Fatal(err)
	}
	// Output:
	// running 2 Where is my order? in schema cairn_support_bot
}

// Share a pool the program already has; closing the store leaves it open.
func ExampleNew() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	s, err := postgres.New(ctx, pool, cairn.StoreOptions{Namespace: "billing_agent"})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
}
