// Command crashprog runs or resumes one scripted session, for the crash
// test of package agent: the test kills it at random moments and starts it
// again until the run completes.
//
//	crashprog -store sqlite:///path/cairn.db -session ID -script steps.json [-calls FILE]
//
// With -calls, each model call that returns appends a line "PID INDEX" to
// FILE before its response is recorded (INDEX: the responses the session
// held when it was made), and the response records the model as
// "script@PID": the test tells from both whether a call was made again
// after its response was stored. It prints the final status and exits 0 when the session's run has
// completed, 1 on an error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/agent/builtin"
	"github.com/cairnhq/cairn/provider"
	"github.com/cairnhq/cairn/provider/script"
	_ "github.com/cairnhq/cairn/store/file"
	_ "github.com/cairnhq/cairn/store/memory"
	_ "github.com/cairnhq/cairn/store/sqlite"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "crashprog:", err)
		os.Exit(1)
	}
}

func run() error {
	storeURL := flag.String("store", "sqlite:///cairn.db", "store URL")
	id := flag.String("session", "crash", "session ID")
	scriptPath := flag.String("script", "", "script model file")
	callsPath := flag.String("calls", "", "file to log each model call that returns to")
	flag.Parse()

	ctx := context.Background()
	st, err := cairn.Open(ctx, *storeURL, cairn.StoreOptions{})
	if err != nil {
		return err
	}
	defer st.Close()
	model, err := script.Load(*scriptPath)
	if err != nil {
		return err
	}
	var m provider.Model = model
	if *callsPath != "" {
		m = &loggedModel{Model: model, path: *callsPath}
	}
	a := &agent.Agent{
		Name:         "crash",
		Instructions: "Follow the script.",
		Model:        m,
		Tools:        builtin.Tools(),
		MaxSteps:     model.Steps() + 1,
		Store:        st,
		OnError:      agent.Fail,
		Logger:       slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
	}
	s, err := a.Resume(ctx, *id)
	if errors.Is(err, cairn.ErrNotFound) {
		s, err = a.Start(ctx, agent.WithID(*id))
	}
	if err != nil {
		return err
	}
	fmt.Println("ready") // the test kills at random moments after this
	var res *agent.Result
	if s.State().Status == cairn.StatusNew {
		res, err = s.Run(ctx, "Run the script.")
	} else {
		res, err = s.ResumeRun(ctx)
	}
	if err != nil {
		return err
	}
	fmt.Println(res.Status)
	if res.Status != cairn.StatusCompleted {
		return fmt.Errorf("the run ended %s", res.Status)
	}
	return nil
}

// loggedModel logs each call that returns, and tags its response with the
// process that made it.
type loggedModel struct {
	provider.Model
	path string
}

func (m *loggedModel) Generate(ctx context.Context, req *provider.Request) (*provider.Response, error) {
	resp, err := m.Model.Generate(ctx, req)
	if err != nil {
		return resp, err
	}
	f, err := os.OpenFile(m.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := fmt.Fprintf(f, "%d %d\n", os.Getpid(), req.Responses); err != nil {
		return nil, err
	}
	resp.Model = fmt.Sprintf("script@%d", os.Getpid())
	return resp, nil
}
