package steps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/telemetry"
	"github.com/cairnhq/cairn/store/crypt"
)

// writeTimeout bounds one write to the store. Writes do not use the
// caller's context: a cancellation must not keep a step that ran from
// being recorded.
const writeTimeout = 5 * time.Second

// Options configure Open.
type Options struct {
	// Name is recorded as the agent's name in each run's run.started, as
	// `cairn sessions show` and the inspector show it. Empty is allowed.
	Name string
	// Labels are given to the session when Open creates it.
	Labels map[string]string

	// Claim takes the session's lease (cairn.Leaser) for this process:
	// another process that opens the session with Claim is refused with a
	// *cairn.LeaseHeldError while the lease is live, every append is
	// fenced with it (once another holder has the session, no write of
	// this one gets in: cairn.ErrLeaseLost), and it is renewed in the
	// background until Close. A step is not run once the lease could not
	// be renewed in time (ErrLeaseExpired). A store without leases is
	// refused. Without Claim, the store's seq check alone keeps two
	// processes from forking the history.
	Claim bool
	// Holder names this process in the lease; empty: "host:pid".
	Holder string
	// LeaseTTL is the lease's duration; 0 means DefaultLeaseTTL. A
	// process that dies holding the lease keeps the session from other
	// claimants for up to this long (Force takes it at once).
	LeaseTTL time.Duration
	// Force takes the lease over even while another holder's is live
	// (cairn.Leaser.Takeover); that holder's writes are refused from then on.
	Force bool

	// Logger gets the warnings (a lease renewal that failed); nil means
	// slog.Default().
	Logger *slog.Logger

	// TracerProvider gets a span per model call that runs (chat), per tool
	// call that runs (execute_tool), per step function that runs
	// (cairn.step {name}) and per store append (cairn.append), in the
	// OpenTelemetry GenAI semantic conventions (docs/OBSERVABILITY.md);
	// steps that return their recorded results make none. nil means
	// otel's no-op provider: off.
	TracerProvider trace.TracerProvider
	// MeterProvider gets the GenAI client metrics of the model calls; nil
	// records none.
	MeterProvider metric.MeterProvider
	// CaptureContent records message content (model output, tool
	// results) in the spans; also turned on by
	// OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true.
	CaptureContent bool
}

// Session is one session run by a loop of durable steps: the events the
// store holds, the position the loop has reached in its run, and the
// state folded up to that position. Its methods are safe for concurrent
// use, but steps run one at a time (ErrBusy).
type Session struct {
	store cairn.Store
	id    string
	opts  Options
	log   *slog.Logger
	lease *holder // nil without Claim
	tel   *telemetry.T

	mu     sync.Mutex // guards what follows
	closed bool
	mem    *cairn.Memory // every event known to be stored
	state  *cairn.State  // folded through pos
	pos    int64         // the last event the loop has passed: the cursor
	step   int           // the steps of the run the loop has passed
	pend   change        // variables set outside steps, not yet recorded
	busy   *scope        // the step whose function runs, nil when none

	// open is the not-idempotent step the loop passed last, when its
	// result is not recorded: Resolve records it.
	open *started

	// unsure is set when a write's outcome is unknown (an outage) or the
	// session changed under it (a conflict): the next call reads what the
	// store holds first. uncertain is the last write whose outcome was
	// unknown; found stored, its starts are steps known not to have run.
	unsure    bool
	uncertain []cairn.Event
	notRun    map[int64]bool // seqs of starts whose steps this process never ran
}

// started is a recorded start whose result the loop has not met.
type started struct {
	name   string
	callID string // a tool step's call
	step   int
	seq    int64
}

