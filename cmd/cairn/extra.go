package main

import (
	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn/internal/cli"
)

// addRuntimeCommands adds the commands that run agents.
func addRuntimeCommands(root *cobra.Command, app *cli.App) {
	root.AddCommand(newChatCmd(app), newRunCmd(app), newDoctorCmd(app))
	root.AddCommand(newBenchCmd(app), newWorkerCmd(app))
	root.AddCommand(newServeCmd(app))
	root.AddCommand(newToolsCmd(app), newMCPCmd(app))
}

// addSessionRuntimeCommands adds the session commands that run agents.
func addSessionRuntimeCommands(c *cobra.Command, app *cli.App) {
	c.AddCommand(newResumeCmd(app))
}
