package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/telemetry"
	"github.com/cairnhq/cairn/provider"
	"github.com/cairnhq/cairn/store/crypt"
	"github.com/cairnhq/cairn/store/memory"
)

// OnError values: what a run does when the store fails.
const (
	// Degrade keeps the run going in memory when an append fails, logs a
	// warning once, and writes the unsaved events, in order, as soon as
	// the store answers again. The default.
	Degrade = "degrade"
	// Fail stops the run with a wrapped error; nothing is half-written.
	Fail = "fail"
)

// DefaultMaxSteps is the model responses a run may take when MaxSteps is 0.
const DefaultMaxSteps = 20

// Agent is the code that runs sessions: a model, instructions, tools,
// limits and a store. It is not saved; its fingerprint is, at the start of
// each run. An Agent is safe for concurrent use by many sessions; do not
// change its fields while sessions use it.
type Agent struct {
	Name         string         // recorded in run.started
	Instructions string         // the system message of each fresh run
	Model        provider.Model // answers the think steps
	Tools        []*Tool        // what the model may call; names must be unique
	MaxSteps     int            // model responses per run; 0 means DefaultMaxSteps
	Store        cairn.Store    // where sessions live; nil means a private memory store
	OnError      string         // Degrade (default, "") or Fail
	Logger       *slog.Logger   // nil means slog.Default()
	// ContextTokens is the budget of each request to the model, in
	// estimated tokens: before a model call whose request would exceed it,
	// older messages are compacted (see Compaction). 0 means
	// DefaultContextTokens(Model.ID()).
	ContextTokens int
	// Compaction is how older messages make room: CompactSummarize
	// (default, ""), CompactDrop or CompactOff.
	Compaction string
	// MaxToolOutput is the most bytes of a tool call's text — its output,
	// or its error — that its tool.result keeps and the model sees; 0 (or
	// less) means DefaultMaxToolOutput. Longer text is cut, saying so (see
	// CutOutput), whatever the tool: this is what keeps a tool.result
	// within the store's event size limit. JSON may write one byte of text
	// as six (\u003c for '<'), so a limit above a sixth of the store's
	// (cairn.Limits.MaxEventBytes) can let a result of such text past it.
	MaxToolOutput int

	// SnapshotEvents and SnapshotBytes are when a session's snapshot is
	// written, in the background, on a store that keeps snapshots
	// (cairn.Snapshotter): after that many events, or bytes of events,
	// since the last one, whichever comes first (0: the defaults; a
	// negative value turns snapshots off). A snapshot is also never
	// written before its predecessor's size has been appended, so that
	// snapshots never cost more than the appends. Resume and Open
	// fold only the events after the snapshot.
	SnapshotEvents int
	SnapshotBytes  int

	// TracerProvider gets a span per run (invoke_agent), per model call
	// (chat), per tool call (execute_tool) and per store append
	// (cairn.append), in the OpenTelemetry GenAI semantic conventions
	// (docs/OBSERVABILITY.md). nil means otel's no-op provider: no spans,
	// and next to no cost.
	TracerProvider trace.TracerProvider
	// MeterProvider gets the GenAI client metrics
	// (gen_ai.client.token.usage, gen_ai.client.operation.duration); nil
	// records none.
	MeterProvider metric.MeterProvider
	// CaptureContent records message content (the model's input and
	// output messages, the instructions, tool arguments and results) in
	// the spans: the conventions' opt-in, also turned on by
	// OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true. Off by
	// default: spans then hold names, IDs, counts and timings only.
	CaptureContent bool

	tel          telemetry.Lazy
	volatileOnce sync.Once
	volatile     cairn.Store
	volatileErr  error
}

// StartOption configures Start.
type StartOption func(*startOptions)

type startOptions struct {
	id     string
	labels map[string]string
}

// WithID gives the new session a chosen ID instead of a random one.
func WithID(id string) StartOption { return func(o *startOptions) { o.id = id } }

// WithLabels attaches labels to the new session, for listing and filtering.
func WithLabels(labels map[string]string) StartOption {
	return func(o *startOptions) { o.labels = labels }
}

