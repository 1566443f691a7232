package crypt

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
)

// check runs the inner store's check and, with a keyring, CheckSessions:
// the check of the key namespace and a look at every session that the
// inner check did not find damaged.
func (s *store) check(ctx context.Context, inner driver.Checker) (*driver.CheckReport, error) {
	rep, err := inner.Check(ctx)
	if err != nil || s.ring == nil {
		return rep, err
	}
	damaged := map[string]bool{}
	for _, p := range rep.Problems {
		damaged[p.Session] = true
	}
	n := rep.Sessions
	err = s.checkSessions(ctx, rep, 0, damaged)
	rep.Sessions = n // the inner check's count: the same sessions
	return rep, err
}

// CheckSessions reads, with the keyring, the key namespace (its own check,
// when its store has one) and each session of the namespace, the most
// recently updated first, up to limit sessions (0: every one), and reports
// as damage each session that does not open with the keyring: its data
// key is wrapped by a key the keyring lacks (written under another key),
// it does not authenticate, or it holds events left in clear among sealed
// ones (what a process without the key once could write). Each problem
// says what to do. It writes nothing. A guard has nothing to check.
//
// It is what Check adds to the wrapped store's check; over a store that
// has no check of its own (not a driver.Checker), it is the whole check.
func (s *store) CheckSessions(ctx context.Context, limit int) (*driver.CheckReport, error) {
	rep := &driver.CheckReport{}
	if s.ring == nil {
		return rep, nil
	}
	return rep, s.checkSessions(ctx, rep, limit, map[string]bool{})
}

// checkSessions adds to rep what CheckSessions finds, passing by the
// sessions in skip (found damaged already).
func (s *store) checkSessions(ctx context.Context, rep *driver.CheckReport, limit int, skip map[string]bool) error {
	if kc, ok := s.keys.(driver.Checker); ok {
		krep, err := kc.Check(ctx)
		if err != nil {
			return fmt.Errorf("check the key namespace: %w", err)
		}
		for _, p := range krep.Problems {
			p.Where = "key namespace " + KeyNamespace(s.ns) + ": " + p.Where
			if p.Session != "" {
				p.Msg = "its data key: " + p.Msg
				skip[p.Session] = true
			}
			rep.Problems = append(rep.Problems, p)
		}
	}
	opts := cairn.ListOptions{Limit: 500}
	seen := 0
	for {
		if limit > 0 {
			opts.Limit = min(500, limit-seen)
		}
		page, err := s.inner.List(ctx, opts)
		if err != nil {
			return fmt.Errorf("check: list sessions: %w", err)
		}
		for _, info := range page.Sessions {
			seen++
			rep.Sessions++
			if skip[info.ID] || info.Status == cairn.StatusDamaged {
				continue
			}
			if p, ok := s.checkOne(ctx, info.ID); ok {
				rep.Problems = append(rep.Problems, p)
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if page.Next == "" || (limit > 0 && seen >= limit) {
			return nil
		}
		opts.Cursor = page.Next
	}
}

// checkOne inspects one session and returns its problem, if it has one.
func (s *store) checkOne(ctx context.Context, id string) (driver.Problem, bool) {
	p := driver.Problem{Session: id, Where: "session " + id, Damage: true}
	ins, err := s.Inspect(ctx, id)
	var uk *UnknownKeyError
	switch {
	case errors.Is(err, cairn.ErrNotFound) || ctx.Err() != nil:
		return p, false // deleted meanwhile, or out of time
	case errors.As(err, &uk):
		p.Where = "key namespace " + KeyNamespace(s.ns)
		p.Msg = fmt.Sprintf("it does not open with this key: its data key is wrapped by key %s, and the keyring holds %s; it was written under another key",
			strings.Join(uk.KeyIDs, ", "), strings.Join(uk.Held, ", "))
		p.Fix = "read it with the file of key " + strings.Join(uk.KeyIDs, " or ") + " (persistence.encryption_key_file or CAIRN_ENCRYPTION_KEY_FILE), or erase it: `cairn sessions delete " + id + "`"
	case err != nil:
		p.Msg = err.Error()
	case ins.Damaged():
		p.Msg = fmt.Sprintf("%d of %d events are not encrypted (from seq %d): written by a process without the key", len(ins.Clear), ins.Events, ins.Clear[0])
		p.Fix = "cairn sessions repair " + id + " (seals them; --cut drops them instead)"
	default:
		return p, false
	}
	return p, true
}
