package main

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/cli"
	"github.com/cairnhq/cairn/sessions"
)

// searchStatuses are the statuses search's --status takes: those a store
// records (a queued run is new, an unfinished import is new or running).
var searchStatuses = []string{
	string(cairn.StatusNew), string(cairn.StatusRunning), string(cairn.StatusInterrupted), string(cairn.StatusAwaiting),
	string(cairn.StatusCompleted), string(cairn.StatusFailed), string(cairn.StatusMaxSteps),
}

func newSearchCmd(app *cli.App) *cobra.Command {
	var (
		status []string
		labels []string
		since  string
		limit  int
	)
	c := &cobra.Command{
		Use:   "search QUERY",
		Short: "Find sessions by the words of their messages and tool calls",
		Long: `Find sessions by the words of their messages, model responses, tool calls
and tool results, best match first, each with the event that matched best
(its seq, for ` + "`cairn sessions show ID --from SEQ`" + `) and a snippet of its text.

Each word of the query is matched as a whole word, in any case; a session
matches when any word is in it, and ranks higher the more of them it holds
and the rarer they are (BM25, as SQLite's full-text search ranks). A word
with punctuation inside, such as "gpt-4o" or "ada@example.com", is matched
as that phrase. System prompts are not searched, and neither are sessions
sealed by encryption at rest.

  cairn sessions search "refund policy"
  cairn sessions search invoice --status failed --since 7d --json`,
		Args: args(cobra.MinimumNArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			query := strings.Join(a, " ")
			o := sessions.SearchOptions{Labels: map[string]string{}, Limit: limit}
			for _, s := range status {
				if !slices.Contains(searchStatuses, s) {
					return cli.Usage("the statuses are "+strings.Join(searchStatuses, ", "), "--status %q is not a status", s)
				}
				o.Status = append(o.Status, cairn.Status(s))
			}
			for _, l := range labels {
				k, v, ok := strings.Cut(l, "=")
				if !ok {
					return cli.Usage("labels look like --label team=search", "malformed label %q", l)
				}
				o.Labels[k] = v
			}
			if limit < 1 || limit > 1000 {
				return cli.Usage("give 1 to 1000", "--limit %d is not a number of sessions", limit)
			}
			if since != "" {
				t, err := parseSince(since, time.Now())
				if err != nil {
					return cli.Usage("give an age such as 90m, 36h or 7d, or a date or time such as 2026-12-01 or 2026-12-01T09:00:00Z", "--since %q: %v", since, err)
				}
				o.UpdatedAfter = t
			}
			if strings.TrimSpace(query) == "" {
				return cli.Usage(`give the words to look for: cairn sessions search "refund policy"`, "the query is empty")
			}
			store, _, err := app.OpenReadStore(c.Context())
			if err != nil {
				return err
			}
			defer store.Close()
			found, err := sessions.Search(c.Context(), store, query, o)
			if errors.Is(err, sessions.ErrNoSearch) {
				return cli.Fail(fmt.Errorf("%w", err), "a store opened with encryption at rest keeps no searchable text; every unencrypted store searches")
			}
			if err != nil {
				return cli.StoreFail("", err)
			}
			if app.Flags.JSON {
				return cli.WriteJSON(app.Stdout, found)
			}
			if len(found) == 0 {
				app.Notef("no session holds %s", quoteWords(query))
				return nil
			}
			infos := make([]cairn.SessionInfo, len(found))
			for i, f := range found {
				infos[i] = f.Session
			}
			short, err := cli.StoreShortIDs(c.Context(), store, infos)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(app.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tUPDATED\tSTATUS\tEVENT\tMATCH")
			now := time.Now()
			for _, f := range found {
				id := f.Session.ID
				if s, ok := short[id]; ok {
					id = s
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t#%d %s\t%s\n", id, cli.Ago(f.Session.UpdatedAt, now), f.Session.Status, f.Seq, f.Kind, cli.OneLine(f.Snippet, 80))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if len(found) == limit {
				app.Notef("the best %d; --limit shows more", limit)
			}
			return nil
		},
	}
	c.Flags().StringSliceVar(&status, "status", nil, "only sessions with this status ("+strings.Join(searchStatuses, ", ")+")")
	c.Flags().StringSliceVar(&labels, "label", nil, "only sessions with this label (KEY=VALUE)")
	c.Flags().StringVar(&since, "since", "", "only sessions updated since then: an age (90m, 36h, 7d) or a date or time (2026-12-01, 2026-12-01T09:00:00Z)")
	c.Flags().IntVar(&limit, "limit", sessions.DefaultSearchLimit, "how many sessions at most")
	return c
}

// quoteWords quotes a query for a message.
func quoteWords(q string) string {
	if len(strings.Fields(q)) == 1 {
		return strconv.Quote(strings.TrimSpace(q))
	}
	return "any of " + strconv.Quote(strings.Join(strings.Fields(q), " "))
}

// parseSince reads --since: an age before now (a Go duration, or a
// number of days such as 7d) or a time (RFC 3339, or a date, taken at
// midnight UTC).
func parseSince(s string, now time.Time) (time.Time, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 {
			return time.Time{}, fmt.Errorf("not a number of days")
		}
		return now.AddDate(0, 0, -n), nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("a negative age")
		}
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("neither an age nor a time")
}
