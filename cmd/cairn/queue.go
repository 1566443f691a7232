package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/cli"
	"github.com/cairnhq/cairn/worker"
)

// detachRun records a queued run in a new session (worker.Enqueue: the
// queue protocol is the worker package's) and prints its ID.
func detachRun(c *cobra.Command, app *cli.App, session string, continuing bool, prompt string, labels map[string]string) error {
	if continuing {
		return cli.Usage("queue a run of a new session: cairn run --detach [--session NEWID] \"prompt\"",
			"--detach starts a new session; it cannot be used with --continue or --reset")
	}
	store, _, err := openRunStore(c, app)
	if err != nil {
		return err
	}
	defer store.Close()
	id, err := worker.Enqueue(c.Context(), store, prompt, worker.EnqueueOptions{ID: session, Labels: labels})
	switch {
	case errors.Is(err, cairn.ErrInvalidID):
		return cli.Fail(err, "session IDs are 1-128 characters of A-Z a-z 0-9 _ -")
	case errors.Is(err, cairn.ErrExists):
		return cli.Fail(err, "a queued run starts a new session; choose another --session ID")
	case err != nil:
		return cli.Fail(err, "`cairn doctor` checks the store")
	}
	if app.Flags.JSON {
		return cli.WriteJSON(app.Stdout, map[string]string{"session": id, "status": "queued"})
	}
	fmt.Fprintln(app.Stdout, id)
	return nil
}
