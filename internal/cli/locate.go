package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/text"
	"github.com/cairnhq/cairn/store/crypt"
)

// Located is a session found by Locate.
type Located struct {
	Store  cairn.Store
	URL    string
	ID     string
	Global bool // found in the user-global store, not the project's
}

// LocateOptions say where Locate looks and what a reference may be.
type LocateOptions struct {
	// Global also looks in the user-global store when the project's store
	// does not hold the session, unless the store was named for the
	// command (App.StoreNamed): then only that store is searched.
	Global bool
	// Exact takes the reference as a whole ID only: for the commands that
	// change or erase a session. A reference that is only the start of
	// IDs is refused, naming them. Without Exact, a unique prefix is
	// taken, as the commands that only read do, with a note.
	Exact bool
	// Command names the command for the hint of a refused prefix, as
	// "cairn sessions delete".
	Command string
}

// maxCandidates bounds the sessions an error lists for a prefix.
const maxCandidates = 10

// Locate finds a session by ID (or, without opts.Exact, by unique ID
// prefix) in the project's store and, with opts.Global, in the user-global
// store when it is not there. A store named for the command (--store,
// CAIRN_STORE, a config file given with --config or CAIRN_CONFIG that sets
// the store) is the only one searched: a session not there is not found,
// and the hint names that store and, when the user-global store holds the
// session, says so without using it. The caller closes loc.Store.
func (a *App) Locate(ctx context.Context, ref string, opts LocateOptions) (*Located, error) {
	if err := cairn.ValidateID(ref); err != nil {
		return nil, BadID(err)
	}
	store, u, err := a.OpenReadStore(ctx)
	if err != nil {
		return nil, err
	}
	id, cands, err := findIn(ctx, store, ref, opts.Exact)
	if err == nil {
		return a.located(&Located{Store: store, URL: u, ID: id}, ref), nil
	}
	store.Close()
	if !errors.Is(err, cairn.ErrNotFound) {
		return nil, err
	}
	gu := a.GlobalStoreURL()
	named := a.StoreNamed()
	global := opts.Global && gu != "" && gu != u && named == ""
	// The user-global store: for a whole ID always, for a prefix only when
	// the project's store has no session it starts.
	if global && (opts.Exact || len(cands) == 0) && a.globalExists(gu) {
		gs, gerr := a.OpenURL(ctx, gu)
		if gerr != nil {
			return nil, gerr
		}
		id, gc, gerr := findIn(ctx, gs, ref, opts.Exact)
		if gerr == nil {
			return a.located(&Located{Store: gs, URL: gu, ID: id, Global: true}, ref), nil
		}
		gs.Close()
		if !errors.Is(gerr, cairn.ErrNotFound) {
			return nil, gerr
		}
		cands = append(cands, gc...)
	}
	where := text.RedactURL(u)
	if global {
		where += " or " + text.RedactURL(gu)
	}
	if len(cands) > 0 {
		cmd := opts.Command
		if cmd == "" {
			cmd = "this command"
		}
		list := strings.Join(cands, "\n  ")
		if len(cands) > maxCandidates {
			list = strings.Join(cands[:maxCandidates], "\n  ") + "\n  …"
		}
		return nil, Fail(&notFoundError{fmt.Sprintf("session %q not found in %s; sessions whose ID starts with it:\n  %s", ref, where, list)},
			"`"+cmd+"` changes or erases a session, so it takes the whole ID, never a prefix: give the ID in full")
	}
	if named != "" {
		return nil, Fail(&notFoundError{fmt.Sprintf("session %q not found in %s", ref, where)}, a.namedHint(ctx, ref, u, named, opts))
	}
	return nil, Fail(&notFoundError{fmt.Sprintf("session %q not found in %s", ref, where)},
		"`cairn sessions list` shows the saved sessions; check --store and --namespace")
}

