// Command steps is a loop of durable steps written without cairn's agent:
// N steps that are not idempotent, step i appending the line "step-i" to a
// file after a short pause.
//
//	go run ./examples/steps --store sqlite:///tmp/steps.db --session demo --out /tmp/lines.txt --steps 10
//
// Kill it at any moment (Ctrl+C, kill -9) and run it again with the same
// arguments: it goes on where it stopped. A step that had completed is not
// run again; a step that was running when the process died (its start is
// recorded, its result is not) is not run again either, since its line may
// or may not have been written: its outcome is unknown, and the program
// names it on stderr and records that decision. At the end the file holds
// no line twice. The program prints what happened and exits 0 once every
// step has its outcome, 1 on an error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/steps"
	_ "github.com/cairnhq/cairn/store/all" // every store's URL scheme
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "steps:", err)
		os.Exit(1)
	}
}

func run() error {
	storeURL := flag.String("store", "sqlite:///.cairn/cairn.db", "store URL (memory:, file://, sqlite://, postgres://, redis://, mongodb://)")
	namespace := flag.String("namespace", "", "store namespace (default: the store's default)")
	id := flag.String("session", "steps-demo", "session ID")
	out := flag.String("out", "", "file the steps append their lines to (required)")
	n := flag.Int("steps", 10, "number of steps")
	pause := flag.Duration("pause", 50*time.Millisecond, "pause before each step writes its line")
	flag.Parse()
	if *out == "" || *n < 1 || flag.NArg() > 0 {
		flag.Usage()
		return errors.New("--out FILE and --steps N (at least 1) are required, and nothing else")
	}

	ctx := context.Background()
	store, err := cairn.Open(ctx, *storeURL, cairn.StoreOptions{Namespace: *namespace})
	if err != nil {
		return err
	}
	defer store.Close()
	s, err := steps.Open(ctx, store, *id, steps.Options{Name: "examples/steps"})
	if err != nil {
		return err
	}
	defer s.Close()

	var ran, replayed int
	var unknown []string
	for i := 1; i <= *n; i++ {
		name := fmt.Sprintf("step-%d", i)
		executed := false
		_, err := steps.Run(ctx, s, name, func(ctx context.Context) (string, error) {
			executed = true
			select {
			case <-time.After(*pause):
			case <-ctx.Done():
				return "", ctx.Err()
			}
			return "appended", appendLine(*out, name)
		}, steps.NotIdempotent())

		var u *steps.OutcomeUnknownError
		switch {
		case errors.As(err, &u):
			// Met now: the process that ran this step died between
			// recording its start and its result. Do not run it again;
			// record that decision, so every later run sees it.
			fmt.Fprintf(os.Stderr, "%s: outcome unknown: a process stopped while it ran (its line may or may not be in %s); not run again\n", name, *out)
			if err := s.ResolveError(ctx, name, u); err != nil {
				return err
			}
			unknown = append(unknown, name)
		case errors.Is(err, steps.ErrOutcomeUnknown):
			// Decided by an earlier run: recorded as unknown.
			fmt.Fprintf(os.Stderr, "%s: outcome unknown (recorded earlier); not run again\n", name)
			unknown = append(unknown, name)
		case err != nil:
			return err
		case executed:
			ran++
			fmt.Printf("%s: appended to %s\n", name, *out)
		default:
			replayed++
			fmt.Printf("%s: done earlier (recorded)\n", name)
		}
	}
	summary := fmt.Sprintf("%d steps: %d run now, %d done earlier, %d outcome unknown", *n, ran, replayed, len(unknown))
	if len(unknown) > 0 {
		summary += " (" + strings.Join(unknown, ", ") + ")"
	}
	if err := s.Finish(ctx, summary); err != nil {
		return err
	}
	fmt.Printf("session %s completed: %s\n", s.ID(), summary)
	return nil
}

// appendLine appends line to the file at path, in one write.
func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(line + "\n"); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
