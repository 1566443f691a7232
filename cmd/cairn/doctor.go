package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/internal/cli"
	"github.com/cairnhq/cairn/internal/text"
	"github.com/cairnhq/cairn/store/crypt"
)

// check is one line of the doctor's report. A check that is OK may still
// have a fix: a leftover that loses nothing.
type check struct {
	Name    string `json:"name"`
	OK      bool   `json:"ok"`
	Session string `json:"session,omitempty"` // the damaged session a check is about
	Detail  string `json:"detail"`
	Fix     string `json:"fix,omitempty"`
}

func newDoctorCmd(app *cli.App) *cobra.Command {
	return &cobra.Command{
		Use:   "doctor",
		Short: "Check the configuration, the store, its data and the model credentials",
		Long: `Check the configuration, that the store answers, the model's
credentials, and that each MCP server starts (its tools are listed with
their safety class; ` + "`cairn tools`" + ` shows them all). On a store that
can check its own data (sqlite: PRAGMA quick_check and every event's
checksum; file: every log against its info and checksums) every session is
read through, and each damaged session is named with what to do about it.
With an encryption key configured, every session is also opened with the
key (on a store with no check of its own, the 1,000 updated last), and
each one that does not open is named: one written under another key, with
the key it needs, one changed, or one with events in clear. Leftovers (lock files of deleted sessions,
what a crash left) are listed with their fix; they do not fail the check.
The snapshots of the 1,000 sessions updated last are read and checked
against their events: one that does not read or does not match is named
with the command that rebuilds it (such a session opens by replaying
every event); it does not fail the check either.`,
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			checks := doctor(c.Context(), app)
			failed := 0
			for _, ch := range checks {
				if !ch.OK {
					failed++
				}
			}
			if app.Flags.JSON {
				if err := cli.WriteJSON(app.Stdout, checks); err != nil {
					return err
				}
			} else {
				for _, ch := range checks {
					mark := "ok  "
					if !ch.OK {
						mark = "FAIL"
					}
					app.Printf("%s %-8s %s\n", mark, ch.Name, ch.Detail)
					if ch.Fix != "" {
						app.Printf("              fix: %s\n", ch.Fix)
					}
				}
			}
			if failed > 0 {
				return cli.Fail(fmt.Errorf("%d check(s) failed", failed), "apply the fixes printed above")
			}
			return nil
		},
	}
}

func doctor(ctx context.Context, app *cli.App) []check {
	cfg, err := app.Config()
	if err != nil {
		_, hint, _ := cli.Describe(err)
		return []check{{Name: "config", Detail: err.Error(), Fix: hint}}
	}
	src := "none found; using the defaults"
	if cfg.Source != "" {
		src = cfg.Source
	}
	checks := []check{{Name: "config", OK: true, Detail: src}}

	u := cfg.StoreURL()
	st := check{Name: "store", Detail: text.RedactURL(u)}
	var storeErr error
	missing := app.StoreMissing()
	switch {
	case !cfg.Enabled():
		st.OK, st.Detail = true, "persistence is disabled: sessions are volatile (persistence.enabled = false)"
	case missing != "":
		st.OK, st.Detail = true, fmt.Sprintf("%s: nothing saved yet (the first run creates %s)", text.RedactURL(u), missing)
	default:
		tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		t0 := time.Now()
		s, err := app.OpenURL(tctx, u)
		kind := ""
		if err == nil {
			_, err = s.List(tctx, cairn.ListOptions{Limit: 1})
			// A server store may say what it reached: a single server,
			// a cluster and its nodes, a Sentinel's master.
			var inner cairn.Store = s
			if w, ok := s.(interface{ Inner() cairn.Store }); ok {
				inner = w.Inner() // the encryption layer's store
			}
			if t, ok := inner.(interface {
				Topology(context.Context) (string, error)
			}); ok && err == nil {
				if kind, err = t.Topology(tctx); err == nil {
					kind = ", " + kind
				}
			}
			s.Close()
		}
		cancel()
		if err != nil {
			st.Detail, st.Fix, storeErr = err.Error(), storeFix(u, err), err
		} else {
			st.OK = true
			st.Detail = fmt.Sprintf("%s%s, namespace %q, reachable in %s", text.RedactURL(u), kind, cfg.Persistence.Namespace, time.Since(t0).Round(time.Millisecond))
		}
	}
	checks = append(checks, st)
	if cfg.Enabled() && missing == "" && (st.OK || errors.Is(storeErr, cairn.ErrDamaged)) {
		checks = append(checks, dataChecks(ctx, app, u)...)
		checks = append(checks, snapshotChecks(ctx, app, u)...)
	}
	checks = append(checks, modelCheck(ctx, app))
	checks = append(checks, mcpChecks(ctx, app)...)
	return checks
}

