package cairn_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/memory"
)

func userMessage(text string) cairn.Event {
	return cairn.MustEvent(cairn.KindMessageUser, "run-1", cairn.MessageUser{Parts: []cairn.Part{{Type: "text", Text: text}}})
}

func answer(text string) cairn.Event {
	return cairn.MustEvent(cairn.KindModelResponse, "run-1", cairn.ModelResponse{Text: text, Model: "offline", FinishReason: "stop"})
}

// Dump a session's memory to JSON, restore it elsewhere (another process,
// another store) and continue it.
func ExampleMemory_DumpJSON() {
	var m cairn.Memory
	if _, err := m.Add(userMessage("First question"), answer("First answer")); err != nil {
		panic(err)
	}
	saved, err := m.DumpJSON() // write it to a file, a row, a cache, anywhere
	if err != nil {
		panic(err)
	}

	// Later, in another process: LoadJSON validates everything it reads.
	restored, err := cairn.LoadJSON(saved)
	if err != nil {
		panic(err)
	}
	if _, err := restored.Add(userMessage("A follow-up")); err != nil {
		panic(err)
	}
	st, _ := restored.State()
	for _, msg := range st.Messages {
		fmt.Printf("%s: %s\n", msg.Role, msg.Content)
	}

	// A damaged document is refused, never half loaded.
	_, err = cairn.LoadJSON(saved[:len(saved)-10])
	var le *cairn.MemoryLoadError
	fmt.Println("truncated copy refused:", errors.As(err, &le))
	// Output:
	// user: First question
	// assistant: First answer
	// user: A follow-up
	// truncated copy refused: true
}

// Give a session a name of your own and find it again by that name.
func ExampleStore_named() {
	ctx := context.Background()
	store, _ := memory.New(cairn.StoreOptions{})
	defer store.Close()

	if err := store.Create(ctx, cairn.SessionMeta{ID: "review-pr-42"}); err != nil {
		panic(err)
	}
	var m cairn.Memory
	evs, _ := m.Add(userMessage("Review pull request 42"))
	if err := store.Append(ctx, "review-pr-42", 0, evs...); err != nil {
		panic(err)
	}

	// A new session with a name the store holds is refused: continue the saved one.
	err := store.Create(ctx, cairn.SessionMeta{ID: "review-pr-42"})
	fmt.Println("create again:", errors.Is(err, cairn.ErrExists))

	rec, _ := store.Load(ctx, "review-pr-42", 0)
	st, _ := cairn.Fold(rec.Events)
	fmt.Println("found:", rec.Info.ID, "-", st.FirstMessage)

	fmt.Println("bad name:", errors.Is(store.Create(ctx, cairn.SessionMeta{ID: "../etc/passwd"}), cairn.ErrInvalidID))
	// Output:
	// create again: true
	// found: review-pr-42 - Review pull request 42
	// bad name: true
}

// List what is saved, most recently updated first.
func ExampleStore_list() {
	ctx := context.Background()
	store, _ := memory.New(cairn.StoreOptions{})
	defer store.Close()
	for _, s := range []struct{ id, text string }{{"a", "Plan a trip"}, {"b", "Fix the build"}} {
		_ = store.Create(ctx, cairn.SessionMeta{ID: s.id})
		var m cairn.Memory
		evs, _ := m.Add(userMessage(s.text), answer("ok"))
		_ = store.Append(ctx, s.id, 0, evs...)
	}
	page, _ := store.List(ctx, cairn.ListOptions{})
	for _, info := range page.Sessions {
		fmt.Printf("%s %q steps=%d\n", info.ID, info.FirstMessage, info.Steps)
	}
	// Output:
	// b "Fix the build" steps=1
	// a "Plan a trip" steps=1
}
