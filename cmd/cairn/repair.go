package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/cli"
	"github.com/cairnhq/cairn/store/crypt"
)

func newRepairCmd(app *cli.App) *cobra.Command {
	var (
		cut    bool
		backup string
	)
	c := &cobra.Command{
		Use:   "repair ID [--cut] [--backup NEWID]",
		Short: "Seal the events a process without the key wrote in clear into an encrypted session",
		Long: `Repair an encrypted session that holds events in clear: events appended by
a process that had no key, before such processes were refused. With the key
configured, such a session does not load ("unencrypted data in an encrypted
store"); ` + "`cairn doctor`" + ` lists them.

By default every event in clear is sealed under the key and the session
keeps its whole history. With --cut the events from the first one in clear
to the end are dropped from the session instead (a run made by a process
that saw only ciphertext is rarely worth keeping); they stay in the backup
session.

The whole history, sealed, is first written to the backup session (--backup,
default ID-before-repair) and read back; then the session is written again
under its ID, with its creation time and labels, and read back. Without --cut
the backup is deleted at the end. If the command stops half way, the whole
history is in the backup: ` + "`cairn sessions fork BACKUP --as ID`" + ` puts it
back. ID is the whole ID, never a prefix. Copies of the events in clear may
stay in the store's free space as after any delete (docs/SECURITY.md).`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			cfg, err := app.Config()
			if err != nil {
				return err
			}
			if cfg.Persistence.EncryptionKeyFile == "" {
				return cli.Usage(cli.KeyHint, "repair: no encryption key is configured; the session's key is needed to seal its events")
			}
			if backup != "" {
				if err := cairn.ValidateID(backup); err != nil {
					return cli.Usage("session IDs are 1-128 characters of A-Z a-z 0-9 _ -", "--backup: %v", err)
				}
			}
			loc, err := app.Locate(c.Context(), a[0], cli.LocateOptions{Exact: true, Command: "cairn sessions repair"})
			if err != nil {
				return err
			}
			defer loc.Store.Close()
			cs, ok := loc.Store.(crypt.Store)
			if !ok {
				return cli.Fail(errors.New("repair: the store is not encrypted"), cli.KeyHint)
			}
			res, err := cs.Repair(c.Context(), loc.ID, crypt.RepairOptions{Cut: cut, Backup: backup})
			if err != nil {
				return cli.Fail(err, repairHint(err))
			}
			if app.Flags.JSON {
				return cli.WriteJSON(app.Stdout, res)
			}
			if cut {
				app.Printf("repaired %s: cut %d event(s) in clear and after; it holds %d event(s); the whole history is in %s\n",
					res.Session, res.Cut, res.Events, res.Backup)
				return nil
			}
			app.Printf("repaired %s: sealed %d event(s) that were in clear; it holds %d event(s)\n", res.Session, res.Resealed, res.Events)
			return nil
		},
	}
	c.Flags().BoolVar(&cut, "cut", false, "drop the events from the first one in clear on, instead of sealing them (kept in the backup)")
	c.Flags().StringVar(&backup, "backup", "", "ID of the session that keeps the whole history (default: ID-before-repair)")
	return c
}

func repairHint(err error) string {
	switch {
	case errors.Is(err, cairn.ErrExists):
		return "the backup session exists already: name another with --backup"
	case errors.Is(err, cairn.ErrConflict):
		return "something wrote the session meanwhile: run repair again when nothing runs it"
	}
	return fmt.Sprintf("nothing is lost: if the message names a backup session, it holds the whole history; %s",
		"`cairn doctor` checks the store")
}
