package main

import (
	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn/internal/cli"
)

func newSessionsCmd(app *cli.App) *cobra.Command {
	c := &cobra.Command{
		Use:     "sessions",
		Aliases: []string{"session"},
		Short:   "List, search, show, resume, export, import, fork, copy, repair, snapshot and delete saved sessions",
		Args:    args(cobra.NoArgs),
		RunE: func(c *cobra.Command, a []string) error {
			return c.Help()
		},
	}
	c.AddCommand(
		newListCmd(app),
		newSearchCmd(app),
		newShowCmd(app),
		newDeleteCmd(app),
		newGCCmd(app),
		newForkCmd(app),
		newCopyCmd(app),
		newExportCmd(app),
		newImportCmd(app),
		newRekeyCmd(app),
		newRepairCmd(app),
		newSnapshotCmd(app),
	)
	addSessionRuntimeCommands(c, app)
	return c
}
