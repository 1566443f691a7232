package main

import (
	"fmt"
	"slices"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn/agent/builtin"
	"github.com/cairnhq/cairn/internal/cli"
)

// toolRow is one tool the agent has, as `cairn tools` shows it.
type toolRow struct {
	Name        string `json:"name"`             // as the model calls it
	Server      string `json:"server,omitempty"` // the MCP server, "" for a built-in tool
	Tool        string `json:"tool,omitempty"`   // its name on the server
	Class       string `json:"class"`            // read-only, idempotent or side effect, and approval
	Idempotent  bool   `json:"idempotent"`       // run again on resume after a crash
	Approval    bool   `json:"approval"`         // each call waits for a person's decision
	Why         string `json:"why"`              // what decided the class
	Description string `json:"description"`
}

// skippedRow is a tool of an MCP server that the agent does not get.
type skippedRow struct {
	Server string `json:"server"`
	Tool   string `json:"tool"`
	Reason string `json:"reason"`
}

func newToolsCmd(app *cli.App) *cobra.Command {
	return &cobra.Command{
		Use:   "tools",
		Short: "List the agent's tools with their safety class: built-in and MCP servers'",
		Long: `List every tool the agent has — the built-in tools and those of the MCP
servers in [mcp.servers.NAME] (each server is started) — with its class:

  read-only, idempotent  may run again when a run is resumed after a crash
  side effect            its start is recorded before it runs; a call cut off
                         by a crash gets "outcome unknown", never a second run
  approval               each call waits for a person's decision
                         (cairn sessions resume ID --approve CALL_ID)

and what decided it: the tool's MCP annotations, or the setting that pins it.
Tools a model could not take (a bad schema) are listed as left out.`,
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, err := app.Config()
			if err != nil {
				return err
			}
			var rows []toolRow
			for _, t := range builtin.Tools() {
				r := toolRow{Name: t.Name(), Idempotent: t.Idempotent(), Why: "built-in", Description: t.Description()}
				if slices.Contains(cfg.Agent.RequireApproval, t.Name()) {
					r.Approval, r.Why = true, "built-in; agent.require_approval"
				}
				r.Class = builtinClass(r.Idempotent, r.Approval)
				rows = append(rows, r)
			}
			servers, err := app.MCPServers()
			if err != nil {
				return err
			}
			skipped := []skippedRow{}
			for _, s := range servers {
				for _, in := range s.Infos() {
					rows = append(rows, toolRow{Name: in.Name, Server: in.Server, Tool: in.Tool, Class: in.Class.String(),
						Idempotent: in.Class.Idempotent, Approval: in.Class.Approval, Why: in.Class.Why, Description: in.Description})
				}
				for _, sk := range s.Skipped() {
					skipped = append(skipped, skippedRow{Server: sk.Server, Tool: sk.Tool, Reason: sk.Reason})
				}
			}
			if app.Flags.JSON {
				return cli.WriteJSON(app.Stdout, struct {
					Tools   []toolRow    `json:"tools"`
					Skipped []skippedRow `json:"skipped"`
				}{rows, skipped})
			}
			tw := tabwriter.NewWriter(app.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tCLASS\tFROM\tWHY")
			for _, r := range rows {
				from := "built-in"
				if r.Server != "" {
					from = "mcp " + r.Server
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Name, r.Class, from, r.Why)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			for _, sk := range skipped {
				app.Printf("left out: %s of MCP server %s: %s\n", sk.Tool, sk.Server, sk.Reason)
			}
			return nil
		},
	}
}

func builtinClass(idempotent, approval bool) string {
	s := "side effect"
	if idempotent {
		s = "idempotent"
	}
	if approval {
		s += ", approval"
	}
	return s
}
