package main

import (
	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn/internal/cli"
)

// addRuntimeCommands adds the commands that run agents.
func addRuntimeCommands(root *cobra.Command, app *cli.App) {}

// addSessionRuntimeCommands adds the session commands that need the agent
// runtime or the formats.
func addSessionRuntimeCommands(c *cobra.Command, app *cli.App) {}
