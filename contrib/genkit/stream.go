package cairngenkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/firebase/genkit/go/core"
	"github.com/firebase/genkit/go/core/x/streaming"
)

// ChunkType is the custom event type of a stream's chunk.
const ChunkType = "genkit.stream.chunk"

// DefaultPoll is how often a subscriber reads the store for a stream's new
// events when StreamOptions.Poll is 0.
const DefaultPoll = 100 * time.Millisecond

// streamBuffer is the buffer of a subscriber's channel.
const streamBuffer = 64

// StreamOptions configure NewStreamManager.
type StreamOptions struct {
	// Labels are given to the sessions Open creates.
	Labels map[string]string
	// Poll is how often a subscriber reads the store for new events of a
	// stream written by another process; 0 means DefaultPoll. A writer
	// of the same StreamManager wakes its subscribers at once.
	Poll time.Duration
	// Idle makes a subscriber give up on an open stream that has
	// recorded nothing for this long (its writer died, or hangs), with a
	// DEADLINE_EXCEEDED error event; the time is the last event's, so a
	// reader that comes back to an abandoned stream learns it at once.
	// 0 means wait as long as the subscriber's context allows.
	Idle time.Duration
}

// StreamManager is Genkit's streaming.StreamManager on a cairn store: each
// durable stream is a cairn session of the stream's ID, whose run.started
// Open appends, whose chunks are custom events of type ChunkType (the
// chunk's JSON as payload) appended one by one as Write is called, and
// whose end is a run.finished: completed with the output's JSON as its
// output (Done), or failed with the error's Genkit status and message
// (Error). Subscribers read those events from the store, so a subscriber in
// another process, or one that comes back after a restart, gets every
// chunk and the result. Pass it to genkit.Handler with
// genkit.WithStreamManager.
type StreamManager struct {
	cs   cairn.Store
	opts StreamOptions

	mu   sync.Mutex
	wake chan struct{} // closed and replaced at every append of this manager
}

var _ streaming.StreamManager = (*StreamManager)(nil)

// NewStreamManager returns a StreamManager that keeps its streams in cs.
// Closing cs is the caller's business.
func NewStreamManager(cs cairn.Store, opts StreamOptions) *StreamManager {
	if opts.Poll <= 0 {
		opts.Poll = DefaultPoll
	}
	return &StreamManager{cs: cs, opts: opts, wake: make(chan struct{})}
}

// Open creates stream id and returns its writer. It returns a Genkit
// ALREADY_EXISTS error when the store holds a session of that ID, and an
// error wrapping cairn.ErrInvalidID for an ID cairn refuses.
func (m *StreamManager) Open(ctx context.Context, id string) (streaming.StreamInput, error) {
	if err := cairn.ValidateID(id); err != nil {
		return nil, fmt.Errorf("open stream: %w", err)
	}
	err := m.cs.Create(ctx, cairn.SessionMeta{ID: id, Labels: m.opts.Labels})
	if errors.Is(err, cairn.ErrExists) {
		return nil, core.NewPublicError(core.ALREADY_EXISTS, "stream already exists", map[string]any{"stream": id})
	}
	if err != nil {
		return nil, fmt.Errorf("open stream %s: %w", id, err)
	}
	run := cairn.NewID()
	w := &streamInput{m: m, id: id, run: run}
	if err := w.append(ctx, cairn.MustEvent(cairn.KindRunStarted, run, cairn.RunStarted{RunID: run, Agent: "genkit stream"})); err != nil {
		return nil, fmt.Errorf("open stream %s: %w", id, err)
	}
	return w, nil
}

// Subscribe returns every event of stream id, from its first chunk: the
// chunks recorded so far, then the ones written later, and last its
// result (StreamEventDone or StreamEventError), after which the channel is
// closed. The channel is also closed when ctx is done or unsubscribe is
// called. It returns a Genkit NOT_FOUND error when the store holds no such
// stream. Events are never dropped: the subscriber reads them from the
// store at its own pace.
func (m *StreamManager) Subscribe(ctx context.Context, id string) (<-chan streaming.StreamEvent, func(), error) {
	return m.SubscribeFrom(ctx, id, 0)
}