// Open opens the session id of store, creating it when the store does not
// hold it, and places the loop at the start of the session's last run: the
// steps that run recorded return their recorded results, in order, and the
// loop goes on from there. A session whose last run finished replays that
// run to its end (Finish returns nil again); Begin starts the next one.
//
// It returns an error wrapping cairn.ErrInvalidID for a bad ID,
// cairn.ErrSealed for an encrypted session read without its key (open the
// store through store/crypt), and, with Options.Claim, a
// *cairn.LeaseHeldError while another process holds the session.
func Open(ctx context.Context, store cairn.Store, id string, opts Options) (*Session, error) {
	if store == nil {
		return nil, fmt.Errorf("open session %s: no store", id)
	}
	if err := cairn.ValidateID(id); err != nil {
		return nil, fmt.Errorf("open session: %w", err)
	}
	if opts.Force && !opts.Claim {
		return nil, fmt.Errorf("open session %s: Options.Force takes a lease over, and needs Options.Claim", id)
	}
	s := &Session{store: store, id: id, opts: opts, log: opts.Logger, notRun: map[int64]bool{},
		tel: telemetry.New(opts.TracerProvider, opts.MeterProvider, opts.CaptureContent)}
	if s.log == nil {
		s.log = slog.Default()
	}
	if err := s.create(ctx); err != nil {
		return nil, fmt.Errorf("open session %s: %w", id, err)
	}
	if opts.Claim {
		h, err := claim(ctx, store, id, opts, s.log)
		if err != nil {
			return nil, fmt.Errorf("open session %s: %w", id, err)
		}
		s.lease = h
	}
	if err := s.load(ctx); err != nil {
		if s.lease != nil {
			s.lease.release()
		}
		return nil, fmt.Errorf("open session %s: %w", id, err)
	}
	return s, nil
}

// create makes the session when the store lacks it.
func (s *Session) create(ctx context.Context) error {
	_, err := s.store.Stat(ctx, s.id)
	if !errors.Is(err, cairn.ErrNotFound) {
		return err
	}
	err = s.store.Create(ctx, cairn.SessionMeta{ID: s.id, Labels: s.opts.Labels})
	if errors.Is(err, cairn.ErrExists) {
		return nil // another process created it meanwhile
	}
	return err
}

// load reads the session and places the cursor at the start of its last
// run: the state is folded through the events before its run.started.
func (s *Session) load(ctx context.Context) error {
	r, err := cairn.Restore(ctx, s.store, s.id)
	if err != nil {
		return err
	}
	if r.Ignored != nil {
		s.log.Warn("the session's snapshot was not used; read every event", "session", s.id, "why", r.Ignored)
	}
	// An encrypted session read without its key holds ciphertext: never
	// hand it to the loop nor append plaintext after it.
	if err := crypt.CheckUnsealed(s.id, r.Events); err != nil {
		return err
	}
	base, events := r.BaseState, r.Events
	start := lastRunStart(events)
	if start < 0 && base != nil && base.Run != "" {
		// The run began before the snapshot: the replay needs its
		// events, so read them all.
		rec, err := s.store.Load(ctx, s.id, 0)
		if err != nil {
			return err
		}
		if err := crypt.CheckUnsealed(s.id, rec.Events); err != nil {
			return err
		}
		base, events = nil, rec.Events
		start = lastRunStart(events)
	}
	mem, err := (&cairn.Restored{Record: cairn.Record{Info: r.Info, Events: events}, BaseState: base}).Memory()
	if err != nil {
		return err
	}
	s.mem = mem
	if start < 0 {
		// No run: the loop begins at the end of the history.
		s.state, s.pos = r.State, r.State.LastSeq
		return nil
	}
	st := cairn.NewState()
	if base != nil {
		st = base.Clone()
	}
	for _, e := range events[:start] {
		if err := st.Apply(e); err != nil {
			return err
		}
	}
	s.state, s.pos = st, st.LastSeq
	return nil
}

// lastRunStart returns the index of the last run.started of events, or -1.
func lastRunStart(events []cairn.Event) int {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Kind == cairn.KindRunStarted {
			return i
		}
	}
	return -1
}

// ID returns the session's ID.
func (s *Session) ID() string { return s.id }

// State returns a copy of the session's state at the loop's position:
// folded through the steps the loop has passed (recorded or replayed), with
// the variables it set since. While the loop replays, it is the state the
// loop saw at this point of the first run, not the state at the end of the
// history.
func (s *Session) State() *cairn.State {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.state.Clone()
	s.pend.applyTo(st.Variables)
	if s.busy != nil {
		s.busy.change.applyTo(st.Variables)
	}
	return st
}

// Var decodes the session variable key, as the loop's position sees it
// (see State), into v. It reports whether the variable is set.
func (s *Session) Var(key string, v any) (bool, error) {
	s.mu.Lock()
	raw, ok := s.varRaw(key)
	s.mu.Unlock()
	if !ok {
		return false, nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return true, fmt.Errorf("session %s: variable %q: %w", s.id, key, err)
	}
	return true, nil
}

