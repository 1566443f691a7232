package server

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
	"github.com/cairnhq/cairn/sessions"
)

// Paging of the sessions list.
const (
	DefaultListLimit = 50
	MaxListLimit     = 500
	// maxScanPages bounds the store pages one request reads when a
	// filter the store cannot apply (search, incomplete) leaves few
	// matches: the answer then has fewer sessions and a next cursor.
	maxScanPages = 20
)

// Statuses lists the statuses a filter may name.
var Statuses = []cairn.Status{cairn.StatusNew, cairn.StatusRunning, cairn.StatusInterrupted, cairn.StatusAwaiting,
	cairn.StatusCompleted, cairn.StatusFailed, cairn.StatusMaxSteps, cairn.StatusDamaged, sessions.StatusIncomplete}

// listQuery is a sessions list request: what the store filters (opts),
// and what the server filters on the pages it reads (search, incomplete).
type listQuery struct {
	opts     cairn.ListOptions
	search   string         // lower case; matches the ID or the first message
	statuses []cairn.Status // as asked, incomplete included
	limit    int
}

func parseListQuery(q url.Values) (listQuery, error) {
	lq := listQuery{search: strings.ToLower(strings.TrimSpace(q.Get("q")))}
	n, err := queryInt(q, "limit", DefaultListLimit, 1, MaxListLimit)
	if err != nil {
		return lq, err
	}
	lq.limit = int(n)
	if lq.statuses, err = queryStatuses(q, Statuses); err != nil {
		return lq, err
	}
	if !slices.Contains(lq.statuses, sessions.StatusIncomplete) {
		lq.opts.Status = lq.statuses
	}
	if lq.opts.Labels, err = queryLabels(q, "KEY=VALUE"); err != nil {
		return lq, err
	}
	for _, t := range []struct {
		name string
		dst  *time.Time
	}{{"updated_after", &lq.opts.UpdatedAfter}, {"updated_before", &lq.opts.UpdatedBefore}} {
		if s := q.Get(t.name); s != "" {
			v, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return lq, badRequest(t.name, "%s=%q is not an RFC 3339 time", t.name, s)
			}
			*t.dst = v
		}
	}
	if c := q.Get("cursor"); c != "" {
		if _, err := driver.ParseCursor(c); err != nil {
			return lq, badRequest("cursor", "%v", err)
		}
		lq.opts.Cursor = c
	}
	return lq, nil
}

// queryStatuses reads the request's status parameters (comma-separated
// or repeated); a 400 naming the parameter for one not in known.
func queryStatuses(q url.Values, known []cairn.Status) ([]cairn.Status, error) {
	var out []cairn.Status
	for _, v := range q["status"] {
		for _, st := range strings.Split(v, ",") {
			st = strings.TrimSpace(st)
			if st == "" {
				continue
			}
			if !slices.Contains(known, cairn.Status(st)) {
				return nil, badRequest("status", "unknown status %q (want one of %s)", st, statusList(known))
			}
			out = append(out, cairn.Status(st))
		}
	}
	return out, nil
}

// queryLabels reads the request's label=NAME=VALUE parameters; nil for
// none, a 400 naming the parameter for one without "=" (form names the
// shape in the message).
func queryLabels(q url.Values, form string) (map[string]string, error) {
	var out map[string]string
	for _, l := range q["label"] {
		if l == "" {
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return nil, badRequest("label", "label %q is not %s", l, form)
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = v
	}
	return out, nil
}

func statusList(known []cairn.Status) string {
	var s []string
	for _, st := range known {
		s = append(s, string(st))
	}
	return strings.Join(s, ", ")
}

// postFilter reports whether the server filters what the store returns.
func (lq listQuery) postFilter() bool {
	return lq.search != "" || slices.Contains(lq.statuses, sessions.StatusIncomplete)
}

func (lq listQuery) match(info cairn.SessionInfo) bool {
	if len(lq.statuses) > 0 && !slices.Contains(lq.statuses, info.Status) {
		return false
	}
	if lq.search != "" && !strings.Contains(strings.ToLower(info.ID), lq.search) &&
		!strings.Contains(strings.ToLower(info.FirstMessage), lq.search) {
		return false
	}
	return true
}

// list returns one page of sessions, newest first, and the store's cursor
// of the next page ("" on the last).
func (s *Server) list(ctx context.Context, lq listQuery) ([]sessionJSON, string, error) {
	opts := lq.opts
	opts.Limit = lq.limit
	if !lq.postFilter() {
		page, err := s.store.List(ctx, opts)
		if err != nil {
			return nil, "", fmt.Errorf("list sessions: %w", err)
		}
		return s.withHolders(ctx, page.Sessions), page.Next, nil
	}
	opts.Limit = max(lq.limit, 100)
	var found []cairn.SessionInfo
	for range maxScanPages {
		page, err := s.store.List(ctx, opts)
		if err != nil {
			return nil, "", fmt.Errorf("list sessions: %w", err)
		}
		for _, info := range page.Sessions {
			shown := displayed(info)
			if !lq.match(shown) {
				continue
			}
			found = append(found, info)
			if len(found) == lq.limit {
				return s.withHolders(ctx, found), driver.Cursor{UpdatedAt: info.UpdatedAt, ID: info.ID}.Encode(), nil
			}
		}
		if page.Next == "" {
			return s.withHolders(ctx, found), "", nil
		}
		opts.Cursor = page.Next
	}
	return s.withHolders(ctx, found), opts.Cursor, nil
}

// displayed is info as people see it: an import not yet finished is
// "incomplete", whatever its events say.
func displayed(info cairn.SessionInfo) cairn.SessionInfo {
	if _, ok := sessions.Incomplete(info); ok {
		info.Status = sessions.StatusIncomplete
	}
	if info.Labels == nil {
		info.Labels = map[string]string{}
	}
	return info
}

// withHolders joins infos with the holders of their leases.
func (s *Server) withHolders(ctx context.Context, infos []cairn.SessionInfo) []sessionJSON {
	out := make([]sessionJSON, len(infos))
	ids := make([]string, len(infos))
	for i, info := range infos {
		out[i].SessionInfo = displayed(info)
		ids[i] = info.ID
	}
	l, ok := s.store.(cairn.Leaser)
	if !ok || len(ids) == 0 {
		return out
	}
	// The page's holders in one question; a page without them is still
	// a page (the holder column is only a hint).
	leases, err := l.CurrentLeases(ctx, ids)
	if err != nil {
		return out
	}
	for i, info := range infos {
		if lease, ok := leases[info.ID]; ok {
			out[i].Holder = lease.Holder
			exp := lease.Expires
			out[i].LeaseExpires = &exp
		}
	}
	return out
}

func (s *Server) sessionJSON(ctx context.Context, info cairn.SessionInfo) sessionJSON {
	return s.withHolders(ctx, []cairn.SessionInfo{info})[0]
}
