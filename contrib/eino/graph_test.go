package eino_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cloudwego/eino/components/tool"

	"github.com/cairnhq/cairn"
	eino "github.com/cairnhq/cairn/contrib/eino"
	"github.com/cairnhq/cairn/contrib/eino/internal/demo"
	"github.com/cairnhq/cairn/steps"
)

// The variables that make the test binary a child process running the
// demo graph (TestMain).
const (
	envChild   = "CAIRN_EINO_CHILD"   // the store URL
	envSession = "CAIRN_EINO_SESSION" // the session ID
	envFile    = "CAIRN_EINO_FILE"    // the tool's file
	envApprove = "CAIRN_EINO_APPROVE" // "1": resume, approving
	envCrash   = "CAIRN_EINO_CRASH"   // "1": the process dies right after the tool's effect
)

const prompt = "hello from eino"

func TestMain(m *testing.M) {
	if url := os.Getenv(envChild); url != "" {
		os.Exit(child(url))
	}
	if url := os.Getenv(envADK); url != "" {
		os.Exit(adkChild(url))
	}
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// child runs the demo graph in this process, as the variables say, prints
// its Outcome as JSON and returns the exit status: 0 done, 1 awaiting
// approval or failed, 4 outcome unknown.
func child(url string) int {
	ctx := context.Background()
	st, err := cairn.Open(ctx, url, cairn.StoreOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer st.Close()
	var t tool.InvokableTool = demo.AppendLine{Path: os.Getenv(envFile)}
	if os.Getenv(envCrash) == "1" {
		t = crashing{t}
	}
	out, err := demo.Run(ctx, st, os.Getenv(envSession), t, prompt, os.Getenv(envApprove) == "1")
	if errors.Is(err, steps.ErrOutcomeUnknown) {
		fmt.Fprintln(os.Stderr, err)
		return 4
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	_ = json.NewEncoder(os.Stdout).Encode(out)
	if len(out.Awaiting) > 0 {
		return 1
	}
	return 0
}

// crashing is a tool whose process dies right after its effect, before
// anything records its result.
type crashing struct{ tool.InvokableTool }

func (c crashing) InvokableRun(ctx context.Context, args string, opts ...tool.Option) (string, error) {
	if _, err := c.InvokableTool.InvokableRun(ctx, args, opts...); err != nil {
		return "", err
	}
	os.Exit(9)
	return "", nil
}

// childCmd returns the command that runs the test binary as a child
// process, with env added to this process's environment.
func childCmd(t *testing.T, env ...string) *exec.Cmd {
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// runChild runs the demo graph in a new process of the test binary and
// returns its exit status and output.
func runChild(t *testing.T, url, id, file string, approve, crash bool) (int, demo.Outcome, string) {
	t.Helper()
	flag := func(b bool) string {
		if b {
			return "1"
		}
		return ""
	}
	cmd := childCmd(t, envChild+"="+url, envSession+"="+id, envFile+"="+file,
		envApprove+"="+flag(approve), envCrash+"="+flag(crash))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	code := 0
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run the child process: %v", err)
	}
	var out demo.Outcome
	if len(stdout) > 0 {
		if err := json.Unmarshal(stdout, &out); err != nil {
			t.Fatalf("the child's output %q: %v", stdout, err)
		}
	}
	return code, out, stderr.String()
}

// graphSession opens b's store for a run of the demo graph: its URL, the
// store, a session ID of the test's own starting with prefix (the session
// and its checkpoint are deleted when the test ends), and the file the
// graph's tool appends to.
func graphSession(t *testing.T, b backend, prefix string) (url string, st cairn.Store, id, file string) {
	t.Helper()
	url = b.url(t)
	st = open(t, url)
	id = newID(prefix)
	cleanup(t, st, id, demo.CheckpointID(id))
	return url, st, id, filepath.Join(t.TempDir(), "lines.txt")
}

// TestGraph_ResumeInAnotherProcess runs a real Eino graph — a chat model
// node, a tools node, an interrupt before the tools node — up to the
// interrupt in this process, and resumes it from the store's checkpoint in
// another process, on each backend: the tool runs once, and the session
// holds the graph's model and tool calls as cairn events.
func TestGraph_ResumeInAnotherProcess(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			url, st, id, file := graphSession(t, b, "graph")
			ctx := t.Context()

			out, err := demo.Run(ctx, st, id, demo.AppendLine{Path: file}, prompt, false)
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Awaiting) != 1 || out.Awaiting[0].Name != demo.ToolName {
				t.Fatalf("the first run ended with %+v; want one append_line call awaiting approval", out)
			}
			if _, err := os.Stat(file); !os.IsNotExist(err) {
				t.Fatalf("the tool ran before its approval (stat: %v)", err)
			}
			if info := stat(t, st, id); info.Status != cairn.StatusAwaiting {
				t.Fatalf("status after the interrupt = %s, want %s", info.Status, cairn.StatusAwaiting)
			}
			if h, err := eino.NewCheckPointStore(st, "").History(ctx, demo.CheckpointID(id)); err != nil || len(h) == 0 {
				t.Fatalf("the interrupt left no checkpoint: %d, %v", len(h), err)
			}

			code, out, stderr := runChild(t, url, id, file, true, false)
			if code != 0 || out.Output != "done: appended "+prompt {
				t.Fatalf("the resumed run in another process: exit %d, %+v, stderr %q; want exit 0 and the model's answer", code, out, stderr)
			}
			if got := lines(t, file); !slices.Equal(got, []string{prompt}) {
				t.Fatalf("the file holds %q; want the line once", got)
			}
			want := []string{"run.started", "message.user", "model.response", "run.interrupted", "approval.decided",
				"tool.started", "tool.result", "model.response", "run.finished"}
			if got := kinds(t, st, id); !slices.Equal(got, want) {
				t.Fatalf("the session's events: %v\nwant %v", got, want)
			}
			if info := stat(t, st, id); info.Status != cairn.StatusCompleted || info.Steps != 3 {
				t.Fatalf("the session after the resumed run: %+v; want completed, 3 steps", info)
			}

			// Approving again finds nothing to approve and runs nothing.
			code, _, stderr = runChild(t, url, id, file, true, false)
			if code != 1 || !strings.Contains(stderr, "nothing waits for approval") {
				t.Fatalf("a second approval: exit %d, stderr %q; want exit 1 saying nothing waits", code, stderr)
			}
			if got := lines(t, file); len(got) != 1 {
				t.Fatalf("the file holds %q after a second approval", got)
			}
		})
	}
}