func (s *Session) varRaw(key string) (json.RawMessage, bool) {
	for _, c := range []*change{s.busyChange(), &s.pend} {
		if c == nil {
			continue
		}
		if raw, ok := c.set[key]; ok {
			return raw, true
		}
		if slices.Contains(c.deleted, key) {
			return nil, false
		}
	}
	raw, ok := s.state.Variables[key]
	return raw, ok
}

func (s *Session) busyChange() *change {
	if s.busy == nil {
		return nil
	}
	return &s.busy.change
}

// Replaying reports whether the session holds recorded steps ahead of the
// loop's position: the loop is re-running steps that return their
// recorded results.
func (s *Session) Replaying() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for seq := s.pos + 1; seq <= s.mem.LastSeq(); seq++ {
		if _, ok, _ := position(s.event(seq)); ok {
			return true
		}
	}
	return false
}

// Set sets the session variable key to value (encoded as JSON). Called
// with the context a step's function received, the change is part of that
// step: recorded with its result in the same append, and dropped if the
// step fails. Otherwise it is recorded with the next step the loop
// records (or Finish, Fail, Begin, Resolve), in the same append; the loop
// sees it at once (Var, State). A re-run makes the same calls, so a
// change not yet recorded when a process stopped is made again.
func (s *Session) Set(ctx context.Context, key string, value any) error {
	raw, err := json.Marshal(value)
	if err != nil {
		return fmt.Errorf("session %s: set %q: %w", s.id, key, err)
	}
	return s.change(ctx, key, raw, false)
}

// Delete removes the session variable key, as Set changes one.
func (s *Session) Delete(ctx context.Context, key string) error {
	return s.change(ctx, key, nil, true)
}

func (s *Session) change(ctx context.Context, key string, raw json.RawMessage, del bool) error {
	if key == "" {
		return fmt.Errorf("session %s: a variable needs a name", s.id)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	c := &s.pend
	if sc, ok := ctx.Value(scopeKey{}).(*scope); ok && sc.s == s {
		if sc != s.busy {
			return fmt.Errorf("session %s: set %q: the step %q has returned; set variables before the step's function returns", s.id, key, sc.name)
		}
		c = &sc.change
	} else if s.busy != nil {
		return fmt.Errorf("session %s: set %q while step %q runs: %w (inside the step, pass Set the context the step's function received)", s.id, key, s.busy.name, ErrBusy)
	}
	if del {
		c.delete(key)
	} else {
		c.put(key, raw)
	}
	return nil
}

// change is a set of variable changes not yet recorded. set and deleted
// never share a key.
type change struct {
	set     map[string]json.RawMessage
	deleted []string
}

func (c *change) put(key string, raw json.RawMessage) {
	if c.set == nil {
		c.set = map[string]json.RawMessage{}
	}
	c.set[key] = raw
	c.deleted = slices.DeleteFunc(c.deleted, func(k string) bool { return k == key })
}

func (c *change) delete(key string) {
	delete(c.set, key)
	if !slices.Contains(c.deleted, key) {
		c.deleted = append(c.deleted, key)
	}
}

func (c *change) empty() bool { return len(c.set) == 0 && len(c.deleted) == 0 }

// merge adds the changes of o after c's.
func (c *change) merge(o change) {
	for k, v := range o.set {
		c.put(k, v)
	}
	for _, k := range o.deleted {
		c.delete(k)
	}
}

func (c *change) applyTo(vars map[string]json.RawMessage) {
	maps.Copy(vars, c.set)
	for _, k := range c.deleted {
		delete(vars, k)
	}
}

// event returns c as a state.set event, or false when c is empty.
func (c *change) event(run string) (cairn.Event, bool) {
	if c.empty() {
		return cairn.Event{}, false
	}
	set := maps.Clone(c.set)
	if set == nil {
		set = map[string]json.RawMessage{}
	}
	return cairn.MustEvent(cairn.KindStateSet, run, cairn.StateSet{Set: set, Deleted: slices.Clone(c.deleted)}), true
}

// Close releases the session's lease, if it holds one. It is safe to call
// twice; the session refuses every step after it (ErrClosed).
func (s *Session) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	if s.lease != nil {
		return s.lease.release()
	}
	return nil
}
