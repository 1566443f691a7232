package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/cairnhq/cairn"
)

// checkpointEvery is the distance between two kept states of a session.
const checkpointEvery = 1000

// maxCachedEvents is the longest history the cache keeps.
const maxCachedEvents = 200_000

// loaded is a session as loadAll returns it: the store's info, every
// event (never changed in place) and the states kept along them.
type loaded struct {
	Info   cairn.SessionInfo
	Events []cairn.Event
	ck     *checkpoints
}

// checkpoints are states of one session after some seqs. Events are only
// ever appended, so they stay true as the session grows.
type checkpoints struct {
	mu      sync.Mutex
	states  map[int64]*cairn.State // after each multiple of checkpointEvery
	last    *cairn.State           // after the last seq seen
	lastSeq int64
}

// eventCache keeps the events of the sessions read last, and states along
// them (checkpoints).
//
// The pages of a long session read it again and again: the timeline's
// window, the state after the slider's seq, the state now. With the cache,
// a page reads from the store only the events appended since, and folds at
// most checkpointEvery events to show any state.
type eventCache struct {
	mu      sync.Mutex
	max     int
	entries map[string]*cacheEntry
	tick    int64
}

type cacheEntry struct {
	created time.Time
	events  []cairn.Event
	ck      *checkpoints
	used    int64
}

func newEventCache(n int) *eventCache {
	return &eventCache{max: n, entries: map[string]*cacheEntry{}}
}

func (c *eventCache) get(id string) *cacheEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[id]
	if e != nil {
		c.tick++
		e.used = c.tick
	}
	return e
}

func (c *eventCache) put(id string, e *cacheEntry) {
	if len(e.events) > maxCachedEvents {
		c.drop(id)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[id]; !ok && len(c.entries) >= c.max {
		var oldest string
		for k, v := range c.entries {
			if oldest == "" || v.used < c.entries[oldest].used {
				oldest = k
			}
		}
		delete(c.entries, oldest)
	}
	c.tick++
	e.used = c.tick
	c.entries[id] = e
}

func (c *eventCache) drop(id string) {
	c.mu.Lock()
	delete(c.entries, id)
	c.mu.Unlock()
}

// loadPath loads the session the request's path names ({id}), whole.
func (s *Server) loadPath(r *http.Request) (string, *loaded, error) {
	id, err := pathID(r)
	if err != nil {
		return "", nil, err
	}
	rec, err := s.loadAll(r.Context(), id)
	return id, rec, err
}

// loadAll returns a session's info and every event, reading from the
// store only the events the cache lacks. A session deleted and made again
// under the same ID (another creation time, or fewer events) is read anew.
func (s *Server) loadAll(ctx context.Context, id string) (*loaded, error) {
	c := s.cache.get(id)
	from := int64(1)
	if c != nil {
		from = int64(len(c.events)) + 1
	}
	rec, err := s.store.Load(ctx, id, from)
	if err != nil {
		if errors.Is(err, cairn.ErrNotFound) {
			s.cache.drop(id)
		}
		return nil, fmt.Errorf("load %s: %w", id, err)
	}
	e := &cacheEntry{created: rec.Info.CreatedAt, events: rec.Events}
	switch {
	case c == nil:
		e.ck = &checkpoints{states: map[int64]*cairn.State{}}
	case c.created.Equal(rec.Info.CreatedAt) && rec.Info.LastSeq == int64(len(c.events)+len(rec.Events)) &&
		(len(rec.Events) == 0 || rec.Events[0].Seq == from):
		e.events, e.ck = append(c.events[:len(c.events):len(c.events)], rec.Events...), c.ck
	default: // not the session the cache holds
		if rec, err = s.store.Load(ctx, id, 0); err != nil {
			return nil, fmt.Errorf("load %s: %w", id, err)
		}
		e.events, e.ck = rec.Events, &checkpoints{states: map[int64]*cairn.State{}}
	}
	if int64(len(e.events)) == rec.Info.LastSeq {
		s.cache.put(id, e)
	} else {
		s.cache.drop(id)
	}
	return &loaded{Info: rec.Info, Events: e.events, ck: e.ck}, nil
}

// stateAt returns the state after seq at (0 to the last): a kept state
// folded on with at most checkpointEvery events. The caller may change
// the state it gets.
func (l *loaded) stateAt(at int64) (*cairn.State, error) {
	ck := l.ck
	ck.mu.Lock()
	defer ck.mu.Unlock()
	if ck.last != nil && ck.lastSeq == at {
		return ck.last.Clone(), nil
	}
	from := at - at%checkpointEvery
	for from > 0 && ck.states[from] == nil {
		from -= checkpointEvery
	}
	if ck.last != nil && ck.lastSeq <= at && ck.lastSeq > from {
		from = ck.lastSeq
	}
	st := cairn.NewState()
	switch {
	case from > 0 && from == ck.lastSeq && ck.last != nil:
		st = ck.last.Clone()
	case from > 0:
		st = ck.states[from].Clone()
	}
	for _, e := range l.Events[from:at] {
		if err := st.Apply(e); err != nil {
			return nil, err
		}
		if e.Seq%checkpointEvery == 0 && ck.states[e.Seq] == nil {
			ck.states[e.Seq] = st.Clone()
		}
	}
	if at == int64(len(l.Events)) && at >= ck.lastSeq {
		ck.last, ck.lastSeq = st.Clone(), at
	}
	return st, nil
}
