package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/sqlite"
)

func ExampleOpen() {
	dir, err := os.MkdirTemp("", "cairn-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()

	s, err := sqlite.Open(ctx, filepath.Join(dir, ".cairn", "cairn.db"), sqlite.Options{})
	if err != nil {
		panic(err)
	}
	defer s.Close()

	if err := s.Create(ctx, cairn.SessionMeta{ID: "support-42"}); err != nil {
		panic(err)
	}
	var mem cairn.Memory
	evs, err := mem.Add(
		cairn.MustEvent(cairn.KindRunStarted, "run-1", cairn.RunStarted{RunID: "run-1", Agent: "support_bot"}),
		cairn.MustEvent(cairn.KindMessageUser, "run-1", cairn.MessageUser{Parts: []cairn.Part{{Type: "text", Text: "Where is my order?"}}}),
	)
	if err != nil {
		panic(err)
	}
	if err := s.Append(ctx, "support-42", 0, evs...); err != nil {
		panic(err)
	}

	rec, err := s.Load(ctx, "support-42", 0)
	if err != nil {
		panic(err)
	}
	fmt.Println(rec.Info.Status, rec.Info.LastSeq, rec.Info.FirstMessage)
	for _, e := range rec.Events {
		fmt.Println(e.Seq, e.Kind)
	}
	// Output:
	// running 2 Where is my order?
	// 1 run.started
	// 2 message.user
}
