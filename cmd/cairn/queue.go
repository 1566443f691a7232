package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/cli"
)

// Queued runs. A queued run is a new session that carries the label
// QueueLabel (its value is the queue's name) and holds one event: a custom
// event of type QueuedType whose payload is {"input": "<prompt>"}. Its
// status is "new" until a worker starts the run. No event kind is added for
// it, so the format version stays 1 and any cairn reads such a session.
const (
	QueueLabel   = "cairn.queue"
	DefaultQueue = "default"
	QueuedType   = "cairn.queued"
)

// queuedRun is the payload of a QueuedType event.
type queuedRun struct {
	Input string `json:"input"`
}

// detachRun records a queued run in a new session and prints its ID.
func detachRun(c *cobra.Command, app *cli.App, session string, continuing bool, prompt string) error {
	if continuing {
		return cli.Usage("queue a run of a new session: cairn run --detach [--session NEWID] \"prompt\"",
			"--detach starts a new session; it cannot be used with --continue or --reset")
	}
	ctx := c.Context()
	store, _, err := openRunStore(c, app)
	if err != nil {
		return err
	}
	defer store.Close()
	id := session
	if id == "" {
		id = cairn.NewID()
	} else if err := cairn.ValidateID(id); err != nil {
		return cli.Fail(err, "session IDs are 1-128 characters of A-Z a-z 0-9 _ -")
	}
	payload, err := json.Marshal(queuedRun{Input: prompt})
	if err != nil {
		return err
	}
	e, err := cairn.NewEvent(cairn.KindCustom, "", cairn.Custom{Type: QueuedType, Payload: payload})
	if err != nil {
		return err
	}
	e.Seq = 1
	if err := store.Create(ctx, cairn.SessionMeta{ID: id, Labels: map[string]string{QueueLabel: DefaultQueue}}); err != nil {
		if errors.Is(err, cairn.ErrExists) {
			return cli.Fail(err, "a queued run starts a new session; choose another --session ID")
		}
		return cli.Fail(err, "`cairn doctor` checks the store")
	}
	if err := store.Append(ctx, id, 0, e); err != nil {
		return cli.Fail(fmt.Errorf("queue a run in session %s: %w", id, err), "`cairn doctor` checks the store")
	}
	if app.Flags.JSON {
		return cli.WriteJSON(app.Stdout, map[string]string{"session": id, "status": "queued"})
	}
	fmt.Fprintln(app.Stdout, id)
	return nil
}

// queuedInput returns the input of the last queued run recorded in events.
func queuedInput(events []cairn.Event) (string, bool) {
	for i := len(events) - 1; i >= 0; i-- {
		e := events[i]
		if e.Kind != cairn.KindCustom {
			continue
		}
		var c cairn.Custom
		if json.Unmarshal(e.Data, &c) != nil || c.Type != QueuedType {
			continue
		}
		var q queuedRun
		if json.Unmarshal(c.Payload, &q) != nil {
			continue
		}
		return q.Input, true
	}
	return "", false
}
