package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/internal/cli"
)

// claimSession takes the session for this command's run with
// agent.Session.Claim, whose policy every claimant of a store shares (a
// local store's lock file first, a live holder refused unless force), and
// says so when force takes it from another holder. forceCmd is the command
// line to suggest with --force. The caller releases the claim.
func claimSession(ctx context.Context, app *cli.App, s *agent.Session, force bool, forceCmd string) (*agent.Claim, error) {
	cl, err := s.Claim(ctx, agent.ClaimOptions{Force: force, OnTakeover: func(holder string, until time.Time) {
		if until.IsZero() {
			app.Warnf("taking session %s over from %s, a live process on this machine; its writes are refused from now on", s.ID(), holder)
			return
		}
		app.Warnf("taking session %s over from %s (its lease runs until %s); that holder's writes are refused from now on",
			s.ID(), holder, until.Local().Format("15:04:05"))
	}})
	if errors.Is(err, cairn.ErrLeaseHeld) {
		return nil, cli.Fail(err, "wait for that run to end, or take the session over with `"+forceCmd+"` (the holder's writes are then refused)")
	}
	if err != nil {
		return nil, cli.StoreFail(s.ID(), err)
	}
	return cl, nil
}

// lockFile returns the lock file of session id of a local store (sqlite,
// file; see driver.LocalLocker), and "" for other stores.
func lockFile(store cairn.Store, id string) string {
	if l, ok := store.(driver.LocalLocker); ok {
		return l.LockFile(id)
	}
	return ""
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
