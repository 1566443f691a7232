package crypt

import (
	"context"
	"fmt"

	"github.com/cairnhq/cairn"
)

// check runs the inner store's check and, with a keyring, the check of the
// key namespace and a look at every session for events left in clear among
// sealed ones (what a process without the key once could write): each is
// reported as damage, with `cairn sessions repair ID` as the fix. A
// session that does not open is reported as what Load would say.
func (s *store) check(ctx context.Context, inner cairn.Checker) (*cairn.CheckReport, error) {
	rep, err := inner.Check(ctx)
	if err != nil || s.ring == nil {
		return rep, err
	}
	if kc, ok := s.keys.(cairn.Checker); ok {
		krep, err := kc.Check(ctx)
		if err != nil {
			return rep, fmt.Errorf("check the key namespace: %w", err)
		}
		for _, p := range krep.Problems {
			p.Where = "key namespace " + KeyNamespace(s.ns) + ": " + p.Where
			if p.Session != "" {
				p.Msg = "its data key: " + p.Msg
			}
			rep.Problems = append(rep.Problems, p)
		}
	}
	damaged := map[string]bool{}
	for _, p := range rep.Problems {
		damaged[p.Session] = true
	}
	opts := cairn.ListOptions{Limit: 500}
	for {
		page, err := s.inner.List(ctx, opts)
		if err != nil {
			return rep, fmt.Errorf("check: list sessions: %w", err)
		}
		for _, info := range page.Sessions {
			if damaged[info.ID] || info.Status == cairn.StatusDamaged {
				continue
			}
			ins, err := s.Inspect(ctx, info.ID)
			switch {
			case err != nil && ctx.Err() != nil:
				return rep, ctx.Err()
			case err != nil:
				rep.Problems = append(rep.Problems, cairn.Problem{Session: info.ID, Where: "session " + info.ID,
					Msg: err.Error(), Damage: true})
			case ins.Damaged():
				rep.Problems = append(rep.Problems, cairn.Problem{Session: info.ID, Where: "session " + info.ID,
					Msg:    fmt.Sprintf("%d of %d events are not encrypted (from seq %d): written by a process without the key", len(ins.Clear), ins.Events, ins.Clear[0]),
					Fix:    "cairn sessions repair " + info.ID + " (seals them; --cut drops them instead)",
					Damage: true})
			}
		}
		if page.Next == "" {
			return rep, nil
		}
		opts.Cursor = page.Next
	}
}
