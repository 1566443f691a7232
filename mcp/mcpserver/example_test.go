package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/mcp/mcpserver"
	"github.com/cairnhq/cairn/store/memory"
)

// A server over an in-process store, and an MCP client that saves a
// memory and finds it again.
func Example() {
	ctx := context.Background()
	sessions, err := memory.New(cairn.StoreOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer sessions.Close()
	mem, err := longterm.Open(ctx, "memory:", longterm.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer mem.Close()

	srv := mcpserver.New(mcpserver.Config{Memory: mem, Sessions: sessions})
	serverEnd, clientEnd := sdk.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, serverEnd, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ss.Close()
	client := sdk.NewClient(&sdk.Implementation{Name: "example", Version: "1"}, nil)
	cs, err := client.Connect(ctx, clientEnd, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()

	_, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: mcpserver.ToolMemorySave, Arguments: map[string]any{
		"namespace": "users/ada", "key": "favorite-food", "value": map[string]any{"food": "pizza"}, "text": "Ada loves pizza",
	}})
	if err != nil {
		log.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: mcpserver.ToolMemorySearch, Arguments: map[string]any{"query": "pizza", "namespace": "users"}})
	if err != nil {
		log.Fatal(err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var found mcpserver.SearchOutput
	if err := json.Unmarshal(b, &found); err != nil {
		log.Fatal(err)
	}
	for _, r := range found.Results {
		fmt.Println(r.Item.Namespace, r.Item.Key, r.Item.Value, r.Score)
	}

	res, _ = cs.CallTool(ctx, &sdk.CallToolParams{Name: mcpserver.ToolMemoryGet, Arguments: map[string]any{"namespace": "users/ada", "key": "nothing"}})
	fmt.Println(res.IsError, res.Content[0].(*sdk.TextContent).Text)
	// Output:
	// users/ada favorite-food map[food:pizza] 1
	// true no memory under namespace "users/ada" and key "nothing"
}
