package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/steps"
)

// WriteJSON writes v as indented JSON.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// InfoTable writes session infos as an aligned table, each ID in the form
// short gives it (StoreShortIDs; whole when short has none).
func InfoTable(w io.Writer, infos []cairn.SessionInfo, short map[string]string, now time.Time) error {
	return InfoTableHolders(w, infos, short, nil, now)
}

// uuidRe matches a generated session ID (cairn.NewID: a UUIDv7).
var uuidRe = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// minShort is the shortest short form of a generated ID.
const minShort = 8

// StoreShortIDs returns the form of each of infos' IDs to show people: a
// generated ID (a UUID, whose first characters are its creation time) is
// cut to the shortest prefix of at least 8 characters that no other
// session of store has an ID starting with, as git shows commits, so that
// it still names one session for the commands that take a prefix; any
// other ID is shown whole. It does not read every session: for each
// generated ID it asks the store for the sessions whose ID starts with its
// first 8 characters, then with one character more than the longest start
// any of them shares with it, until none does. Each question is a range of
// the store's ID index, so the cost is the page's, not the store's.
func StoreShortIDs(ctx context.Context, store cairn.Store, infos []cairn.SessionInfo) (map[string]string, error) {
	out := make(map[string]string, len(infos))
	for _, info := range infos {
		id := info.ID
		if !uuidRe.MatchString(id) {
			out[id] = id
			continue
		}
		l := minShort
		for l < len(id) {
			page, err := store.List(ctx, cairn.ListOptions{Prefix: id[:l], Limit: 3})
			if err != nil {
				return nil, StoreFail("", fmt.Errorf("list sessions: %w", err))
			}
			n := 0
			for _, o := range page.Sessions {
				if o.ID != id {
					n = max(n, commonPrefix(id, o.ID))
				}
			}
			if n < l {
				break // no other session's ID starts with id[:l]
			}
			l = n + 1
		}
		out[id] = shortAt(id, l)
	}
	return out, nil
}

// shortAt cuts a generated ID to its first l characters, or one more
// rather than end in a dash.
func shortAt(id string, l int) string {
	if l < len(id) && id[l-1] == '-' {
		l++
	}
	return id[:min(l, len(id))]
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// Labels writes labels as k=v, sorted by key.
func Labels(labels map[string]string) string {
	keys := slices.Sorted(maps.Keys(labels))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + labels[k]
	}
	return strings.Join(parts, " ")
}

// Holders returns the live lease of each of infos' sessions that has one,
// in one question to the store (cairn.Leaser's CurrentLeases), when the
// store has leases; nil otherwise.
func Holders(ctx context.Context, store cairn.Store, infos []cairn.SessionInfo) (map[string]cairn.Lease, error) {
	l, ok := store.(cairn.Leaser)
	if !ok || len(infos) == 0 {
		return nil, nil
	}
	ids := make([]string, len(infos))
	for i, info := range infos {
		ids[i] = info.ID
	}
	leases, err := l.CurrentLeases(ctx, ids)
	if err != nil {
		return nil, StoreFail("", fmt.Errorf("read the sessions' leases: %w", err))
	}
	return leases, nil
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
func InfoTableHolders(w io.Writer, infos []cairn.SessionInfo, short map[string]string, holders map[string]cairn.Lease, now time.Time) error {
	name := func(id string) string {
		if s, ok := short[id]; ok {
			return s
		}
		return id
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(holders) == 0 {
		fmt.Fprintln(tw, "ID\tUPDATED\tSTATUS\tSTEPS\tFIRST MESSAGE")
		for _, i := range infos {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", name(i.ID), Ago(i.UpdatedAt, now), i.Status, i.Steps, OneLine(i.FirstMessage, 50))
		}
		return tw.Flush()
	}
	fmt.Fprintln(tw, "ID\tUPDATED\tSTATUS\tSTEPS\tHOLDER\tFIRST MESSAGE")
	for _, i := range infos {
		holder := "-"
		if l, ok := holders[i.ID]; ok {
			holder = l.Holder
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", name(i.ID), Ago(i.UpdatedAt, now), i.Status, i.Steps, holder, OneLine(i.FirstMessage, 50))
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

// TranscriptLine is one line of a transcript: who said or did what, and
// when.
type TranscriptLine struct {
	Seq  int64     `json:"seq"`
	At   time.Time `json:"at"`
	Who  string    `json:"who"` // run, system, user, assistant, tool, state, approval, memory, step, custom
	Text string    `json:"text"`
}

// Transcript writes a session's events as a readable transcript: roles,
// tool calls with arguments and results, timestamps.
func Transcript(w io.Writer, events []cairn.Event) error {
	lines, err := TranscriptLines(events)
	if err != nil {
		return err
	}
	for _, l := range lines {
		fmt.Fprintf(w, "[%s] #%d %s: %s\n", l.At.Local().Format("2006-01-02 15:04:05"), l.Seq, l.Who, indent(l.Text))
	}
	return nil
}

// TranscriptLines returns a session's events as transcript lines (the
// form of Transcript, and of show --transcript --json).
func TranscriptLines(events []cairn.Event) ([]TranscriptLine, error) {
	out := []TranscriptLine{}
	for _, e := range events {
		v, err := e.Decode()
		if err != nil {
			return nil, fmt.Errorf("event %d: %w", e.Seq, err)
		}
		line := func(who, text string) {
			out = append(out, TranscriptLine{Seq: e.Seq, At: e.At, Who: who, Text: text})
		}
		switch d := v.(type) {
		case *cairn.RunStarted:
			mode := "continuing"
			if d.Reset {
				mode = "fresh"
			}
			what := []string{mode}
			if d.Agent != "" {
				what = append(what, "agent "+d.Agent)
			}
			if d.Model != "" {
				what = append(what, "model "+d.Model)
			}
			line("run", fmt.Sprintf("started %s (%s)", d.RunID, strings.Join(what, ", ")))
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
			if text, ok := stepText(d); ok {
				line("step", text)
			} else {
				line("custom", d.Type+" "+compact(d.Payload))
			}
		}
	}
	return out, nil
}

// stepText renders the record of a durable step (package steps): its
// position and name, then its start, its result or its error. ok is false
// for any other custom type, or a record that does not decode, which are
// shown as custom events.
func stepText(d *cairn.Custom) (string, bool) {
	if d.Type != steps.TypeStep && d.Type != steps.TypeStarted {
		return "", false
	}
	r, err := steps.DecodeRecord(d.Payload)
	if err != nil {
		return "", false
	}
	text := fmt.Sprintf("%d %s", r.Step, r.Name)
	switch {
	case d.Type == steps.TypeStarted:
		return text + " started", true
	case r.Error != nil:
		text += fmt.Sprintf(" failed (%s): %s", r.Error.Code, r.Error.Message)
		if r.Retry {
			text += " [retryable]"
		}
	default:
		text += " → " + compact(r.Result)
	}
	if r.Resolved {
		text += " [resolved by the caller]"
	}
	return text, true
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

// ShellQuote quotes s for a POSIX shell when it holds anything but
// characters that need no quoting, for commands printed as hints.
func ShellQuote(s string) string {
	if s != "" && strings.Trim(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.,:/=@%+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
