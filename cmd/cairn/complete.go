package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/cli"
)

// maxCompletions bounds the session IDs offered to the shell.
const maxCompletions = 200

// addCompletions makes the shell complete session IDs (cairn completion
// bash|zsh|fish): the arguments of the commands that take IDs and the
// --session flags, from the project's store, most recently updated first,
// each with its first message where the shell shows descriptions.
func addCompletions(root *cobra.Command, app *cli.App) {
	ids := completeIDs(app)
	for _, path := range [][]string{
		{"sessions", "show"}, {"sessions", "export"}, {"sessions", "resume"}, {"sessions", "fork"},
		{"sessions", "delete"}, {"sessions", "repair"}, {"chat"},
	} {
		if c, _, err := root.Find(path); err == nil && c != root {
			c.ValidArgsFunction = ids
		}
	}
	for _, path := range [][]string{{"chat"}, {"run"}} {
		if c, _, err := root.Find(path); err == nil && c != root {
			_ = c.RegisterFlagCompletionFunc("session", ids)
		}
	}
}

// completeIDs completes session IDs. It opens the store as reads do:
// completing never creates one.
func completeIDs(app *cli.App) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 && c.Name() != "delete" {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		store, _, err := app.OpenReadStore(ctx)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
		}
		defer store.Close()
		var out []cobra.Completion
		if prefix != "" && cairn.ValidateID(prefix) != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp // no ID starts so
		}
		page, err := store.List(ctx, cairn.ListOptions{Prefix: prefix, Limit: maxCompletions})
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
		}
		for _, info := range page.Sessions {
			out = append(out, cobra.CompletionWithDesc(info.ID, cli.OneLine(info.FirstMessage, 40)))
		}
		return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder
	}
}