// SubscribeFrom is Subscribe for a reader that has already received the
// first n chunks of the stream (from an earlier subscription, before a
// restart): it skips them and goes on from chunk n+1.
func (m *StreamManager) SubscribeFrom(ctx context.Context, id string, n int) (<-chan streaming.StreamEvent, func(), error) {
	if err := cairn.ValidateID(id); err != nil {
		return nil, nil, fmt.Errorf("subscribe to stream: %w", err)
	}
	if n < 0 {
		return nil, nil, fmt.Errorf("subscribe to stream %s: %d chunks to skip; want 0 or more", id, n)
	}
	if _, err := m.cs.Stat(ctx, id); errors.Is(err, cairn.ErrNotFound) {
		return nil, nil, core.NewPublicError(core.NOT_FOUND, "stream not found", map[string]any{"stream": id})
	} else if err != nil {
		return nil, nil, fmt.Errorf("subscribe to stream %s: %w", id, err)
	}
	ch := make(chan streaming.StreamEvent, streamBuffer)
	stop := make(chan struct{})
	done := make(chan struct{})
	r := &reader{m: m, id: id, skip: n, ch: ch, stop: stop}
	go func() {
		defer close(done)
		defer close(ch)
		r.run(ctx)
	}()
	var once sync.Once
	unsubscribe := func() {
		once.Do(func() { close(stop) })
		<-done
	}
	return ch, unsubscribe, nil
}

// signal wakes the subscribers of this manager.
func (m *StreamManager) signal() {
	m.mu.Lock()
	close(m.wake)
	m.wake = make(chan struct{})
	m.mu.Unlock()
}

func (m *StreamManager) waker() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.wake
}

// streamInput writes one stream.
type streamInput struct {
	m   *StreamManager
	id  string
	run string

	mu      sync.Mutex
	seq     int64
	closed  bool
	pending *cairn.Event // the last append, when its outcome is unknown
}

// append appends e after the writer's last event. An append whose outcome
// is unknown (an outage, a lost reply) is sent again, the same, before
// the next one: the store takes an append it already holds as done, so
// the writer goes on from the right seq either way. With w.mu held, or
// before w is shared.
func (w *streamInput) append(ctx context.Context, e cairn.Event) error {
	if p := w.pending; p != nil {
		if err := w.m.cs.Append(ctx, w.id, w.seq, *p); err != nil {
			return fmt.Errorf("send again the append whose outcome was unknown: %w", err)
		}
		w.pending = nil
		w.seq++
		w.m.signal()
		if p.Kind == cairn.KindRunFinished {
			return nil // the stream's end, asked for again: it is recorded now
		}
	}
	e.Seq = w.seq + 1
	err := w.m.cs.Append(ctx, w.id, w.seq, e)
	switch {
	case errors.Is(err, cairn.ErrConflict):
		return fmt.Errorf("another writer appended to stream %s: %w", w.id, err)
	case err != nil && !errors.Is(err, cairn.ErrNotFound) && !errors.Is(err, cairn.ErrInvalidEvent) && !errors.Is(err, cairn.ErrTooLarge):
		w.pending = &e
		return err
	case err != nil:
		return err
	}
	w.seq++
	w.m.signal()
	return nil
}

// Write appends chunk as one event. It returns a FAILED_PRECONDITION
// error after Done, Error or Close, and an error when chunk is not JSON.
func (w *streamInput) Write(ctx context.Context, chunk json.RawMessage) error {
	if !json.Valid(chunk) {
		return fmt.Errorf("write stream %s: the chunk is not JSON: %.40q", w.id, chunk)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return core.NewPublicError(core.FAILED_PRECONDITION, "stream writer is closed", nil)
	}
	e, err := cairn.NewEvent(cairn.KindCustom, w.run, cairn.Custom{Type: ChunkType, Payload: chunk})
	if err != nil {
		return fmt.Errorf("write stream %s: %w", w.id, err)
	}
	if err := w.append(ctx, e); err != nil {
		return fmt.Errorf("write stream %s: %w", w.id, err)
	}
	return nil
}

// Done ends the stream with output. When it returns an error of unknown
// outcome (an outage), the writer stays open: calling Done again records
// the end once.
func (w *streamInput) Done(ctx context.Context, output json.RawMessage) error {
	if len(output) > 0 && !json.Valid(output) {
		return fmt.Errorf("finish stream %s: the output is not JSON: %.40q", w.id, output)
	}
	return w.finish(ctx, cairn.RunFinished{Status: cairn.StatusCompleted, Output: string(output)})
}

// Error ends the stream with err, recorded as its Genkit status (UNKNOWN
// for an error that has none) and message.
func (w *streamInput) Error(ctx context.Context, err error) error {
	info := &cairn.ErrorInfo{Code: string(core.UNKNOWN), Message: "unknown error"}
	if err != nil {
		info.Message = err.Error()
		var uf *core.UserFacingError
		var ge *core.GenkitError
		switch {
		case errors.As(err, &uf):
			info.Code, info.Message = string(uf.Status), uf.Message
		case errors.As(err, &ge):
			info.Code, info.Message = string(ge.Status), ge.Message
		}
	}
	return w.finish(ctx, cairn.RunFinished{Status: cairn.StatusFailed, Error: info})
}

