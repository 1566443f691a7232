package mcp

import (
	"context"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnhq/cairn/agent"
)

func TestRender(t *testing.T) {
	size := int64(12)
	cases := []struct {
		name string
		res  *sdk.CallToolResult
		want string
	}{
		{"text blocks", &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "a"}, &sdk.TextContent{Text: "b"}}}, "a\nb"},
		{"structured content alone",
			&sdk.CallToolResult{StructuredContent: map[string]any{"n": 1}}, `{"n":1}`},
		{"structured content the text holds as JSON, in another order",
			&sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: `{"b": 2, "a": 1}`}}, StructuredContent: map[string]any{"a": 1, "b": 2}},
			`{"b": 2, "a": 1}`},
		{"structured content wrapping the text",
			&sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "file body"}}, StructuredContent: map[string]any{"content": "file body"}},
			"file body"},
		{"structured content that says more",
			&sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "22 degrees"}}, StructuredContent: map[string]any{"t": 22}},
			"22 degrees\nstructured content: {\"t\":22}"},
		{"resource link",
			&sdk.CallToolResult{Content: []sdk.Content{&sdk.ResourceLink{URI: "file:///a.txt", Name: "a.txt", MIMEType: "text/plain", Size: &size, Description: "notes"}}},
			"[resource link file:///a.txt (a.txt, text/plain, 12 bytes): notes]"},
		{"embedded text resource",
			&sdk.CallToolResult{Content: []sdk.Content{&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "mem://x", MIMEType: "text/plain", Text: "hello"}}}},
			"[resource mem://x text/plain]\nhello"},
		{"embedded blob",
			&sdk.CallToolResult{Content: []sdk.Content{&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "mem://z", MIMEType: "application/gzip", Blob: []byte("abc")}}}},
			"[resource mem://z application/gzip, 3 bytes, sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad; not kept]"},
		{"audio",
			&sdk.CallToolResult{Content: []sdk.Content{&sdk.AudioContent{MIMEType: "audio/wav", Data: []byte("abc")}}},
			"[audio audio/wav, 3 bytes, sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad; not kept]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := render(context.Background(), c.res, nil, 0); got != c.want {
				t.Errorf("got %q\nwant %q", got, c.want)
			}
		})
	}
}

func TestCut(t *testing.T) {
	s := strings.Repeat("é", 10) // 20 bytes
	got := agent.CutOutput(s, 5)
	if !strings.HasPrefix(got, "éé\n[cut: the result has 20 bytes; the first 4 are shown]") {
		t.Errorf("cut in the middle of a character: %q", got)
	}
	if agent.CutOutput("short", 0) != "short" {
		t.Error("a short text was cut")
	}
}

func TestToolName(t *testing.T) {
	cases := []struct{ server, tool, want string }{
		{"fs", "read_file", "fs_read_file"},
		{"ev", "get-sum", "ev_get-sum"},
		{"t", "dotted.name", "t_dotted_name"},
		{"t", "naïve tool/x", "t_na_ve_tool_x"},
	}
	for _, c := range cases {
		if got := toolName(c.server, c.tool); got != c.want {
			t.Errorf("toolName(%q, %q) = %q, want %q", c.server, c.tool, got, c.want)
		}
	}
	long := toolName("server", strings.Repeat("a", 100))
	if len(long) != MaxNameLen || long == toolName("server", strings.Repeat("a", 99)) {
		t.Errorf("long names: %q (%d), must be %d long and distinct", long, len(long), MaxNameLen)
	}
}
