package longterm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/store/memory"
)

func Example() {
	ctx := context.Background()
	mem, err := memory.NewLongTerm(longterm.Options{Embedder: longterm.HashEmbedder{}})
	if err != nil {
		panic(err)
	}
	defer mem.Close()

	for key, text := range map[string]string{
		"food":  "Ada's favourite food is pizza with olives",
		"music": "Ada listens to jazz on Fridays",
		"pet":   "Ada has two cats, Teal and Otter",
	} {
		item := longterm.Item{Namespace: "users/ada", Key: key, Text: text,
			Value:  json.RawMessage(`{"fact":` + fmt.Sprintf("%q", text) + `}`),
			Source: longterm.Source{Session: "chat-42", Seq: 7}}
		if _, err := mem.Put(ctx, item, longterm.PutOptions{}); err != nil {
			panic(err)
		}
	}

	results, err := mem.Search(ctx, longterm.SearchOptions{Query: "what pizza does ada like", Prefix: "users/ada", Limit: 1})
	if err != nil {
		panic(err)
	}
	for _, r := range results {
		fmt.Printf("%s %s: %s (from %s seq %d)\n", r.Item.Namespace, r.Item.Key, r.Item.Text, r.Item.Source.Session, r.Item.Source.Seq)
	}

	// Read, change, write back with the version read: a writer in
	// between makes the second write fail, writing nothing.
	food, _ := mem.Get(ctx, "users/ada", "food")
	food.Text = "Ada's favourite food is now sushi"
	if _, err := mem.Put(ctx, *food, longterm.PutOptions{IfVersion: food.Version}); err != nil {
		panic(err)
	}
	_, err = mem.Put(ctx, *food, longterm.PutOptions{IfVersion: food.Version})
	fmt.Println(errors.Is(err, longterm.ErrConflict))

	n, _ := mem.DeleteNamespace(ctx, "users/ada")
	fmt.Println("forgot", n, "items")
	// Output:
	// users/ada food: Ada's favourite food is pizza with olives (from chat-42 seq 7)
	// true
	// forgot 3 items
}
