package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/internal/cli"
)

// claimSession takes the session for this command's run: on a local store
// (sqlite, file) an operating-system lock on a file beside it, which the
// kernel releases if the process dies, and on a store with leases its lease
// (renewed while the command runs; on a local store a dead holder's lease
// is taken over at once, since the lock proves it dead). Another process running the session makes it fail
// at once with "session … is being run elsewhere". With force a live lease
// is taken over, with a warning naming the holder whose writes will be
// refused from then on. The caller releases the claim.
func claimSession(ctx context.Context, app *cli.App, s *agent.Session, store cairn.Store, storeURL string, force bool) (*agent.Claim, error) {
	sopts, err := app.StoreOptions()
	if err != nil {
		return nil, err
	}
	opts := agent.ClaimOptions{Force: force, LockFile: lockFilePath(storeURL, sopts.Namespace, s.ID())}
	if force {
		if l, ok := store.(cairn.Leaser); ok {
			if cur, err := l.CurrentLease(ctx, s.ID()); err == nil && cur.Holder != "" {
				app.Warnf("taking session %s over from %s (its lease runs until %s); that holder's writes are refused from now on",
					s.ID(), cur.Holder, cur.Expires.Local().Format("15:04:05"))
			}
		}
	}
	cl, err := s.Claim(ctx, opts)
	if errors.Is(err, cairn.ErrLeaseHeld) {
		hint := "wait for that run to end, or take the session over with `cairn sessions resume " + s.ID() + " --force`"
		if opts.LockFile != "" {
			hint = "wait for that process to end: a local store's claim lasts as long as the process that holds it"
		}
		return nil, cli.Fail(err, hint)
	}
	if err != nil {
		return nil, cli.Fail(err, "`cairn doctor` checks the store")
	}
	return cl, nil
}

// lockFilePath returns the lock file of a session of a local store: in a
// folder beside the database (sqlite) or the sessions folder (file), named
// after it with ".locks". Other stores get "" (they have leases, or are
// in memory).
func lockFilePath(storeURL, namespace, id string) string {
	u, err := url.Parse(storeURL)
	if err != nil {
		return ""
	}
	var p string
	switch strings.ToLower(u.Scheme) {
	case "sqlite", "file":
		p = u.Opaque
		if p == "" {
			p = u.Path
			if rest, ok := strings.CutPrefix(p, "/"); ok && strings.HasPrefix(rest, ".") {
				p = rest
			}
		}
	}
	if p == "" {
		return ""
	}
	p = filepath.Clean(p)
	return filepath.Join(p+".locks", namespace, id+".lock")
}

// releaseClaim gives the claim up at the end of a command.
func releaseClaim(ctx context.Context, app *cli.App, cl *agent.Claim) {
	if cl == nil {
		return
	}
	if err := cl.Release(context.WithoutCancel(ctx)); err != nil {
		app.Warnf("%v", fmt.Errorf("release the session's claim: %w", err))
	}
}
