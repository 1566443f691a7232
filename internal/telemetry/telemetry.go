// Package telemetry is what the agent runtime and the durable steps share
// to emit OpenTelemetry traces and metrics in the GenAI semantic
// conventions: the attribute keys, the instruments, the spans of a run, a
// model call, a tool call and a store append, and the trace context a run
// records so that a resumed run can link to it.
//
// Everything here is off and nearly free when no provider is given: the
// tracer is otel's no-op one, attributes are built only for a span that
// records, and metrics are not recorded at all without a MeterProvider.
package telemetry

import (
	"context"
	"os"
	"reflect"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/cairnhq/cairn"
)

// ScopeName is the instrumentation scope of cairn's tracer and meter.
const ScopeName = "github.com/cairnhq/cairn"

// CaptureEnv is the environment variable of the GenAI conventions that
// opts in to recording message content ("true").
const CaptureEnv = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

// Attribute keys of the GenAI semantic conventions and cairn's own.
const (
	OperationName      = attribute.Key("gen_ai.operation.name")
	ProviderName       = attribute.Key("gen_ai.provider.name")
	AgentName          = attribute.Key("gen_ai.agent.name")
	ConversationID     = attribute.Key("gen_ai.conversation.id")
	RequestModel       = attribute.Key("gen_ai.request.model")
	ResponseModel      = attribute.Key("gen_ai.response.model")
	ResponseFinish     = attribute.Key("gen_ai.response.finish_reasons")
	InputTokens        = attribute.Key("gen_ai.usage.input_tokens")
	OutputTokens       = attribute.Key("gen_ai.usage.output_tokens")
	TokenType          = attribute.Key("gen_ai.token.type")
	ToolName           = attribute.Key("gen_ai.tool.name")
	ToolCallID         = attribute.Key("gen_ai.tool.call.id")
	ToolType           = attribute.Key("gen_ai.tool.type")
	ToolCallArguments  = attribute.Key("gen_ai.tool.call.arguments")
	ToolCallResult     = attribute.Key("gen_ai.tool.call.result")
	InputMessages      = attribute.Key("gen_ai.input.messages")
	OutputMessages     = attribute.Key("gen_ai.output.messages")
	SystemInstructions = attribute.Key("gen_ai.system_instructions")
	ErrorType          = attribute.Key("error.type")

	RunID        = attribute.Key("cairn.run.id")
	RunResumed   = attribute.Key("cairn.run.resumed")
	RunStatus    = attribute.Key("cairn.run.status")
	ToolSafety   = attribute.Key("cairn.tool.safety")
	ToolApproval = attribute.Key("cairn.tool.approval")
	ToolOutcome  = attribute.Key("cairn.tool.outcome")
	StoreBackend = attribute.Key("cairn.store.backend")
	SessionID    = attribute.Key("cairn.session.id")
	AppendSeq    = attribute.Key("cairn.append.seq")
	AppendLast   = attribute.Key("cairn.append.last_seq")
	AppendEvents = attribute.Key("cairn.append.events")
	AppendKinds  = attribute.Key("cairn.append.kinds")
	StepName     = attribute.Key("cairn.step.name")
	StepIndex    = attribute.Key("cairn.step.index")
	StepReplayed = attribute.Key("cairn.step.replayed")
)

// Operation names of the GenAI conventions.
const (
	OpInvokeAgent = "invoke_agent"
	OpChat        = "chat"
	OpExecuteTool = "execute_tool"
)

// Metric names of the GenAI client metrics.
const (
	MetricTokenUsage = "gen_ai.client.token.usage"
	MetricDuration   = "gen_ai.client.operation.duration"
)

// Bucket boundaries the conventions advise for the two histograms.
var (
	tokenBuckets    = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
	durationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
)

// T holds the tracer and the instruments of one configuration. The zero
// value is not usable; New makes one. A T is safe for concurrent use.
type T struct {
	tracer   trace.Tracer
	tokens   metric.Int64Histogram   // nil: metrics off
	duration metric.Float64Histogram // nil: metrics off
	content  bool
}