// TestGraph_CrashInTool kills the process that runs a not-idempotent tool
// right after its effect: the next process does not run the tool again
// but reports its outcome unknown, and once the caller resolves it, the
// graph goes on from its checkpoint with the resolved result.
func TestGraph_CrashInTool(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			url, st, id, file := graphSession(t, b, "crash")
			ctx := t.Context()

			if code, out, stderr := runChild(t, url, id, file, false, false); code != 1 || len(out.Awaiting) != 1 {
				t.Fatalf("the first run: exit %d, %+v, stderr %q; want exit 1, awaiting approval", code, out, stderr)
			}
			if code, _, stderr := runChild(t, url, id, file, true, true); code != 9 {
				t.Fatalf("the run that dies in the tool: exit %d, stderr %q; want 9", code, stderr)
			}
			if got := lines(t, file); len(got) != 1 {
				t.Fatalf("the file holds %q; want the one line the dead process wrote", got)
			}
			for range 2 {
				code, _, stderr := runChild(t, url, id, file, true, false)
				if code != 4 || !strings.Contains(stderr, "outcome unknown") {
					t.Fatalf("the run after the crash: exit %d, stderr %q; want 4, outcome unknown", code, stderr)
				}
				if got := lines(t, file); len(got) != 1 {
					t.Fatalf("the tool ran again after the crash: the file holds %q", got)
				}
			}

			rec, err := eino.NewRecorder(ctx, st, id, eino.Options{})
			if err != nil {
				t.Fatal(err)
			}
			unknown := rec.Unknown()
			if len(unknown) != 1 {
				t.Fatalf("Unknown = %v, want the one call", unknown)
			}
			if err := rec.Resolve(ctx, unknown[0], "appended (checked by hand)"); err != nil {
				t.Fatal(err)
			}
			rec.Close()

			code, out, stderr := runChild(t, url, id, file, true, false)
			if code != 0 || out.Output != "done: appended (checked by hand)" {
				t.Fatalf("the run after Resolve: exit %d, %+v, stderr %q; want 0 and the resolved result", code, out, stderr)
			}
			if got := lines(t, file); len(got) != 1 {
				t.Fatalf("the file holds %q at the end; want one line", got)
			}
		})
	}
}

func stat(t *testing.T, st cairn.Store, id string) *cairn.SessionInfo {
	t.Helper()
	info, err := st.Stat(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func kinds(t *testing.T, st cairn.Store, id string) []string {
	t.Helper()
	rec, err := st.Load(t.Context(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range rec.Events {
		out = append(out, string(e.Kind))
	}
	return out
}

func lines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}