// storeFix is the fix for a store that failed to open or answer.
func storeFix(u string, err error) string {
	if errors.Is(err, cairn.ErrDamaged) {
		if strings.HasPrefix(u, "sqlite:") {
			return "the database file is damaged: keep it aside and restore it from a backup, or rebuild it with the sqlite3 shell's .recover"
		}
		return "the store's data is damaged: keep it aside and restore it from a backup"
	}
	_, hint, _ := cli.Describe(err)
	return hint
}

// dataChecks checks the store's data, on a store that can (driver.Checker),
// and looks for lock files left by deleted sessions beside a local store.
// Without an encryption key it opens the store as it is: what it checks
// is what is stored. With a key it opens it through the encryption layer,
// whose check also opens every session with the key and names each one
// that does not open (written under another key, changed, or holding
// events in clear); over a store with no check of its own, that is the
// whole check, of the sessions updated last.
func dataChecks(ctx context.Context, app *cli.App, u string) []check {
	opts, err := app.StoreOptions()
	if err != nil {
		return []check{{Name: "data", Detail: err.Error(), Fix: "fix the configuration first"}}
	}
	ring, err := app.Keyring()
	if err != nil {
		return []check{{Name: "data", Detail: err.Error(), Fix: cli.KeyHint}}
	}
	var s cairn.Store
	if ring != nil {
		s, err = app.OpenURL(ctx, u)
	} else {
		s, err = cairn.Open(ctx, u, opts)
	}
	if err != nil {
		return []check{{Name: "data", Detail: err.Error(), Fix: storeFix(u, err)}}
	}
	defer s.Close()
	var out []check
	cs, keyed := s.(crypt.Store)
	switch c, ok := s.(driver.Checker); {
	case ok:
		out = append(out, checkData(ctx, c, 0)...)
	case keyed:
		out = append(out, checkData(ctx, sessionsChecker{cs}, maxSnapshotSessions)...)
	default:
		out = append(out, check{Name: "data", OK: true,
			Detail: "this store has no check of its own data; its calls report damage as they meet it"})
	}
	if lc, ok := lockCheck(ctx, s); ok {
		out = append(out, lc)
	}
	return out
}

// sessionsChecker is the check of an encrypted store whose backend has no
// check of its own: the encryption layer's reading of its sessions, the
// ones updated last.
type sessionsChecker struct{ s crypt.Store }

func (c sessionsChecker) Check(ctx context.Context) (*driver.CheckReport, error) {
	return c.s.CheckSessions(ctx, maxSnapshotSessions)
}

// checkData runs the store's check and reports it: a summary, then one
// line for each problem, the damaged sessions by ID. limit is the most
// sessions the check reads (0: every one).
func checkData(ctx context.Context, c driver.Checker, limit int) []check {
	rep, err := c.Check(ctx)
	if err != nil {
		return []check{{Name: "data", Detail: "the check could not run: " + err.Error(), Fix: "`cairn doctor` again once the store answers"}}
	}
	var damaged, bad int
	for _, p := range rep.Problems {
		if p.Damage {
			bad++
			if p.Session != "" {
				damaged++
			}
		}
	}
	of := countOf(rep.Sessions, "session", "sessions")
	if limit > 0 && rep.Sessions >= limit {
		of = fmt.Sprintf("the %d sessions updated last", rep.Sessions)
	}
	sum := check{Name: "data", OK: bad == 0, Detail: fmt.Sprintf("%s checked, none damaged", of)}
	if bad > 0 {
		sum.Detail = fmt.Sprintf("%s checked, %d damaged", of, damaged)
		if bad > damaged {
			sum.Detail += "; the store's own files are damaged"
		}
		sum.Fix = "see below; the sessions not named go on as before"
	}
	out := []check{sum}
	for _, p := range rep.Problems {
		ch := check{Name: "leftover", OK: !p.Damage, Detail: p.Where + ": " + p.Msg, Fix: p.Fix}
		switch {
		case p.Session != "":
			ch.Name, ch.Session, ch.Detail = "session", p.Session, "session "+p.Session+" is damaged ("+p.Where+"): "+p.Msg
		case p.Damage:
			ch.Name = "file"
		}
		out = append(out, ch)
	}
	return out
}

