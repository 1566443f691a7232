package worker_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/provider/offline"
	"github.com/cairnhq/cairn/store/memory"
	"github.com/cairnhq/cairn/worker"
)

// A Go program queues a run and runs a worker that finishes it. Here both
// share one process and an in-memory store; in production they are any
// number of processes sharing a store such as PostgreSQL.
func Example() {
	ctx := context.Background()
	st, _ := memory.New(cairn.StoreOptions{})
	a := &agent.Agent{Name: "summariser", Model: offline.New(), Store: st}

	id, _ := worker.Enqueue(ctx, st, "summarise yesterday's tickets", worker.EnqueueOptions{ID: "job-1"})

	wctx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() {
		done <- worker.Run(wctx, worker.Options{Agent: a, Concurrency: 4, Poll: 10 * time.Millisecond,
			Logger: slog.New(slog.DiscardHandler)})
	}()
	for {
		rec, _ := st.Load(ctx, id, 0)
		if rec.Info.Status == cairn.StatusCompleted {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	fmt.Println("worker stopped:", <-done)

	s, _ := a.Resume(ctx, id)
	fmt.Println(s.State().Status, "-", s.State().Output)
	// Output:
	// worker stopped: <nil>
	// completed - Turn 1. You said "summarise yesterday's tickets". This is the start of our conversation.
}
