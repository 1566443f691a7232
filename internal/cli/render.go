package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cairnhq/cairn"
)

// WriteJSON writes v as indented JSON.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// InfoTable writes session infos as an aligned table.
func InfoTable(w io.Writer, infos []cairn.SessionInfo, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tUPDATED\tSTATUS\tSTEPS\tFIRST MESSAGE")
	for _, i := range infos {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", i.ID, Ago(i.UpdatedAt, now), i.Status, i.Steps, OneLine(i.FirstMessage, 50))
	}
	return tw.Flush()
}

// Holders returns the live lease of each session that has one, when the
// store has leases (cairn.Leaser); nil otherwise.
func Holders(ctx context.Context, store cairn.Store, infos []cairn.SessionInfo) map[string]cairn.Lease {
	l, ok := store.(cairn.Leaser)
	if !ok {
		return nil
	}
	out := map[string]cairn.Lease{}
	for _, i := range infos {
		if lease, err := l.CurrentLease(ctx, i.ID); err == nil && lease.Holder != "" {
			out[i.ID] = lease
		}
	}
	return out
}

// HeldInfo is a session's info with the holder of its lease, for --json.
type HeldInfo struct {
	cairn.SessionInfo
	Holder       string     `json:"holder,omitempty"`
	LeaseExpires *time.Time `json:"lease_expires,omitempty"`
}

// WithHolders joins infos with their holders.
func WithHolders(infos []cairn.SessionInfo, holders map[string]cairn.Lease) []HeldInfo {
	out := make([]HeldInfo, len(infos))
	for i, info := range infos {
		out[i].SessionInfo = info
		if l, ok := holders[info.ID]; ok {
			out[i].Holder = l.Holder
			exp := l.Expires
			out[i].LeaseExpires = &exp
		}
	}
	return out
}

// InfoTableHolders is InfoTable with a HOLDER column (the worker or
// process whose lease holds the session) when any session is held.
func InfoTableHolders(w io.Writer, infos []cairn.SessionInfo, holders map[string]cairn.Lease, now time.Time) error {
	if len(holders) == 0 {
		return InfoTable(w, infos, now)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tUPDATED\tSTATUS\tSTEPS\tHOLDER\tFIRST MESSAGE")
	for _, i := range infos {
		holder := "-"
		if l, ok := holders[i.ID]; ok {
			holder = l.Holder
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", i.ID, Ago(i.UpdatedAt, now), i.Status, i.Steps, holder, OneLine(i.FirstMessage, 50))
	}
	return tw.Flush()
}

// Ago writes a time as a short age ("3m ago") for people.
func Ago(t, now time.Time) string {
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return t.Local().Format("2006-01-02")
}

// OneLine flattens s to one line of at most n runes.
func OneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// Transcript writes a session's events as a readable transcript: roles,
// tool calls with arguments and results, timestamps.
func Transcript(w io.Writer, events []cairn.Event) error {
	for _, e := range events {
		v, err := e.Decode()
		if err != nil {
			return fmt.Errorf("event %d: %w", e.Seq, err)
		}
		at := e.At.Local().Format("2006-01-02 15:04:05")
		line := func(who, text string) {
			fmt.Fprintf(w, "[%s] #%d %s: %s\n", at, e.Seq, who, indent(text))
		}
		switch d := v.(type) {
		case *cairn.RunStarted:
			mode := "continuing"
			if d.Reset {
				mode = "fresh"
			}
			line("run", fmt.Sprintf("started %s (%s, agent %s, model %s)", d.RunID, mode, d.Agent, d.Model))
		case *cairn.MemoryReset:
			line("run", "memory reset")
		case *cairn.MessageSystem:
			line("system", d.Text)
		case *cairn.MessageUser:
			line("user", d.Text())
		case *cairn.ModelResponse:
			if d.Text != "" {
				line("assistant", d.Text)
			}
			for _, c := range d.ToolCalls {
				line("assistant", fmt.Sprintf("→ %s(%s) [%s]", c.Name, compact(c.Args), c.ID))
			}
		case *cairn.ToolStarted:
			line("tool", fmt.Sprintf("%s started [%s]", d.Name, d.CallID))
		case *cairn.ToolResult:
			status := "result"
			if d.IsError {
				status = "error"
			}
			line("tool", fmt.Sprintf("%s %s [%s]: %s", d.Name, status, d.CallID, d.Output))
		case *cairn.StateSet:
			var parts []string
			for k, val := range d.Set {
				parts = append(parts, k+"="+compact(val))
			}
			for _, k := range d.Deleted {
				parts = append(parts, "-"+k)
			}
			line("state", strings.Join(parts, " "))
		case *cairn.RunInterrupted:
			line("run", fmt.Sprintf("interrupted (%s), %d call(s) pending", d.Reason, len(d.Pending)))
		case *cairn.ApprovalDecided:
			verdict := "denied"
			if d.Approved {
				verdict = "approved"
			}
			line("approval", fmt.Sprintf("%s %s %s", d.CallID, verdict, d.Note))
		case *cairn.RunFinished:
			msg := string(d.Status)
			if d.Error != nil {
				msg += ": " + d.Error.Message
			}
			line("run", "finished "+msg)
		case *cairn.MemoryCompacted:
			line("memory", fmt.Sprintf("compacted up to #%d: %s", d.UpTo, d.Summary))
		case *cairn.Custom:
			line("custom", d.Type+" "+compact(d.Payload))
		}
	}
	return nil
}

func compact(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n    ") }