func (w *streamInput) finish(ctx context.Context, f cairn.RunFinished) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return core.NewPublicError(core.FAILED_PRECONDITION, "stream writer is closed", nil)
	}
	err := w.append(ctx, cairn.MustEvent(cairn.KindRunFinished, w.run, f))
	if err == nil || w.pending == nil {
		// Ended, or refused for good. An end whose outcome is unknown
		// leaves the writer open: Done or Error again sends it again.
		w.closed = true
	}
	if err != nil {
		return fmt.Errorf("finish stream %s: %w", w.id, err)
	}
	return nil
}

// Close stops the writer without ending the stream: its subscribers wait
// for an end that only StreamOptions.Idle or their context bounds.
func (w *streamInput) Close() error {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	return nil
}

// reader feeds one subscription from the store.
type reader struct {
	m    *StreamManager
	id   string
	skip int // chunks not to send
	ch   chan<- streaming.StreamEvent
	stop <-chan struct{}

	next   int64     // the seq to read next
	chunks int       // chunks met
	last   time.Time // the time of the last event met
}

// run sends the stream's events until its end, ctx or stop.
func (r *reader) run(ctx context.Context) {
	r.next = 1
	tick := time.NewTicker(r.m.opts.Poll)
	defer tick.Stop()
	for {
		wake := r.m.waker()
		end, err := r.read(ctx)
		if err != nil {
			if ctx.Err() == nil {
				r.send(ctx, streaming.StreamEvent{Type: streaming.StreamEventError, Err: err})
			}
			return
		}
		if end {
			return
		}
		if idle := r.m.opts.Idle; idle > 0 && !r.last.IsZero() && time.Since(r.last) > idle {
			r.send(ctx, streaming.StreamEvent{Type: streaming.StreamEventError, Err: core.NewPublicError(core.DEADLINE_EXCEEDED,
				fmt.Sprintf("stream %s has recorded nothing since %s", r.id, r.last.Format(time.RFC3339)), nil)})
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-r.stop:
			return
		case <-wake:
		case <-tick.C:
		}
	}
}

// read sends the events recorded after the last one read. It reports
// whether the stream ended (or the subscription stopped).
func (r *reader) read(ctx context.Context) (bool, error) {
	rec, err := r.m.cs.Load(ctx, r.id, r.next)
	if errors.Is(err, cairn.ErrNotFound) {
		return false, core.NewPublicError(core.NOT_FOUND, "stream was deleted", map[string]any{"stream": r.id})
	}
	if err != nil {
		return false, fmt.Errorf("read stream %s: %w", r.id, err)
	}
	if r.last.IsZero() {
		r.last = rec.Info.CreatedAt
	}
	for _, e := range rec.Events {
		if e.Seq < r.next {
			continue
		}
		r.next, r.last = e.Seq+1, e.At
		ev, ok, err := r.event(e)
		if err != nil {
			return false, err
		}
		if !ok {
			continue
		}
		if !r.send(ctx, ev) {
			return true, nil
		}
		if ev.Type != streaming.StreamEventChunk {
			return true, nil
		}
	}
	return false, nil
}

// event turns a stored event into the stream event to send, if any.
func (r *reader) event(e cairn.Event) (streaming.StreamEvent, bool, error) {
	switch e.Kind {
	case cairn.KindCustom:
		v, err := e.Decode()
		if err != nil {
			return streaming.StreamEvent{}, false, fmt.Errorf("read stream %s, seq %d: %w", r.id, e.Seq, err)
		}
		c := v.(*cairn.Custom)
		if c.Type != ChunkType {
			return streaming.StreamEvent{}, false, nil
		}
		r.chunks++
		if r.chunks <= r.skip {
			return streaming.StreamEvent{}, false, nil
		}
		return streaming.StreamEvent{Type: streaming.StreamEventChunk, Chunk: c.Payload}, true, nil
	case cairn.KindRunFinished:
		v, err := e.Decode()
		if err != nil {
			return streaming.StreamEvent{}, false, fmt.Errorf("read stream %s, seq %d: %w", r.id, e.Seq, err)
		}
		f := v.(*cairn.RunFinished)
		if f.Status == cairn.StatusCompleted {
			var out json.RawMessage
			if f.Output != "" {
				out = json.RawMessage(f.Output)
			}
			return streaming.StreamEvent{Type: streaming.StreamEventDone, Output: out}, true, nil
		}
		info := cairn.ErrorInfo{Code: string(core.UNKNOWN), Message: string(f.Status)}
		if f.Error != nil {
			info = *f.Error
		}
		return streaming.StreamEvent{Type: streaming.StreamEventError, Err: core.NewPublicError(core.StatusName(info.Code), info.Message, nil)}, true, nil
	}
	return streaming.StreamEvent{}, false, nil
}

// send hands ev to the subscriber; false when the subscription stopped
// first.
func (r *reader) send(ctx context.Context, ev streaming.StreamEvent) bool {
	select {
	case r.ch <- ev:
		return true
	case <-ctx.Done():
		return false
	case <-r.stop:
		return false
	}
}
