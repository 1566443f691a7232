// Command example runs an Eino graph — a chat model node, a tools node
// whose tool appends a line to a file, and an interrupt before the tools
// node for a person's approval — durably on a cairn store.
//
//	go run ./example --store URL --session ID            # runs up to the approval, exits 4
//	go run ./example --store URL --session ID --approve  # resumes from the store, exits 0
//	cairn sessions show ID --transcript --store URL      # the graph's model and tool calls
//
// The first command stops at the interrupt and exits with status 4, the
// status `cairn run` exits with when a session waits for approval. The
// second, in any later process, records the approval, resumes the graph
// from the checkpoint kept in the store and finishes. Exit status: 0 done,
// 1 failed, 2 bad usage, 4 waiting for approval.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/contrib/eino/internal/demo"
	"github.com/cairnhq/cairn/steps"
	_ "github.com/cairnhq/cairn/store/all"
)

// Exit statuses.
const (
	exitOK       = 0
	exitFailure  = 1
	exitUsage    = 2
	exitAwaiting = 4 // as `cairn run` exits for a session waiting for approval
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("example", flag.ContinueOnError)
	fs.SetOutput(stderr)
	storeURL := fs.String("store", "", "the cairn store URL (sqlite:///path.db, postgres://…, redis://…, …); required")
	session := fs.String("session", "", "the session ID (1-120 characters of A-Z a-z 0-9 _ -); required")
	approve := fs.Bool("approve", false, "approve the tool call the run waits for, and resume the graph from the store")
	file := fs.String("file", "", "the file the tool appends to (default: cairn-eino-SESSION.txt in the temporary directory)")
	prompt := fs.String("prompt", "hello from eino", "the user message, the line the tool appends")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "example: unexpected argument %q\nhint: see `go run ./example --help`\n", fs.Arg(0))
		return exitUsage
	case *storeURL == "":
		fmt.Fprintln(stderr, "example: --store is required\nhint: for example --store sqlite:///tmp/eino.db")
		return exitUsage
	case *session == "":
		fmt.Fprintln(stderr, "example: --session is required\nhint: for example --session order-7")
		return exitUsage
	}
	if err := cairn.ValidateID(demo.CheckpointID(*session)); err != nil {
		fmt.Fprintf(stderr, "example: --session %q: %v\nhint: a session ID is 1-120 characters of A-Z a-z 0-9 _ - here (its checkpoints take the ID with -checkpoint after it)\n", *session, err)
		return exitUsage
	}
	if *file == "" {
		*file = filepath.Join(os.TempDir(), "cairn-eino-"+*session+".txt")
	}
	if strings.Contains(*prompt, "\n") {
		fmt.Fprintln(stderr, "example: --prompt holds a newline\nhint: the tool appends it as one line")
		return exitUsage
	}

	st, err := cairn.Open(ctx, *storeURL, cairn.StoreOptions{})
	if err != nil {
		fmt.Fprintf(stderr, "example: %v\nhint: check --store\n", err)
		return exitUsage
	}
	defer st.Close()
	out, err := demo.Run(ctx, st, *session, demo.AppendLine{Path: *file}, *prompt, *approve)
	switch {
	case errors.Is(err, steps.ErrOutcomeUnknown):
		fmt.Fprintf(stderr, "example: %v\nhint: check %s: the tool may have appended its line; the call is not run again\n", err, *file)
		return exitFailure
	case err != nil:
		fmt.Fprintf(stderr, "example: %v\nhint: `cairn sessions show %s --transcript --store URL` shows what happened\n", err, *session)
		return exitFailure
	case len(out.Awaiting) > 0:
		var calls []string
		for _, c := range out.Awaiting {
			calls = append(calls, fmt.Sprintf("%s(%s) [%s]", c.Name, c.Args, c.ID))
		}
		fmt.Fprintf(stdout, "session %s is waiting for approval of: %s\n", *session, strings.Join(calls, ", "))
		fmt.Fprintf(stdout, "approve with: go run ./example --store URL --session %s --approve\n", *session)
		return exitAwaiting
	}
	fmt.Fprintf(stdout, "session %s finished: %s\n", *session, out.Output)
	fmt.Fprintf(stdout, "the tool appended to %s; `cairn sessions show %s --transcript --store URL` shows the graph's model and tool calls\n", *file, *session)
	return exitOK
}
