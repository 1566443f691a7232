package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/cli"
)

func newShowCmd(app *cli.App) *cobra.Command {
	var (
		transcript bool
		at         int64
	)
	c := &cobra.Command{
		Use:   "show ID",
		Short: "Show the state (or transcript) of a session",
		Long: `Show the state of a session, rebuilt from its events. ID may be a unique
prefix; the project's store is searched first, then the user-global store
(a store named with --store, CAIRN_STORE or a config file given with
--config is the only one searched).

With --json: {"info", "state", "events"}; with --json --transcript:
{"session", "transcript": [{"seq", "at", "who", "text"}]}.`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			loc, rec, err := locateRecord(c, app, a[0])
			if err != nil {
				return err
			}
			defer loc.Store.Close()
			events := rec.Events
			if at < 0 || at > rec.Info.LastSeq {
				return cli.Usage("give a seq from 0 to the last one", "--at %d is outside the session's events 1..%d", at, rec.Info.LastSeq)
			}
			if at > 0 {
				events = events[:at]
			}
			st, err := cairn.Fold(events)
			if err != nil {
				return cli.Fail(fmt.Errorf("replay %s: %w", loc.ID, err), "the stored history is damaged; `cairn sessions export` saves what can be read")
			}
			if app.Flags.JSON && transcript {
				lines, err := cli.TranscriptLines(events)
				if err != nil {
					return cli.Fail(fmt.Errorf("replay %s: %w", loc.ID, err), "the stored history is damaged; `cairn sessions export` saves what can be read")
				}
				return cli.WriteJSON(app.Stdout, struct {
					Session    string               `json:"session"`
					Transcript []cli.TranscriptLine `json:"transcript"`
				}{loc.ID, lines})
			}
			if app.Flags.JSON {
				snap, err := st.Snapshot()
				if err != nil {
					return err
				}
				return cli.WriteJSON(app.Stdout, struct {
					Info   cairn.SessionInfo `json:"info"`
					State  json.RawMessage   `json:"state"`
					Events []cairn.Event     `json:"events"`
				}{rec.Info, snap, slices.Clip(events)})
			}
			if transcript {
				return cli.Transcript(app.Stdout, events)
			}
			return showState(app.Stdout, rec.Info, st, "see --transcript")
		},
	}
	c.Flags().BoolVar(&transcript, "transcript", false, "print the conversation as a readable transcript")
	c.Flags().Int64Var(&at, "at", 0, "show the session as it was at this seq")
	return c
}

// locateRecord finds the session ref names, as the commands that only read
// do (a unique prefix; the user-global store too), and reads all of it.
// The caller closes loc.Store.
func locateRecord(c *cobra.Command, app *cli.App, ref string) (*cli.Located, *cairn.Record, error) {
	loc, err := app.Locate(c.Context(), ref, cli.LocateOptions{Global: true})
	if err != nil {
		return nil, nil, err
	}
	rec, err := loc.Store.Load(c.Context(), loc.ID, 0)
	if err != nil {
		loc.Store.Close()
		return nil, nil, cli.StoreFail(loc.ID, fmt.Errorf("load %s: %w", loc.ID, err))
	}
	return loc, rec, nil
}

// showState prints a session's state; more says where its messages are
// shown ("see --transcript" in `sessions show`, the chat's own command in
// chat).
func showState(w io.Writer, info cairn.SessionInfo, st *cairn.State, more string) error {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p("session   %s\n", info.ID)
	p("status    %s\n", st.Status)
	p("steps     %d (last seq %d)\n", st.Steps, st.LastSeq)
	p("created   %s\n", info.CreatedAt.Local().Format("2006-01-02 15:04:05"))
	p("updated   %s\n", info.UpdatedAt.Local().Format("2006-01-02 15:04:05"))
	switch {
	case st.Agent != "" && st.Fingerprint.Model != "":
		p("agent     %s (model %s)\n", st.Agent, st.Fingerprint.Model)
	case st.Agent != "":
		p("agent     %s\n", st.Agent)
	case st.Fingerprint.Model != "":
		p("model     %s\n", st.Fingerprint.Model)
	}
	p("tokens    %d in, %d out\n", st.Usage.InputTokens, st.Usage.OutputTokens)
	if st.FirstMessage != "" {
		p("first     %s\n", cli.OneLine(st.FirstMessage, 70))
	}
	if len(info.Labels) > 0 {
		p("labels    %s\n", cli.Labels(info.Labels))
	}
	if len(st.Variables) > 0 {
		p("variables\n")
		keys := make([]string, 0, len(st.Variables))
		for k := range st.Variables {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			p("  %s = %s\n", k, st.Variables[k])
		}
	}
	for _, pc := range st.Pending {
		note := ""
		if pc.Started {
			note = " (started; outcome unknown)"
		}
		p("pending   %s(%s) [%s]%s\n", pc.Name, pc.Args, pc.ID, note)
	}
	if st.Output != "" {
		p("output    %s\n", cli.OneLine(st.Output, 70))
	}
	if st.Error != nil {
		p("error     %s: %s\n", st.Error.Code, st.Error.Message)
	}
	p("messages  %d (%s)\n", len(st.Messages), more)
	for _, m := range st.Messages {
		if m.IsSummary() {
			p("summary   %s (older messages compacted at #%d)\n", cli.OneLine(m.Content, 200), m.Seq)
		}
	}
	return nil
}
