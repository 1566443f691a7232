package redis_test

import (
	"context"
	"fmt"
	"log"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/redis"
)

// Open a store from a URL; it owns its connection.
func ExampleOpen() {
	ctx := context.Background()
	s, err := redis.Open(ctx, "redis://127.0.0.1:6379/0", cairn.StoreOptions{
		Namespace: "agent_sessions",
		TTL:       24 * time.Hour,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	if err := s.Create(ctx, cairn.SessionMeta{ID: cairn.NewID()}); err != nil {
		log.Fatal(err)
	}
}

// Use Redis Cluster through a cluster client that the caller owns. Every
// key of a session lives in one slot, so each append is still one script.
func ExampleNew_cluster() {
	client := goredis.NewClusterClient(&goredis.ClusterOptions{
		Addrs:                    []string{"redis-1:6379", "redis-2:6379", "redis-3:6379"},
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	defer client.Close()
	s, err := redis.New(client, cairn.StoreOptions{Namespace: "agent_sessions"})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	page, err := s.List(context.Background(), cairn.ListOptions{Limit: 10})
	if err != nil {
		log.Fatal(err)
	}
	for _, info := range page.Sessions {
		fmt.Println(info.ID, info.Status, info.FirstMessage)
	}
}