// maxSnapshotLines bounds the sessions the snapshot check names one by
// one; the summary counts them all.
const maxSnapshotLines = 20

// maxSnapshotSessions bounds the sessions whose snapshots doctor reads, the
// ones updated last: two reads each, which on a server store of a million
// sessions would take many minutes.
const maxSnapshotSessions = 1000

// snapshotChecks reads each session's snapshot, on a store that keeps them,
// and names those that do not match their session's events or do not
// read: the agent never uses them, so each open of such a session replays
// every event until a new snapshot replaces it. They are derived data and
// lose nothing, so they do not fail the check. It reads a snapshot and the
// events from its seq on, through the encryption layer as the agent does.
func snapshotChecks(ctx context.Context, app *cli.App, u string) []check {
	s, err := app.OpenURL(ctx, u)
	if err != nil {
		return nil // the store's check above says why
	}
	defer s.Close()
	sn, ok := s.(cairn.Snapshotter)
	if !ok {
		return nil
	}
	var (
		with, sessions int
		more           bool
		bad            []check
	)
	err = cli.EachSession(ctx, s, cairn.ListOptions{}, func(info cairn.SessionInfo) bool {
		if sessions == maxSnapshotSessions {
			more = true
			return false
		}
		sessions++
		why, has, err := snapshotProblem(ctx, s, sn, info.ID)
		if errors.Is(err, cairn.ErrDamaged) {
			return true // the data check names it
		}
		if err != nil {
			why = "it could not be checked: " + err.Error()
		}
		if has {
			with++
		}
		if why != "" {
			bad = append(bad, check{Name: "snapshot", OK: true, Session: info.ID, Detail: info.ID + ": " + why,
				Fix: "`cairn sessions snapshot " + info.ID + "` writes a fresh one from the events"})
		}
		return ctx.Err() == nil
	})
	if err != nil {
		return []check{{Name: "snapshot", OK: true, Detail: "the snapshots could not be checked: " + err.Error()}}
	}
	of := countOf(sessions, "session", "sessions")
	if more {
		of = fmt.Sprintf("the %d sessions updated last", sessions)
	}
	sum := check{Name: "snapshot", OK: true,
		Detail: fmt.Sprintf("%s of %s, all match their events", countOf(with, "snapshot", "snapshots"), of)}
	if with == 0 {
		sum.Detail = fmt.Sprintf("no snapshot in %s (the agent writes them as sessions grow)", of)
	}
	if len(bad) > 0 {
		sum.Detail = fmt.Sprintf("%s of %s, %d not usable: those sessions open by replaying every event", countOf(with, "snapshot", "snapshots"), of, len(bad))
	}
	out := append([]check{sum}, bad[:min(len(bad), maxSnapshotLines)]...)
	if len(bad) > maxSnapshotLines {
		out = append(out, check{Name: "snapshot", OK: true, Detail: fmt.Sprintf("and %d more", len(bad)-maxSnapshotLines)})
	}
	return out
}

// snapshotProblem says why session id's snapshot is not usable ("" when it
// is, or when the session has none), and whether it has one, as
// cairn.Restore finds it. A session deleted meanwhile has none.
func snapshotProblem(ctx context.Context, s cairn.Store, sn cairn.Snapshotter, id string) (string, bool, error) {
	snap, err := sn.LoadSnapshot(ctx, id)
	switch {
	case errors.Is(err, cairn.ErrNotFound):
		return "", false, nil
	case err != nil && (ctx.Err() != nil || errors.Is(err, cairn.ErrDamaged)):
		return "", false, err
	case err == nil && snap == nil:
		return "", false, nil // no snapshot: Restore would fold every event
	}
	r, err := cairn.Restore(ctx, s, id)
	switch {
	case errors.Is(err, cairn.ErrNotFound):
		return "", false, nil
	case err != nil:
		return "", true, err
	case r.Ignored != nil:
		return "its snapshot is not used: " + r.Ignored.Error(), true, nil
	}
	return "", true, nil
}

