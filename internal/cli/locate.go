package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cairnhq/cairn"
)

// Located is a session found by Locate.
type Located struct {
	Store  cairn.Store
	URL    string
	ID     string
	Global bool // found in the user-global store, not the project's
}

// Locate finds a session by ID or unique ID prefix in the project's store
// and, when global is set and it is not there, in the user-global store.
// The caller closes loc.Store.
func (a *App) Locate(ctx context.Context, ref string, global bool) (*Located, error) {
	if err := cairn.ValidateID(ref); err != nil {
		return nil, Fail(err, "session IDs are 1-128 characters of A-Z a-z 0-9 _ -")
	}
	store, u, err := a.OpenStore(ctx)
	if err != nil {
		return nil, err
	}
	id, err := findIn(ctx, store, ref)
	if err == nil {
		return &Located{Store: store, URL: u, ID: id}, nil
	}
	store.Close()
	if !errors.Is(err, cairn.ErrNotFound) {
		return nil, err
	}
	gu := a.GlobalStoreURL()
	if global && gu != "" && gu != u {
		if gs, gerr := cairn.Open(ctx, gu, a.mustOpts()); gerr == nil {
			if id, gerr := findIn(ctx, gs, ref); gerr == nil {
				return &Located{Store: gs, URL: gu, ID: id, Global: true}, nil
			} else if !errors.Is(gerr, cairn.ErrNotFound) {
				gs.Close()
				return nil, gerr
			}
			gs.Close()
		}
	}
	where := cairn.RedactURL(u)
	if global && gu != "" && gu != u {
		where += " or " + cairn.RedactURL(gu)
	}
	return nil, Fail(fmt.Errorf("session %q not found in %s: %w", ref, where, cairn.ErrNotFound),
		"`cairn sessions list` shows the saved sessions; check --store and --namespace")
}

func (a *App) mustOpts() cairn.StoreOptions {
	o, _ := a.StoreOptions()
	return o
}

// findIn returns the ID of the session ref names in store: the exact ID, or
// the one session whose ID starts with ref.
func findIn(ctx context.Context, store cairn.Store, ref string) (string, error) {
	if _, err := store.Load(ctx, ref, 1<<62); err == nil {
		return ref, nil
	} else if !errors.Is(err, cairn.ErrNotFound) {
		return "", Fail(fmt.Errorf("load session %s: %w", ref, err), "`cairn doctor` checks the store")
	}
	var matches []string
	err := EachSession(ctx, store, cairn.ListOptions{}, func(info cairn.SessionInfo) bool {
		if strings.HasPrefix(info.ID, ref) {
			matches = append(matches, info.ID)
		}
		return len(matches) <= 20
	})
	if err != nil {
		return "", err
	}
	switch len(matches) {
	case 0:
		return "", cairn.ErrNotFound
	case 1:
		return matches[0], nil
	}
	slices.Sort(matches)
	return "", Fail(fmt.Errorf("session prefix %q is ambiguous; it matches:\n  %s", ref, strings.Join(matches, "\n  ")),
		"give more characters of the ID")
}

// EachSession calls fn for every session List returns, page after page,
// until fn returns false.
func EachSession(ctx context.Context, store cairn.Store, opts cairn.ListOptions, fn func(cairn.SessionInfo) bool) error {
	for {
		page, err := store.List(ctx, opts)
		if err != nil {
			return Fail(fmt.Errorf("list sessions: %w", err), "`cairn doctor` checks the store")
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
