package driver

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cairnhq/cairn"
)

// MaxFirstMessage is how much of the first user message a SessionInfo
// keeps, in bytes (cairn.SessionInfo.Apply cuts it there).
const MaxFirstMessage = 200

// InfoDelta is what a batch of appended events changes in a session's
// SessionInfo. Stores compute it from the events alone with Summarize and
// apply it in the same transaction as the append, so listing never has to
// replay a history.
type InfoDelta struct {
	Steps        int          // model responses and tool results added
	Status       cairn.Status // the new status, or "" for unchanged
	FirstMessage string       // the text of the first user message in the batch
	HasMessage   bool         // whether the batch holds a user message
}

// Summarize computes the InfoDelta of a batch of events, by the rules of
// cairn.SessionInfo.Apply (the status changes State follows). Events that
// CheckAppend passed are not decoded again.
func Summarize(events []cairn.Event) InfoDelta {
	var info cairn.SessionInfo
	for _, e := range events {
		_ = info.Apply(e) // checked already: an event that does not decode changes nothing
	}
	return InfoDelta{Steps: info.Steps, Status: info.Status, FirstMessage: info.FirstMessage, HasMessage: info.FirstMessage != ""}
}

// Apply updates info with the delta of events appended at time now.
func (d InfoDelta) Apply(info *cairn.SessionInfo, lastSeq int64, now time.Time) {
	info.Steps += d.Steps
	if d.Status != "" {
		info.Status = d.Status
	}
	if d.HasMessage && info.FirstMessage == "" {
		info.FirstMessage = d.FirstMessage
	}
	info.LastSeq = lastSeq
	info.UpdatedAt = now
}

// Match reports whether info passes the filters of o (not its cursor).
func Match(o cairn.ListOptions, info cairn.SessionInfo) bool {
	if !strings.HasPrefix(info.ID, o.Prefix) {
		return false
	}
	if len(o.Status) > 0 && !slices.Contains(o.Status, info.Status) {
		return false
	}
	for k, v := range o.Labels {
		if got, ok := info.Labels[k]; !ok || got != v {
			return false
		}
	}
	if !o.UpdatedAfter.IsZero() && !info.UpdatedAt.After(o.UpdatedAfter) {
		return false
	}
	if !o.UpdatedBefore.IsZero() && !info.UpdatedAt.Before(o.UpdatedBefore) {
		return false
	}
	return true
}

// PageSize returns the page size o asks for.
func PageSize(o cairn.ListOptions) int {
	if o.Limit <= 0 {
		return cairn.DefaultListLimit
	}
	return o.Limit
}

// Cursor is a position in List order: most recently updated first, then by
// ID descending among equal times.
type Cursor struct {
	UpdatedAt time.Time
	ID        string
}

// Encode returns the cursor as an opaque string for ListPage.Next.
func (c Cursor) Encode() string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.UpdatedAt.UnixNano(), 10) + ":" + c.ID))
}

// ParseCursor decodes a cursor made by Cursor.Encode.
func ParseCursor(s string) (Cursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return Cursor{}, fmt.Errorf("list: malformed cursor %q", s)
	}
	ns, id, ok := strings.Cut(string(b), ":")
	n, err := strconv.ParseInt(ns, 10, 64)
	if !ok || err != nil || cairn.ValidateID(id) != nil {
		return Cursor{}, fmt.Errorf("list: malformed cursor %q", s)
	}
	return Cursor{UpdatedAt: time.Unix(0, n).UTC(), ID: id}, nil
}

// Before reports whether info comes before the cursor's position in List
// order, that is, whether it was already listed.
func (c Cursor) Before(info cairn.SessionInfo) bool {
	if !info.UpdatedAt.Equal(c.UpdatedAt) {
		return info.UpdatedAt.After(c.UpdatedAt)
	}
	return info.ID >= c.ID
}

// SortInfos sorts infos into List order.
func SortInfos(infos []cairn.SessionInfo) {
	slices.SortFunc(infos, func(a, b cairn.SessionInfo) int {
		if c := b.UpdatedAt.Compare(a.UpdatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
}

// PageInfos filters, sorts and pages a full set of infos; backends that
// cannot filter natively use it.
func PageInfos(all []cairn.SessionInfo, opts cairn.ListOptions) (*cairn.ListPage, error) {
	var cur *Cursor
	if opts.Cursor != "" {
		c, err := ParseCursor(opts.Cursor)
		if err != nil {
			return nil, err
		}
		cur = &c
	}
	var out []cairn.SessionInfo
	for _, info := range all {
		if Match(opts, info) && (cur == nil || !cur.Before(info)) {
			out = append(out, info)
		}
	}
	SortInfos(out)
	page := &cairn.ListPage{Sessions: out}
	if n := PageSize(opts); len(out) > n {
		page.Sessions = out[:n]
		last := out[n-1]
		page.Next = Cursor{UpdatedAt: last.UpdatedAt, ID: last.ID}.Encode()
	}
	return page, nil
}