// New returns the telemetry of tp and mp: nil tp means otel's no-op
// tracer, nil mp means no metrics. Message content is recorded when
// capture is true or CaptureEnv is "true". Instruments that the meter
// refuses are left out (metrics off), since telemetry never fails a run.
func New(tp trace.TracerProvider, mp metric.MeterProvider, capture bool) *T {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	t := &T{
		tracer:  tp.Tracer(ScopeName),
		content: capture || strings.EqualFold(strings.TrimSpace(os.Getenv(CaptureEnv)), "true"),
	}
	if mp != nil {
		m := mp.Meter(ScopeName)
		tokens, err1 := m.Int64Histogram(MetricTokenUsage, metric.WithUnit("{token}"),
			metric.WithDescription("Number of input and output tokens used."),
			metric.WithExplicitBucketBoundaries(tokenBuckets...))
		duration, err2 := m.Float64Histogram(MetricDuration, metric.WithUnit("s"),
			metric.WithDescription("GenAI operation duration."),
			metric.WithExplicitBucketBoundaries(durationBuckets...))
		if err1 == nil && err2 == nil {
			t.tokens, t.duration = tokens, duration
		}
	}
	return t
}

// Lazy builds a T once, on first use: an Agent's fields are read when its
// first run starts, not when it is declared.
type Lazy struct {
	once sync.Once
	t    *T
}

// Get returns the T of the first call's arguments.
func (l *Lazy) Get(tp trace.TracerProvider, mp metric.MeterProvider, capture bool) *T {
	l.once.Do(func() { l.t = New(tp, mp, capture) })
	return l.t
}

// Share makes l give what from gives: the tracer and instruments of one
// agent for a copy of it.
func (l *Lazy) Share(from *Lazy, tp trace.TracerProvider, mp metric.MeterProvider, capture bool) {
	t := from.Get(tp, mp, capture)
	l.once.Do(func() { l.t = t })
}

// Content reports whether message content is recorded.
func (t *T) Content() bool { return t.content }

// Tracer returns the tracer.
func (t *T) Tracer() trace.Tracer { return t.tracer }

// Model splits a cairn model ID ("openai:gpt-4o", "offline",
// "script:steps.json") into the GenAI provider name and the model name:
// openai and anthropic keep their names, cairn's own models are
// "cairn.offline" and "cairn.script".
func Model(id string) (provider, model string) {
	p, name, ok := strings.Cut(id, ":")
	if !ok {
		p, name = id, id
	}
	switch p {
	case "openai", "anthropic":
		return p, name
	case "":
		return "cairn", id
	}
	return "cairn." + p, name
}

// StartRun starts the span of a run (invoke_agent {agent}) as a child of
// the span in ctx. link, when valid, is the span of the run this one
// resumes. The attributes are set only when the span records.
func (t *T) StartRun(ctx context.Context, agent, session, runID, modelID string, resumed bool, link trace.SpanContext) (context.Context, trace.Span) {
	name := OpInvokeAgent
	if agent != "" {
		name += " " + agent
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal)}
	if link.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: link, Attributes: []attribute.KeyValue{RunID.String(runID)}}))
	}
	ctx, span := t.tracer.Start(ctx, name, opts...)
	if span.IsRecording() {
		prov, model := Model(modelID)
		span.SetAttributes(
			OperationName.String(OpInvokeAgent),
			ProviderName.String(prov),
			RequestModel.String(model),
			ConversationID.String(session),
			RunID.String(runID),
			RunResumed.Bool(resumed),
		)
		if agent != "" {
			span.SetAttributes(AgentName.String(agent))
		}
	}
	return ctx, span
}

// EndRun ends a run's span with the run's status, tokens and error.
func EndRun(span trace.Span, status string, in, out int64, err error) {
	if span.IsRecording() {
		span.SetAttributes(RunStatus.String(status), InputTokens.Int64(in), OutputTokens.Int64(out))
		if status == "failed" && err == nil {
			span.SetStatus(codes.Error, "the run failed")
		}
		setError(span, err)
	}
	span.End()
}

func setError(span trace.Span, err error) {
	if err == nil {
		return
	}
	span.SetStatus(codes.Error, err.Error())
	span.SetAttributes(ErrorType.String(errorType(err)))
}

