package redis

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/driver"
)

// Create implements cairn.Store. One script checks that no live session
// holds the ID, clears what an expired one left behind (its entries in the
// text index too), writes the meta, sets its TTL and (unless the store is
// split) adds it to the index and to the claim set; a split store clears
// the text index's namespace keys and adds it to the index after.
func (s *Store) Create(ctx context.Context, meta cairn.SessionMeta) (err error) {
	defer unavailable(&err)
	if err := s.guard.Session(meta.ID); err != nil {
		return err
	}
	now := s.now()
	created := meta.CreatedAt
	if created.IsZero() {
		created = now
	}
	labels := meta.Labels
	if labels == nil {
		labels = map[string]string{}
	}
	lj, err := json.Marshal(labels)
	if err != nil {
		return fmt.Errorf("create %s: labels: %w", meta.ID, err)
	}
	n := nonce()
	res, err := change(ctx, func(ctx context.Context) (string, error) {
		return createScript.Run(ctx, s.client, s.scriptKeys(meta.ID),
			nanos(now), nanos(s.opts.ExpiresAt(now)), s.ttl, meta.ID, score(now),
			formatTime(created.UTC()), formatTime(now), lj, score(created), n).Text()
	}, func(ctx context.Context) (string, bool, error) {
		return s.probe(ctx, meta.ID, n, 0, nil)
	})
	if err != nil {
		return fmt.Errorf("create %s: %w", meta.ID, err)
	}
	switch res {
	case replyOK:
	case replyExists:
		return fmt.Errorf("create %s: %w", meta.ID, cairn.ErrExists)
	default:
		return fmt.Errorf("create %s: unexpected script reply %q", meta.ID, res)
	}
	if s.split {
		// What an expired session of the ID left in the text index goes
		// before the session is listed: others meet it there.
		if err := s.unsearch(ctx, meta.ID); err != nil {
			return fmt.Errorf("create %s: text index: %w", meta.ID, err)
		}
		if err := s.reindex(ctx, meta.ID); err != nil {
			return fmt.Errorf("create %s: index: %w", meta.ID, err)
		}
	}
	return nil
}

// Append implements cairn.Store. The whole append is one EVALSHA: the
// script checks that the session is live and at expectSeq, pushes the
// events and their postings in the text index, applies their summary to
// the meta and refreshes the TTL, so its cost does not depend on the
// length of the history. A split store records the events' tokens in the
// namespace keys of the text index before (see searchindex.go), and
// counts them and raises the session's score in the index after.
func (s *Store) Append(ctx context.Context, id string, expectSeq int64, events ...cairn.Event) (err error) {
	defer unavailable(&err)
	events, err = s.guard.Append(s.opts.Limits, id, expectSeq, events)
	if err != nil {
		return err
	}
	evs, err := encodeEvents(events)
	if err != nil {
		return fmt.Errorf("append %s: %w", id, err)
	}
	ix := indexEvents(events)
	args := s.appendHead(make([]any, 0, appendArgs+len(events)), id, expectSeq, events)
	args = append(args, ix.args()...)
	args = append(args, evs...)
	if s.split {
		if err := s.hint(ctx, id, ix); err != nil {
			return fmt.Errorf("append %s: text index: %w", id, err)
		}
	}
	res, err := change(ctx, func(ctx context.Context) (string, error) {
		return s.runAppend(ctx, id, appendScript, args) // with min_replicas, WAIT too (replicas.go)
	}, func(ctx context.Context) (string, bool, error) {
		res, found, err := s.probe(ctx, id, "", expectSeq, evs)
		if found {
			res, err = replyOK, s.replicated(ctx, id) // the first try's: it wrote, the index follows
		}
		return res, found, err
	})
	if err != nil {
		return fmt.Errorf("append %s: %w", id, err)
	}
	switch res {
	case replyOK:
	case replyDone:
		return nil // a retry: nothing written, nothing to index
	case replyNotFound:
		return fmt.Errorf("append %s: %w", id, cairn.ErrNotFound)
	case replyConflict:
		return fmt.Errorf("append %s at seq %d: %w", id, expectSeq, cairn.ErrConflict)
	default:
		if strings.HasPrefix(res, replyDamaged) {
			return fmt.Errorf("append %s: %w", id, s.unheld(id, expectSeq, res))
		}
		return fmt.Errorf("append %s: unexpected script reply %q", id, res)
	}
	return s.appended(ctx, id, ix)
}

// appendHead appends to args the arguments that the append scripts open
// with, for events appended to session id at expectSeq now: the times, the
// seqs, the events' summary and the index score.
func (s *Store) appendHead(args []any, id string, expectSeq int64, events []cairn.Event) []any {
	now := s.now()
	d := driver.Summarize(events)
	hasMsg := "0"
	if d.HasMessage {
		hasMsg = "1"
	}
	return append(args,
		nanos(now), nanos(s.opts.ExpiresAt(now)), s.ttl,
		expectSeq, expectSeq+int64(len(events)), d.Steps, string(d.Status),
		hasMsg, d.FirstMessage, formatTime(now), id, score(now))
}

// appended finishes an append's script in a split store: it counts the
// events' tokens in the text index and raises the session's score in the
// index.
func (s *Store) appended(ctx context.Context, id string, ix textIndex) error {
	if !s.split {
		return nil
	}
	if err := s.tally(ctx, id, ix); err != nil {
		return fmt.Errorf("append %s: text index: %w", id, err)
	}
	if err := s.reindex(ctx, id); err != nil {
		return fmt.Errorf("append %s: index: %w", id, err)
	}
	return nil
}

// replyDamaged starts the append scripts' answer for a session whose
// events list does not hold its last seq's number of events (unheld).
const replyDamaged = "DAMAGED "

// unheld is the damage of session id, at last seq last, whose append
// script answered res ("DAMAGED n").
func (s *Store) unheld(id string, last int64, res string) *driver.DamagedError {
	return &driver.DamagedError{Session: id, Where: s.eventsKey(id), Msg: fmt.Sprintf(
		"the list holds %s events, and the session's last seq is %d: events were removed or added by other hands; nothing is appended to it",
		strings.TrimPrefix(res, replyDamaged), last)}
}

// encodeEvents returns the events' envelopes, for the script's arguments:
// each as driver.AppendEnvelope writes it, all cut from one buffer.
func encodeEvents(events []cairn.Event) ([]any, error) {
	n := 0
	for _, e := range events {
		n += len(e.Data) + len(e.Kind) + len(e.Run) + 112
	}
	buf := make([]byte, 0, n)
	evs := make([]any, len(events))
	for i, e := range events {
		start := len(buf)
		var err error
		if buf, err = driver.AppendEnvelope(buf, e); err != nil {
			return nil, err
		}
		evs[i] = buf[start:len(buf):len(buf)]
	}
	return evs, nil
}