// Start creates a new, empty session in the store. With WithID it uses
// that ID and returns an error wrapping cairn.ErrExists when the store
// already holds it (continue the saved one with Resume, or use Open);
// otherwise the ID is cairn.NewID().
func (a *Agent) Start(ctx context.Context, opts ...StartOption) (*Session, error) {
	o := startOptions{}
	for _, f := range opts {
		f(&o)
	}
	if o.id == "" {
		o.id = cairn.NewID()
	}
	st, err := a.store()
	if err != nil {
		return nil, err
	}
	meta := cairn.SessionMeta{ID: o.id, Labels: o.labels}
	if err := st.Create(ctx, meta); err != nil {
		return nil, fmt.Errorf("start session %s: %w", o.id, err)
	}
	mem := &cairn.Memory{Session: &meta}
	return newSession(a, st, o.id, mem, cairn.NewState()), nil
}

// Resume rebuilds a session from the store: from its latest snapshot and
// the events after it when the store keeps snapshots and its snapshot
// matches the events (a stale or damaged one is logged and passed over),
// by replaying every event otherwise. It
// returns an error wrapping cairn.ErrNotFound if the store does not hold it,
// and one wrapping cairn.ErrSealed for an encrypted session read from a
// store that does not decrypt it (open the store with store/crypt).
func (a *Agent) Resume(ctx context.Context, id string) (*Session, error) {
	st, err := a.store()
	if err != nil {
		return nil, err
	}
	r, err := cairn.Restore(ctx, st, id)
	if err != nil {
		return nil, fmt.Errorf("resume session %s: %w", id, err)
	}
	if r.Ignored != nil {
		a.logger().Warn("the session's snapshot was not used; replayed every event", "session", id, "why", r.Ignored)
	}
	// An encrypted session read without its key holds ciphertext: never
	// hand it to a model nor append plaintext after it.
	if err := crypt.CheckUnsealed(id, r.Events); err != nil {
		return nil, fmt.Errorf("resume session %s: %w", id, err)
	}
	mem, err := r.Memory()
	if err != nil {
		return nil, fmt.Errorf("resume session %s: %w", id, err)
	}
	s := newSession(a, st, id, mem, r.State)
	s.snap.seq, s.snap.size = r.Base, r.BaseSize
	if r.Base > 0 {
		for _, e := range r.Events {
			s.snap.bytes += e.Size()
		}
	}
	return s, nil
}

// Open resumes the session id if the store holds it and starts it with
// that ID otherwise: the thread-id pattern, for callers that only know a
// conversation's ID.
func (a *Agent) Open(ctx context.Context, id string, opts ...StartOption) (*Session, error) {
	for range 3 {
		s, err := a.Resume(ctx, id)
		if !errors.Is(err, cairn.ErrNotFound) {
			return s, err
		}
		s, err = a.Start(ctx, append(slices.Clone(opts), WithID(id))...)
		if !errors.Is(err, cairn.ErrExists) {
			return s, err
		}
		// Another process created it between our load and create: load it.
	}
	return nil, fmt.Errorf("open session %s: created and deleted concurrently, try again", id)
}

// WithTools returns a new Agent that is a with tools added: the same
// model, store, settings and telemetry, for the sessions that need tools
// of their own (long-term memory in a user's namespace, say). a is not
// changed. Names must stay unique, as in Tools.
func (a *Agent) WithTools(tools ...*Tool) *Agent {
	b := &Agent{
		Name: a.Name, Instructions: a.Instructions, Model: a.Model,
		Tools:    append(slices.Clip(a.Tools), tools...),
		MaxSteps: a.MaxSteps, Store: a.Store, OnError: a.OnError, Logger: a.Logger,
		ContextTokens: a.ContextTokens, Compaction: a.Compaction, MaxToolOutput: a.MaxToolOutput,
		SnapshotEvents: a.SnapshotEvents, SnapshotBytes: a.SnapshotBytes,
		TracerProvider: a.TracerProvider, MeterProvider: a.MeterProvider, CaptureContent: a.CaptureContent,
	}
	if b.Store == nil {
		// The private memory store is a's: the copy's sessions are its.
		b.Store, _ = a.store()
	}
	b.tel.Share(&a.tel, a.TracerProvider, a.MeterProvider, a.CaptureContent)
	return b
}

