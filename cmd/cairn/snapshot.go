package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/cli"
	"github.com/cairnhq/cairn/store/crypt"
)

// snapshotReport is what `cairn sessions snapshot` prints under --json.
type snapshotReport struct {
	ID     string `json:"id"`
	Action string `json:"action"` // checked, written or dropped
	// Seq and Bytes describe the snapshot the store holds afterwards (0
	// when none); After is how many events follow it.
	Seq   int64 `json:"seq"`
	Bytes int   `json:"bytes"`
	After int64 `json:"events_after"`
	// Usable says whether the snapshot the store held before the command
	// matched the events; Why says why not.
	Had    bool   `json:"had_snapshot"`
	Usable bool   `json:"usable"`
	Why    string `json:"why,omitempty"`
}

func newSnapshotCmd(app *cli.App) *cobra.Command {
	var drop, check bool
	c := &cobra.Command{
		Use:   "snapshot ID [--check | --drop]",
		Short: "Check, rebuild or drop a session's snapshot",
		Long: `A snapshot is a session's state saved at a seq, so that opening the session
replays only the events after it. The agent writes snapshots on its own
(see snapshot_events and snapshot_bytes under [persistence]); they are
derived data, checked against the events whenever they are read, and a
stale or damaged one is never used.

With no flag, the command folds every event of the session and writes a
fresh snapshot at its last seq, whatever the store held before. --check
only says whether the snapshot the store holds matches the events.
--drop removes it: the next open replays every event and the agent
writes a new one. ID is the whole ID, never a prefix, except for --check.`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			if drop && check {
				return cli.Usage("give one of them", "--drop and --check cannot be used together")
			}
			ctx := c.Context()
			loc, err := app.Locate(ctx, a[0], cli.LocateOptions{Exact: !check, Command: "cairn sessions snapshot"})
			if err != nil {
				return err
			}
			defer loc.Store.Close()
			sn, ok := loc.Store.(cairn.Snapshotter)
			if !ok {
				return cli.Usage("the memory, file, sqlite, postgres, redis and mongodb stores keep snapshots",
					"this store (%T) keeps no snapshots", loc.Store)
			}
			rep := snapshotReport{ID: loc.ID}
			r, err := cairn.Restore(ctx, loc.Store, loc.ID)
			if err != nil {
				return cli.StoreFail(loc.ID, fmt.Errorf("load %s: %w", loc.ID, err))
			}
			if err := crypt.CheckUnsealed(loc.ID, r.Events); err != nil {
				return cli.StoreFail(loc.ID, err)
			}
			rep.Had = r.Base > 0 || r.Ignored != nil
			rep.Usable = r.Base > 0
			if r.Ignored != nil {
				rep.Why = r.Ignored.Error()
				// A snapshot that does not read (a damaged file) is not
				// usable either, and is what a rebuild or --drop is for; a
				// store that did not answer is another matter.
				if !errors.Is(r.Ignored, cairn.ErrSnapshotInvalid) && cairn.IsUnavailable(r.Ignored) {
					return cli.StoreFail(loc.ID, fmt.Errorf("read the snapshot of %s: %w", loc.ID, r.Ignored))
				}
			}
			rep.Seq, rep.After = r.Base, r.Info.LastSeq-r.Base
			switch {
			case check:
				rep.Action = "checked"
				if rep.Usable {
					snap, err := sn.LoadSnapshot(ctx, loc.ID)
					if err == nil && snap != nil {
						rep.Bytes = len(snap.Data)
					}
				}
			case drop:
				rep.Action = "dropped"
				if err := sn.DropSnapshot(ctx, loc.ID); err != nil {
					return cli.StoreFail(loc.ID, fmt.Errorf("drop the snapshot of %s: %w", loc.ID, err))
				}
				rep.Seq, rep.After = 0, r.Info.LastSeq
			default:
				rep.Action = "written"
				// Fold every event: the new snapshot never rests on the old one.
				rec, err := loc.Store.Load(ctx, loc.ID, 0)
				if err != nil {
					return cli.StoreFail(loc.ID, fmt.Errorf("load %s: %w", loc.ID, err))
				}
				if len(rec.Events) == 0 {
					return cli.Usage("a snapshot is of a session's events", "session %s has no events yet", loc.ID)
				}
				state, err := cairn.Fold(rec.Events)
				if err != nil {
					return cli.StoreFail(loc.ID, fmt.Errorf("fold %s: %w", loc.ID, err))
				}
				snap, err := state.Encode(rec.Events[len(rec.Events)-1])
				if err != nil {
					return cli.Fail(err, "")
				}
				// A usable snapshot at the same seq is replaced: drop it first.
				if err := sn.DropSnapshot(ctx, loc.ID); err != nil {
					return cli.StoreFail(loc.ID, fmt.Errorf("replace the snapshot of %s: %w", loc.ID, err))
				}
				if err := sn.PutSnapshot(ctx, loc.ID, snap); err != nil {
					return cli.StoreFail(loc.ID, fmt.Errorf("write the snapshot of %s: %w", loc.ID, err))
				}
				rep.Seq, rep.Bytes, rep.After = snap.Seq, len(snap.Data), 0
			}
			if app.Flags.JSON {
				return cli.WriteJSON(app.Stdout, rep)
			}
			before := "it had no snapshot"
			switch {
			case rep.Usable:
				before = fmt.Sprintf("its snapshot at seq %d matched the events", r.Base)
			case rep.Why != "":
				before = "its snapshot was not usable: " + rep.Why
			}
			switch rep.Action {
			case "checked":
				if rep.Usable {
					app.Printf("%s: snapshot at seq %d (%d bytes) matches the events; %d events after it\n", loc.ID, rep.Seq, rep.Bytes, rep.After)
				} else {
					app.Printf("%s: %s; opening it replays all %d events\n", loc.ID, before, rep.After)
				}
			case "dropped":
				app.Printf("%s: snapshot dropped (%s)\n", loc.ID, before)
			default:
				app.Printf("%s: snapshot written at seq %d (%d bytes); %s\n", loc.ID, rep.Seq, rep.Bytes, before)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&check, "check", false, "only say whether the stored snapshot matches the events")
	c.Flags().BoolVar(&drop, "drop", false, "remove the snapshot")
	return c
}
