package redis_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/redis"
)

// Open a store from a URL (it owns its connection), write a session's
// first turn and read it back. (The tests run it against CAIRN_TEST_REDIS.)
func ExampleOpen() {
	ctx := context.Background()
	s, err := redis.Open(ctx, os.Getenv("REDIS_URL"), cairn.StoreOptions{ // e.g. redis://127.0.0.1:6379/0
		Namespace: "agent_sessions",
		TTL:       24 * time.Hour,
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
	rec, err := s.Load(ctx, "order-42", 0)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(rec.Info.Status, rec.Info.LastSeq, rec.Info.FirstMessage)
	for _, e := range rec.Events {
		fmt.Println(e.Seq, e.Kind)
	}
	if err := s.Delete(ctx, "order-42"); err != nil {
		log.Fatal(err)
	}
	// Output:
	// running 2 Where is my order?
	// 1 run.started
	// 2 message.user
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