func (a *Agent) store() (cairn.Store, error) {
	if a.Store != nil {
		return a.Store, nil
	}
	a.volatileOnce.Do(func() {
		a.volatile, a.volatileErr = memory.New(cairn.StoreOptions{})
	})
	return a.volatile, a.volatileErr
}

// telemetry returns the agent's tracer and instruments, built from its
// fields on first use.
func (a *Agent) telemetry() *telemetry.T {
	return a.tel.Get(a.TracerProvider, a.MeterProvider, a.CaptureContent)
}

func (a *Agent) logger() *slog.Logger {
	if a.Logger != nil {
		return a.Logger
	}
	return slog.Default()
}

func (a *Agent) maxSteps() int {
	if a.MaxSteps > 0 {
		return a.MaxSteps
	}
	return DefaultMaxSteps
}

func (a *Agent) maxToolOutput() int {
	if a.MaxToolOutput > 0 {
		return a.MaxToolOutput
	}
	return DefaultMaxToolOutput
}

func (a *Agent) failMode() bool { return strings.EqualFold(a.OnError, Fail) }

func (a *Agent) tool(name string) *Tool {
	for _, t := range a.Tools {
		if t.name == name {
			return t
		}
	}
	return nil
}

func (a *Agent) check() error {
	if a.Model == nil {
		return errors.New("agent has no model")
	}
	switch strings.ToLower(a.OnError) {
	case "", Degrade, Fail:
	default:
		return fmt.Errorf("agent OnError is %q; want %q or %q", a.OnError, Degrade, Fail)
	}
	if err := a.checkCompaction(); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, t := range a.Tools {
		if t == nil {
			return errors.New("agent has a nil tool")
		}
		if seen[t.name] {
			return fmt.Errorf("agent has two tools named %q", t.name)
		}
		seen[t.name] = true
	}
	return nil
}

// Fingerprint identifies the agent as recorded in run.started: its model
// ID, the SHA-256 of its instructions and the SHA-256 of its tools' names
// and schemas (sorted by name).
func (a *Agent) Fingerprint() cairn.Fingerprint {
	fp := cairn.Fingerprint{Instructions: hash(a.Instructions)}
	if a.Model != nil {
		fp.Model = a.Model.ID()
	}
	tools := slices.Clone(a.Tools)
	slices.SortFunc(tools, func(x, y *Tool) int { return strings.Compare(x.name, y.name) })
	var b strings.Builder
	for _, t := range tools {
		b.WriteString(t.name)
		b.WriteByte(0)
		b.Write(t.schema)
		b.WriteByte('\n')
	}
	fp.Tools = hash(b.String())
	return fp
}

func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func (a *Agent) toolSpecs() []provider.Tool {
	out := make([]provider.Tool, 0, len(a.Tools))
	for _, t := range a.Tools {
		out = append(out, provider.Tool{Name: t.name, Description: t.description, Schema: slices.Clone(t.schema)})
	}
	return out
}

// ResumeWarning says that a run starts on a session last run by a
// different agent (another model, other instructions or other tools). The
// run goes on; the warning is logged and returned by Session.Warnings and
// in Result.Warnings.
type ResumeWarning struct {
	Session  string
	Recorded cairn.Fingerprint // the fingerprint of the session's last run
	Current  cairn.Fingerprint // the fingerprint of the agent running it now
}

// Error says what differs; the run went on.
func (w *ResumeWarning) Error() string {
	var diff []string
	if w.Recorded.Model != w.Current.Model {
		diff = append(diff, fmt.Sprintf("model %q, now %q", w.Recorded.Model, w.Current.Model))
	}
	if w.Recorded.Instructions != w.Current.Instructions {
		diff = append(diff, "other instructions")
	}
	if w.Recorded.Tools != w.Current.Tools {
		diff = append(diff, "other tools")
	}
	return fmt.Sprintf("session %s was last run by a different agent (%s); the run goes on", w.Session, strings.Join(diff, ", "))
}
