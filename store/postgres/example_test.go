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

// Open a store that owns its connection pool, create a session and list it.
func ExampleOpen() {
	ctx := context.Background()
	s, err := postgres.Open(ctx, os.Getenv("DATABASE_URL"), cairn.StoreOptions{Namespace: "support_bot"})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	if err := s.Create(ctx, cairn.SessionMeta{ID: cairn.NewID(), Labels: map[string]string{"user": "42"}}); err != nil {
		log.Fatal(err)
	}
	page, err := s.List(ctx, cairn.ListOptions{Labels: map[string]string{"user": "42"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(page.Sessions), "session(s) in schema", s.Schema())
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