// errorType names an error for error.type: its Go type, or "_OTHER".
func errorType(err error) string {
	typ := reflect.TypeOf(err)
	if typ == nil {
		return "_OTHER"
	}
	if typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	if typ.PkgPath() == "errors" || typ.PkgPath() == "fmt" || typ.Name() == "" {
		return "_OTHER"
	}
	return typ.String()
}

// Chat is one model call under way.
type Chat struct {
	t        *T
	ctx      context.Context
	span     trace.Span
	begin    time.Time
	provider string
	model    string
}

// StartChat starts the span of a model call (chat {model}).
// An empty modelID leaves the model to SetModel.
func (t *T) StartChat(ctx context.Context, session, modelID string) *Chat {
	prov, model := "", ""
	name := OpChat
	if modelID != "" {
		prov, model = Model(modelID)
		name += " " + model
	}
	ctx, span := t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient))
	if span.IsRecording() {
		span.SetAttributes(OperationName.String(OpChat), ConversationID.String(session))
		if modelID != "" {
			span.SetAttributes(ProviderName.String(prov), RequestModel.String(model))
		}
	}
	return &Chat{t: t, ctx: ctx, span: span, begin: time.Now(), provider: prov, model: model}
}

// SetModel names the model of a call started without one (a loop of
// durable steps learns it from the response): the span becomes "chat
// {model}". A model ID without a provider prefix ("gpt-4o") sets no
// gen_ai.provider.name.
func (c *Chat) SetModel(id string) {
	if id == "" {
		return
	}
	if strings.Contains(id, ":") {
		c.provider, c.model = Model(id)
	} else {
		c.model = id
	}
	if c.span.IsRecording() {
		c.span.SetName(OpChat + " " + c.model)
		c.span.SetAttributes(RequestModel.String(c.model))
		if c.provider != "" {
			c.span.SetAttributes(ProviderName.String(c.provider))
		}
	}
}

// Context returns the context of the call's span: the model call's own
// requests are its children.
func (c *Chat) Context() context.Context { return c.ctx }

// Recording reports whether the call's span records: content is worth
// building only then.
func (c *Chat) Recording() bool { return c.span.IsRecording() }

// Input records the request's messages and instructions, when content is
// captured. messages is the JSON of the conventions' input messages.
func (c *Chat) Input(system string, messages func() string) {
	if !c.t.content || !c.span.IsRecording() {
		return
	}
	if system != "" {
		c.span.SetAttributes(SystemInstructions.String(system))
	}
	c.span.SetAttributes(InputMessages.String(messages()))
}

// End ends the call's span and records the GenAI client metrics: the
// response's model, finish reason and tokens, or the error. output is the
// JSON of the conventions' output messages, recorded when content is
// captured.
func (c *Chat) End(respModel, finish string, in, out int64, output func() string, err error) {
	d := time.Since(c.begin)
	if c.span.IsRecording() {
		if err == nil {
			if respModel != "" {
				c.span.SetAttributes(ResponseModel.String(respModel))
			}
			c.span.SetAttributes(ResponseFinish.StringSlice([]string{finish}), InputTokens.Int64(in), OutputTokens.Int64(out))
			if c.t.content && output != nil {
				c.span.SetAttributes(OutputMessages.String(output()))
			}
		}
		setError(c.span, err)
	}
	c.span.End()
	if c.t.duration == nil {
		return
	}
	attrs := []attribute.KeyValue{OperationName.String(OpChat), RequestModel.String(c.model)}
	if c.provider != "" {
		attrs = append(attrs, ProviderName.String(c.provider))
	}
	if err != nil {
		attrs = append(attrs, ErrorType.String(errorType(err)))
	} else if respModel != "" {
		attrs = append(attrs, ResponseModel.String(respModel))
	}
	c.t.duration.Record(c.ctx, d.Seconds(), metric.WithAttributeSet(attribute.NewSet(attrs...)))
	if err != nil {
		return
	}
	c.t.tokens.Record(c.ctx, in, metric.WithAttributeSet(attribute.NewSet(append(attrs, TokenType.String("input"))...)))
	c.t.tokens.Record(c.ctx, out, metric.WithAttributeSet(attribute.NewSet(append(attrs, TokenType.String("output"))...)))
}

