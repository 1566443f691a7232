package redis

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/cairnhq/cairn"
)

// Create implements cairn.Store. One script checks that no live session
// holds the ID, clears what an expired one left behind, writes the meta,
// sets its TTL and (unless the store is split) adds it to the index and to
// the claim set.
func (s *Store) Create(ctx context.Context, meta cairn.SessionMeta) (err error) {
	defer unavailable(&err)
	if err := s.check(); err != nil {
		return err
	}
	if err := cairn.ValidateID(meta.ID); err != nil {
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
		if err := s.updateIndex(ctx, meta.ID, now, true); err != nil {
			return fmt.Errorf("create %s: index: %w", meta.ID, err)
		}
	}
	return nil
}

// Append implements cairn.Store. The whole append is one EVALSHA: the
// script checks that the session is live and at expectSeq, pushes the
// events, applies their summary to the meta and refreshes the TTL, so its
// cost does not depend on the length of the history. A split store then
// raises the session's score in the index.
func (s *Store) Append(ctx context.Context, id string, expectSeq int64, events ...cairn.Event) (err error) {
	defer unavailable(&err)
	if err := s.check(); err != nil {
		return err
	}
	if err := cairn.CheckAppend(s.opts.Limits, id, expectSeq, events); err != nil {
		return err
	}
	now := s.now()
	d := cairn.Summarize(events)
	hasMsg := "0"
	if d.HasMessage {
		hasMsg = "1"
	}
	args := make([]any, 0, appendArgs+len(events))
	evs := make([]any, 0, len(events))
	args = append(args,
		nanos(now), nanos(s.opts.ExpiresAt(now)), s.ttl,
		expectSeq, expectSeq+int64(len(events)), d.Steps, string(d.Status),
		hasMsg, d.FirstMessage, formatTime(now), id, score(now))
	for _, e := range events {
		b, err := encodeEvent(e)
		if err != nil {
			return fmt.Errorf("append %s: seq %d: %w", id, e.Seq, err)
		}
		evs = append(evs, b)
	}
	args = append(args, evs...)
	res, err := change(ctx, func(ctx context.Context) (string, error) {
		return appendScript.Run(ctx, s.client, s.scriptKeys(id), args...).Text()
	}, func(ctx context.Context) (string, bool, error) {
		res, found, err := s.probe(ctx, id, "", expectSeq, evs)
		if found {
			res = replyOK // the first try's: it wrote, the index follows
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
		return fmt.Errorf("append %s: unexpected script reply %q", id, res)
	}
	if s.split {
		if err := s.updateIndex(ctx, id, now, true); err != nil {
			return fmt.Errorf("append %s: index: %w", id, err)
		}
	}
	return nil
}

// encodeEvent writes an event's JSON envelope with its data exactly as
// given, so a reload returns the same bytes. The data was validated by
// cairn.CheckAppend, so it is one well-formed JSON object.
func encodeEvent(e cairn.Event) ([]byte, error) {
	at, err := e.At.MarshalJSON()
	if err != nil {
		return nil, err
	}
	kind, err := json.Marshal(e.Kind)
	if err != nil {
		return nil, err
	}
	run, err := json.Marshal(e.Run)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Grow(len(e.Data) + len(kind) + len(run) + 80)
	b.WriteString(`{"v":`)
	b.WriteString(strconv.Itoa(e.V))
	b.WriteString(`,"seq":`)
	b.WriteString(strconv.FormatInt(e.Seq, 10))
	b.WriteString(`,"at":`)
	b.Write(at)
	b.WriteString(`,"kind":`)
	b.Write(kind)
	b.WriteString(`,"run":`)
	b.Write(run)
	b.WriteString(`,"data":`)
	b.Write(e.Data)
	b.WriteByte('}')
	return b.Bytes(), nil
}