// namedHint is the hint of a session not found in the store named by
// named: the store searched, and the user-global store when it holds the
// session (looked at, not used).
func (a *App) namedHint(ctx context.Context, ref, u, named string, opts LocateOptions) string {
	cfg, _ := a.Config()
	ns := ""
	if cfg != nil {
		ns = ", namespace " + cfg.Persistence.Namespace
	}
	hint := fmt.Sprintf("only the store named by %s was searched: %s%s (`cairn sessions list` with it shows its sessions)", named, text.RedactURL(u), ns)
	if gu := a.GlobalStoreURL(); opts.Global && gu != "" && gu != u && a.globalExists(gu) {
		if gs, err := a.OpenURL(ctx, gu); err == nil {
			id, _, err := findIn(ctx, gs, ref, opts.Exact)
			gs.Close()
			if err == nil {
				hint += fmt.Sprintf("; the user-global store %s holds session %s: give --store %s to use it", text.RedactURL(gu), id, text.RedactURL(gu))
			}
		}
	}
	return hint
}

// located notes a prefix resolved to a session, so that nobody mistakes
// one session for another.
func (a *App) located(loc *Located, ref string) *Located {
	if loc.ID != ref {
		a.Notef("note: no session is called %s; %s is the one whose ID starts with it", ref, loc.ID)
	}
	if loc.Global {
		a.Notef("found %s in the user-global store %s", loc.ID, text.RedactURL(loc.URL))
	}
	return loc
}

// globalExists reports whether the user-global store may hold sessions: a
// local one whose file is missing holds none, and is not created by a
// lookup.
func (a *App) globalExists(u string) bool {
	p := LocalPath(u)
	if p == "" {
		return true
	}
	_, err := statPath(p)
	return err == nil
}

// findIn returns the ID of the session ref names in store: the exact ID,
// or, unless exact, the one session whose ID starts with ref. When ref
// names no session it returns an error wrapping cairn.ErrNotFound and the
// IDs that start with it (for an exact lookup; for a prefix lookup, when
// there are several it is an ambiguity error).
func findIn(ctx context.Context, store cairn.Store, ref string, exact bool) (string, []string, error) {
	if _, err := store.Stat(ctx, ref); err == nil || unreadable(err) {
		return ref, nil, nil // there, readable or not: the command says why not
	} else if !errors.Is(err, cairn.ErrNotFound) {
		return "", nil, StoreFail(ref, fmt.Errorf("load session %s: %w", ref, err))
	}
	// The sessions whose ID starts with ref: a range of the store's ID
	// index, never a walk of every session.
	page, err := store.List(ctx, cairn.ListOptions{Prefix: ref, Limit: 2*maxCandidates + 1})
	if err != nil {
		return "", nil, StoreFail(ref, fmt.Errorf("list sessions: %w", err))
	}
	var matches []string
	for _, info := range page.Sessions {
		matches = append(matches, info.ID)
	}
	slices.Sort(matches)
	switch {
	case len(matches) == 0:
		return "", nil, cairn.ErrNotFound
	case exact:
		return "", matches, cairn.ErrNotFound
	case len(matches) == 1:
		return matches[0], nil, nil
	}
	return "", nil, Fail(fmt.Errorf("session prefix %q is ambiguous; it matches:\n  %s", ref, strings.Join(matches, "\n  ")),
		"give more characters of the ID")
}

// unreadable reports whether err says that a session is there but cannot
// be read: encrypted without the key, in clear among sealed events,
// tampered with, damaged.
func unreadable(err error) bool {
	for _, e := range []error{crypt.ErrEncrypted, crypt.ErrPlaintext, crypt.ErrTampered, crypt.ErrUnknownKey, cairn.ErrDamaged} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// EachSession calls fn for every session List returns, page after page,
// until fn returns false.
func EachSession(ctx context.Context, store cairn.Store, opts cairn.ListOptions, fn func(cairn.SessionInfo) bool) error {
	for {
		page, err := store.List(ctx, opts)
		if err != nil {
			return StoreFail("", fmt.Errorf("list sessions: %w", err))
		}
		for _, info := range page.Sessions {
			if !fn(info) {
				return nil
			}
		}
		if page.Next == "" {
			return nil
		}
		opts.Cursor = page.Next
	}
}
