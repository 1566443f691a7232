package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/internal/cli"
)

// claimSession takes the session for this command's run: on a local store
// (sqlite, file) an operating-system lock on a file beside it, which the
// kernel releases if the process dies, and on a store with leases its lease
// (renewed while the command runs). Another process running the session
// makes it fail at once with "session … is being run elsewhere", naming
// that process. With force the session is taken over, with a warning
// naming the holder, whose writes are refused from then on: a lease is
// taken over; on a local store whose lock a live process holds, the claim
// goes without the lock and fences that process out through the lease.
// forceCmd is the command line to suggest with --force. The caller
// releases the claim.
func claimSession(ctx context.Context, app *cli.App, s *agent.Session, store cairn.Store, force bool, forceCmd string) (*agent.Claim, error) {
	opts := agent.ClaimOptions{Force: force, LockFile: lockFile(store, s.ID())}
	l, leases := store.(cairn.Leaser)
	var (
		cur cairn.Lease
		err error
	)
	if leases {
		if cur, err = l.CurrentLease(ctx, s.ID()); err != nil && !errors.Is(err, cairn.ErrNotFound) {
			return nil, cli.StoreFail(s.ID(), fmt.Errorf("read the lease of session %s: %w", s.ID(), err))
		}
	}
	// On a local store the lock proves that no claimant using the same
	// lock file is alive, and the claim takes a dead one's lease over at
	// once. A live lease of a process that holds no lock (one that took
	// the session over with --force, a program without the lock file) is
	// not taken over without --force.
	if opts.LockFile != "" && cur.Holder != "" && !force && holderAlive(cur.Holder) {
		return nil, heldError(s.ID(), &cairn.LeaseHeldError{Session: s.ID(), Holder: cur.Holder, Expires: cur.Expires}, forceCmd)
	}
	if force && cur.Holder != "" {
		app.Warnf("taking session %s over from %s (its lease runs until %s); that holder's writes are refused from now on",
			s.ID(), cur.Holder, cur.Expires.Local().Format("15:04:05"))
	}
	cl, err := s.Claim(ctx, opts)
	var held *cairn.LeaseHeldError
	if force && leases && opts.LockFile != "" && errors.As(err, &held) && held.Expires.IsZero() {
		// The lock of a live process: fence it out through the lease.
		if cur.Holder == "" {
			app.Warnf("taking session %s over from %s, a live process on this machine; its writes are refused from now on", s.ID(), held.Holder)
		}
		opts.LockFile = ""
		cl, err = s.Claim(ctx, opts)
	}
	if errors.Is(err, cairn.ErrLeaseHeld) {
		return nil, heldError(s.ID(), err, forceCmd)
	}
	if err != nil {
		return nil, cli.StoreFail(s.ID(), err)
	}
	return cl, nil
}

// heldError is the error for a session that another holder runs.
func heldError(id string, err error, forceCmd string) error {
	return cli.Fail(err, "wait for that run to end, or take the session over with `"+forceCmd+"` (the holder's writes are then refused)")
}

// holderAlive reports whether the holder of a lease may be alive: always,
// unless it is named as this machine's host and a process ID (as
// agent.DefaultHolder names it) and that process is gone.
func holderAlive(holder string) bool {
	host, pidText, ok := strings.Cut(holder, ":")
	if !ok {
		return true
	}
	me, err := os.Hostname()
	if err != nil || me != host {
		return true
	}
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid <= 0 {
		return true
	}
	err = syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// lockFile returns the lock file of session id of a local store (sqlite,
// file; see cairn.LocalLocker), and "" for other stores (they have leases,
// or are in memory).
func lockFile(store cairn.Store, id string) string {
	if l, ok := store.(cairn.LocalLocker); ok {
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
