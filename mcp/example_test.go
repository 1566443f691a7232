package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnhq/cairn/mcp"
)

type addArgs struct {
	A int `json:"a"`
	B int `json:"b"`
}

// ExampleTools turns the tools of a client session of your own into agent
// tools, here with a server in the same process.
func ExampleTools() {
	ctx := context.Background()
	server := sdk.NewServer(&sdk.Implementation{Name: "calc", Version: "1"}, nil)
	sdk.AddTool(server, &sdk.Tool{Name: "add", Description: "Adds two numbers.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *sdk.CallToolRequest, in addArgs) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprint(in.A + in.B)}}}, nil, nil
		})
	sdk.AddTool(server, &sdk.Tool{Name: "reset", Description: "Forgets everything."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return nil, nil, nil
		})
	ct, st := sdk.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		panic(err)
	}
	defer ss.Close()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "app", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		panic(err)
	}
	defer cs.Close()

	tools, err := mcp.Tools(ctx, cs, mcp.Config{Name: "calc"})
	if err != nil {
		panic(err)
	}
	for _, t := range tools {
		fmt.Printf("%s: idempotent %v, approval %v\n", t.Name(), t.Idempotent(), t.RequiresApproval())
	}
	out, err := tools[0].Call(ctx, json.RawMessage(`{"a": 2, "b": 3}`))
	fmt.Println(out, err)
	// Output:
	// calc_add: idempotent true, approval false
	// calc_reset: idempotent false, approval true
	// 5 <nil>
}
