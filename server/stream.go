package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/cairnhq/cairn"
)

// heartbeatEvery is how many idle polls pass between two comments that
// keep proxies from closing an idle stream.
const heartbeatEvery = 30

// apiStream serves GET /api/sessions/{id}/stream: it sends a session's
// events as server-sent events, each event's JSON envelope as the data,
// its seq as the id. A client that reconnects sends the last id it saw as
// Last-Event-ID (the browser's EventSource does) and the stream goes on
// after it. Stores do not announce appends, so a stream asks the store for
// new events every Config.PollInterval; an append made through this server
// wakes the streams of its session at once (hub). When the session is
// deleted or expires the stream sends an event "gone" and ends.
func (s *Server) apiStream(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	after, err := queryInt(r.URL.Query(), "after", 0, 0, 1<<62)
	if err != nil {
		return err
	}
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return badRequest("Last-Event-ID", "Last-Event-ID %q is not a seq", v)
		}
		after = n
	}
	ctx := r.Context()
	rec, err := s.store.Load(ctx, id, after+1)
	if err != nil {
		return fmt.Errorf("load %s: %w", id, err)
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return nil
	}
	rc := http.NewResponseController(w)
	if _, err := fmt.Fprint(w, "retry: 2000\n\n"); err != nil {
		return nil
	}
	sub, cancel := s.hub.subscribe(id)
	defer cancel()
	tick := time.NewTicker(s.cfg.PollInterval)
	defer tick.Stop()
	events, idle := rec.Events, 0
	for {
		for _, e := range events {
			if e.Seq <= after {
				continue
			}
			data, err := json.Marshal(e)
			if err != nil {
				return nil
			}
			if _, err := fmt.Fprintf(w, "id: %d\ndata: %s\n\n", e.Seq, data); err != nil {
				return nil // the client went away
			}
			after, idle = e.Seq, 0
		}
		if idle > 0 && idle%heartbeatEvery == 0 {
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return nil
			}
		}
		if err := rc.Flush(); err != nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.closing:
			return nil
		case <-sub:
		case <-tick.C:
		}
		idle++
		rec, err := s.store.Load(ctx, id, after+1)
		switch {
		case errors.Is(err, cairn.ErrNotFound):
			fmt.Fprintf(w, "event: gone\ndata: {\"id\":%q}\n\n", id)
			_ = rc.Flush()
			return nil
		case err != nil && ctx.Err() != nil:
			return nil
		case err != nil:
			data, _ := json.Marshal(map[string]*apiError{"error": toAPIError(err)})
			fmt.Fprintf(w, "event: error\ndata: %s\n\n", data)
			if !cairn.IsUnavailable(err) {
				_ = rc.Flush()
				return nil
			}
			events = nil
		default:
			events = rec.Events
		}
	}
}

// hub wakes the streams of a session when this server appends to it.
type hub struct {
	mu   sync.Mutex
	subs map[string]map[chan struct{}]bool
}

func newHub() *hub { return &hub{subs: map[string]map[chan struct{}]bool{}} }

func (h *hub) subscribe(id string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	if h.subs[id] == nil {
		h.subs[id] = map[chan struct{}]bool{}
	}
	h.subs[id][ch] = true
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		delete(h.subs[id], ch)
		if len(h.subs[id]) == 0 {
			delete(h.subs, id)
		}
		h.mu.Unlock()
	}
}

func (h *hub) notify(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs[id] {
		select {
		case ch <- struct{}{}:
		default: // already woken
		}
	}
}

// runs are the runs this server started, one per session at a time.
type runs struct {
	ctx    context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	active map[string]bool
	wg     sync.WaitGroup
}

func newRuns() *runs {
	ctx, cancel := context.WithCancel(context.Background())
	return &runs{ctx: ctx, cancel: cancel, active: map[string]bool{}}
}

func (r *runs) busy(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.active[id]
}

// start runs f for session id in the background, unless a run of id is
// under way or the server is closing.
func (r *runs) start(id string, f func(context.Context)) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.active[id] || r.ctx.Err() != nil {
		return false
	}
	r.active[id] = true
	r.wg.Go(func() {
		defer func() {
			r.mu.Lock()
			delete(r.active, id)
			r.mu.Unlock()
		}()
		f(r.ctx)
	})
	return true
}

// stop interrupts every run and waits for them to end, up to ctx's end.
func (r *runs) stop(ctx context.Context) error {
	r.cancel()
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("server: runs still under way: %w", ctx.Err())
	}
}