// lockCheck looks beside a local store (sqlite, file) for the lock files
// that commands take while they run a session, and reports those of
// sessions the store no longer holds. ok is false where there is nothing
// to look at.
func lockCheck(ctx context.Context, s cairn.Store) (check, bool) {
	path := lockFile(s, "x")
	if path == "" {
		return check{}, false
	}
	dir := filepath.Dir(path)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return check{}, false
	}
	if err != nil {
		return check{Name: "locks", Detail: err.Error(), Fix: "check that " + dir + " is readable"}, true
	}
	var orphans []string
	n := 0
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".lock")
		if !ok || !e.Type().IsRegular() {
			continue
		}
		n++
		// One lookup per lock file, not a walk of every session.
		_, err := s.Stat(ctx, id)
		switch {
		case errors.Is(err, cairn.ErrNotFound):
			orphans = append(orphans, id)
		case errors.Is(err, cairn.ErrDamaged) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
			return check{}, false // reported above, or out of time
		}
	}
	if len(orphans) == 0 {
		return check{Name: "locks", OK: true, Detail: fmt.Sprintf("%s in %s, each of a session the store holds", countOf(n, "lock file", "lock files"), dir)}, true
	}
	slices.Sort(orphans)
	shown := orphans[:min(len(orphans), 10)]
	detail := fmt.Sprintf("%d lock files in %s are of sessions the store no longer holds: %s", len(orphans), dir, strings.Join(shown, ", "))
	if len(shown) < len(orphans) {
		detail += ", …"
	}
	return check{Name: "locks", OK: true, Detail: detail,
		Fix: "they lose nothing and hold nothing back; remove them (the ID.lock files named) when no cairn command runs on this store"}, true
}

func modelCheck(ctx context.Context, app *cli.App) check {
	cfg, _ := app.Config()
	ch := check{Name: "model", Detail: cfg.ModelSpec()}
	detail, err := cli.TryModel(ctx, cfg)
	if err != nil {
		_, hint, _ := cli.Describe(err)
		ch.Detail, ch.Fix = cfg.ModelSpec()+": "+err.Error(), hint
		return ch
	}
	ch.OK, ch.Detail = true, cfg.ModelSpec()+": "+detail
	return ch
}

// mcpChecks starts each configured MCP server on its own, lists its tools
// and closes it: one line per server, and one for each tool it offers that
// the agent leaves out (which does not fail the check).
func mcpChecks(ctx context.Context, app *cli.App) []check {
	cfg, _ := app.Config()
	var names []string
	for name := range cfg.MCP.Servers {
		names = append(names, name)
	}
	slices.Sort(names)
	var out []check
	for _, name := range names {
		sc := cfg.MCP.Servers[name]
		if !sc.On() {
			out = append(out, check{Name: "mcp", OK: true, Detail: name + ": not started (enabled = false)"})
			continue
		}
		t0 := time.Now()
		s, err := app.StartMCP(ctx, name)
		if err != nil {
			_, hint, _ := cli.Describe(err)
			out = append(out, check{Name: "mcp", Detail: err.Error(), Fix: hint})
			continue
		}
		var tools []string
		for _, in := range s.Infos() {
			tools = append(tools, in.Name+" ("+in.Class.String()+")")
		}
		about := ""
		if impl := s.Implementation(); impl != nil {
			about = fmt.Sprintf(" (%s %s)", impl.Name, impl.Version)
		}
		out = append(out, check{Name: "mcp", OK: true, Detail: fmt.Sprintf("%s%s: started in %s, %d tools: %s",
			name, about, time.Since(t0).Round(time.Millisecond), len(tools), strings.Join(tools, ", "))})
		for _, t := range s.Unmatched() {
			out = append(out, check{Name: "mcp", Detail: cli.UnmatchedTool(name, t),
				Fix: "correct the tool's name in the config, or remove the table"})
		}
		for _, sk := range s.Skipped() {
			out = append(out, check{Name: "mcp", OK: true, Detail: fmt.Sprintf("%s: tool %q is left out: %s", name, sk.Tool, sk.Reason),
				Fix: "the server offers a tool a model cannot take; tell its authors, or set enabled = false in [mcp.servers." + name + ".tools." + sk.Tool + "]"})
		}
		s.Close()
	}
	return out
}

// countOf says n things in words: "1 session", "2 sessions".
func countOf(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