// Tool is one tool call under way.
type Tool struct {
	t     *T
	ctx   context.Context
	span  trace.Span
	begin time.Time
	name  string
}

// StartTool starts the span of a tool call (execute_tool {name}) with the
// tool's safety class; args is recorded when content is captured.
func (t *T) StartTool(ctx context.Context, session, name, callID, safety string, approval bool, args []byte) (context.Context, *Tool) {
	ctx, span := t.tracer.Start(ctx, OpExecuteTool+" "+name, trace.WithSpanKind(trace.SpanKindInternal))
	if span.IsRecording() {
		span.SetAttributes(
			OperationName.String(OpExecuteTool),
			ToolName.String(name),
			ToolCallID.String(callID),
			ToolType.String("function"),
			ConversationID.String(session),
			ToolSafety.String(safety),
			ToolApproval.Bool(approval),
		)
		if t.content && len(args) > 0 {
			span.SetAttributes(ToolCallArguments.String(string(args)))
		}
	}
	return ctx, &Tool{t: t, ctx: ctx, span: span, begin: time.Now(), name: name}
}

// End ends the tool call's span: outcome says what became of it ("ok",
// "error", "outcome_unknown", "denied", "cancelled", …); output is
// recorded when content is captured.
func (c *Tool) End(outcome, output string, isError bool) {
	if c.span.IsRecording() {
		c.span.SetAttributes(ToolOutcome.String(outcome))
		if c.t.content && output != "" {
			c.span.SetAttributes(ToolCallResult.String(output))
		}
		if isError {
			c.span.SetStatus(codes.Error, outcome)
			c.span.SetAttributes(ErrorType.String(outcome))
		}
	}
	c.span.End()
}

// StartStep starts the span of a durable step of a loop (cairn.step
// {name}), a function run as step index of its run.
func (t *T) StartStep(ctx context.Context, session, name string, index int) (context.Context, trace.Span) {
	ctx, span := t.tracer.Start(ctx, "cairn.step "+name, trace.WithSpanKind(trace.SpanKindInternal))
	if span.IsRecording() {
		span.SetAttributes(StepName.String(name), StepIndex.Int(index), ConversationID.String(session))
	}
	return ctx, span
}

// EndStep ends a step's span, with its error.
func EndStep(span trace.Span, err error) {
	if span.IsRecording() {
		setError(span, err)
	}
	span.End()
}

// StartAppend starts the span of a store append (cairn.append), a child of
// the span in ctx.
func (t *T) StartAppend(ctx context.Context) (context.Context, trace.Span) {
	return t.tracer.Start(ctx, "cairn.append", trace.WithSpanKind(trace.SpanKindClient))
}

// EndAppend ends an append's span with the backend, the seqs written and
// the event kinds, or the error.
func EndAppend(span trace.Span, backend, session string, first, last int64, kinds []string, err error) {
	if span.IsRecording() {
		span.SetAttributes(
			StoreBackend.String(backend),
			SessionID.String(session),
			AppendSeq.Int64(first),
			AppendLast.Int64(last),
			AppendEvents.Int(int(last-first+1)),
			AppendKinds.StringSlice(kinds),
		)
		setError(span, err)
	}
	span.End()
}

// Backend names a store's backend for cairn.store.backend: the name of
// the package of its Go type ("sqlite", "postgres", …), which is the
// backend's URL scheme for cairn's own stores. A store that wraps another
// (store/crypt: Inner) is named for the one it wraps.
func Backend(store any) string {
	for range 8 {
		w, ok := store.(interface{ Inner() cairn.Store })
		if !ok {
			break
		}
		store = w.Inner()
	}
	typ := reflect.TypeOf(store)
	for typ != nil && typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	if typ == nil || typ.PkgPath() == "" {
		return "unknown"
	}
	p := typ.PkgPath()
	return p[strings.LastIndexByte(p, '/')+1:]
}
