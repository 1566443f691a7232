package eino_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cloudwego/eino/adk"
	"github.com/cloudwego/eino/callbacks"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"

	"github.com/cairnhq/cairn"
	eino "github.com/cairnhq/cairn/contrib/eino"
	"github.com/cairnhq/cairn/contrib/eino/internal/demo"
)

// envADK makes the test binary a child process that runs an adk agent
// (TestMain): the store URL. Eino's adk takes callbacks as global
// handlers only, so the agent runs in a process of its own.
const envADK = "CAIRN_EINO_ADK"

// adkChild runs a ChatModelAgent with the demo model and the demo tool,
// wrapped, its calls recorded by a Recorder installed as a global handler.
func adkChild(url string) int {
	ctx := context.Background()
	fail := func(err error) int { fmt.Fprintln(os.Stderr, err); return 1 }
	st, err := cairn.Open(ctx, url, cairn.StoreOptions{})
	if err != nil {
		return fail(err)
	}
	defer st.Close()
	rec, err := eino.NewRecorder(ctx, st, os.Getenv(envSession), eino.Options{Name: "adk-demo"})
	if err != nil {
		return fail(err)
	}
	defer rec.Close()
	callbacks.AppendGlobalHandlers(rec.Handler())
	agent, err := adk.NewChatModelAgent(ctx, &adk.ChatModelAgentConfig{
		Name: "demo", Description: "appends lines", Model: demo.Model{},
		ToolsConfig: adk.ToolsConfig{ToolsNodeConfig: compose.ToolsNodeConfig{
			Tools: []tool.BaseTool{rec.Tool(demo.AppendLine{Path: os.Getenv(envFile)}, eino.NotIdempotent())},
		}},
	})
	if err != nil {
		return fail(err)
	}
	if err := rec.Session().User(ctx, prompt); err != nil {
		return fail(err)
	}
	iter := adk.NewRunner(ctx, adk.RunnerConfig{Agent: agent}).Query(ctx, prompt)
	var last string
	for {
		ev, ok := iter.Next()
		if !ok {
			break
		}
		if ev.Err != nil {
			return fail(ev.Err)
		}
		if ev.Output != nil && ev.Output.MessageOutput != nil && ev.Output.MessageOutput.Message != nil {
			last = ev.Output.MessageOutput.Message.Content
		}
	}
	if err := rec.Err(); err != nil {
		return fail(err)
	}
	if err := rec.Finish(ctx, last); err != nil {
		return fail(err)
	}
	return 0
}

// TestADK_Agent runs an Eino adk ChatModelAgent in another process, its
// Recorder installed as a global callbacks handler: the session holds the
// agent's model calls and its tool call, as cairn's own agent writes them.
func TestADK_Agent(t *testing.T) {
	url := backends[0].url(t) // sqlite: the process's own store
	st := open(t, url)
	id := newID("adk")
	file := filepath.Join(t.TempDir(), "lines.txt")
	cmd := childCmd(t, envADK+"="+url, envSession+"="+id, envFile+"="+file)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the adk agent's process: %v\n%s", err, out)
	}
	want := []string{"run.started", "message.user", "model.response", "tool.started", "tool.result", "model.response", "run.finished"}
	if got := kinds(t, st, id); !slices.Equal(got, want) {
		t.Fatalf("the session's events: %v\nwant %v", got, want)
	}
	if got := lines(t, file); !slices.Equal(got, []string{prompt}) {
		t.Fatalf("the file holds %q; want the line once", got)
	}
	rec, err := st.Load(t.Context(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := rec.Events[len(rec.Events)-1].Decode()
	if f := v.(*cairn.RunFinished); f.Output != "done: appended "+prompt {
		t.Errorf("the run's output = %q", f.Output)
	}
}
