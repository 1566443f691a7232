package agent_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/agent/builtin"
	"github.com/cairnhq/cairn/internal/testing/testcheck"
	"github.com/cairnhq/cairn/provider/offline"
)

// traced returns an offline agent on st whose spans go to a recorder and
// whose metrics to a manual reader.
func traced(st cairn.Store) (*agent.Agent, *tracetest.SpanRecorder, *sdkmetric.ManualReader) {
	rec := tracetest.NewSpanRecorder()
	reader := sdkmetric.NewManualReader()
	a := offlineAgent(st)
	a.Name = "helper"
	a.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	a.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	return a, rec, reader
}

func spanAttrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

func spansNamed(spans []sdktrace.ReadOnlySpan, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

func wantAttr(t *testing.T, s sdktrace.ReadOnlySpan, key, want string) {
	t.Helper()
	got, ok := spanAttrs(s)[attribute.Key(key)]
	if !ok {
		t.Errorf("span %q has no %s; attributes %v", s.Name(), key, s.Attributes())
		return
	}
	if got.String() != want {
		t.Errorf("span %q: %s = %q, want %q", s.Name(), key, got.String(), want)
	}
}

func TestAgent_Telemetry(t *testing.T) {
	a, rec, reader := traced(testcheck.MemoryStore(t))
	s, err := a.Start(t.Context(), agent.WithID("tel-1"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(t.Context(), "calc 2+2")
	if err != nil || res.Status != cairn.StatusCompleted {
		t.Fatal(res, err)
	}
	spans := rec.Ended()
	runs := spansNamed(spans, "invoke_agent helper")
	if len(runs) != 1 {
		t.Fatalf("got %d invoke_agent spans, want 1: %v", len(runs), names(spans))
	}
	run := runs[0]
	wantAttr(t, run, "gen_ai.operation.name", "invoke_agent")
	wantAttr(t, run, "gen_ai.agent.name", "helper")
	wantAttr(t, run, "gen_ai.conversation.id", "tel-1")
	wantAttr(t, run, "gen_ai.provider.name", "cairn.offline")
	wantAttr(t, run, "cairn.run.id", res.RunID)
	wantAttr(t, run, "cairn.run.status", "completed")

	chats := spansNamed(spans, "chat offline")
	if len(chats) != 2 {
		t.Fatalf("got %d chat spans, want 2 (the call of calc, the answer): %v", len(chats), names(spans))
	}
	for _, c := range chats {
		wantAttr(t, c, "gen_ai.operation.name", "chat")
		wantAttr(t, c, "gen_ai.provider.name", "cairn.offline")
		wantAttr(t, c, "gen_ai.request.model", "offline")
		wantAttr(t, c, "gen_ai.conversation.id", "tel-1")
		if c.Parent().SpanID() != run.SpanContext().SpanID() {
			t.Errorf("chat span's parent is %s, want the run's %s", c.Parent().SpanID(), run.SpanContext().SpanID())
		}
		for _, k := range []string{"gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "gen_ai.response.finish_reasons"} {
			if _, ok := spanAttrs(c)[attribute.Key(k)]; !ok {
				t.Errorf("chat span has no %s", k)
			}
		}
		for _, k := range []string{"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions"} {
			if _, ok := spanAttrs(c)[attribute.Key(k)]; ok {
				t.Errorf("chat span has %s without the opt-in", k)
			}
		}
	}
	wantAttr(t, chats[0], "gen_ai.response.finish_reasons", `["tool_calls"]`)
	wantAttr(t, chats[1], "gen_ai.response.finish_reasons", `["stop"]`)

	tools := spansNamed(spans, "execute_tool calc")
	if len(tools) != 1 {
		t.Fatalf("got %d execute_tool spans, want 1: %v", len(tools), names(spans))
	}
	wantAttr(t, tools[0], "gen_ai.tool.name", "calc")
	wantAttr(t, tools[0], "cairn.tool.safety", "idempotent")
	wantAttr(t, tools[0], "cairn.tool.outcome", "ok")
	if id := spanAttrs(tools[0])["gen_ai.tool.call.id"].AsString(); id == "" {
		t.Error("execute_tool span has no gen_ai.tool.call.id")
	}

	appends := spansNamed(spans, "cairn.append")
	if len(appends) != 4 {
		t.Fatalf("got %d cairn.append spans, want 4 (input, response, result, answer): %v", len(appends), names(spans))
	}
	wantAttr(t, appends[0], "cairn.store.backend", "memory")
	wantAttr(t, appends[0], "cairn.append.seq", "1")
	for _, ap := range appends {
		if ap.Parent().SpanID() != run.SpanContext().SpanID() {
			t.Errorf("append span's parent is %s, want the run's", ap.Parent().SpanID())
		}
	}
	if !strings.Contains(spanAttrs(appends[0])["cairn.append.kinds"].String(), "custom") {
		t.Errorf("the run's first append holds no trace context: kinds %s", spanAttrs(appends[0])["cairn.append.kinds"].String())
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Histogram[int64]:
				for _, p := range d.DataPoints {
					got[m.Name] += int(p.Count)
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					got[m.Name] += int(p.Count)
				}
			}
		}
	}
	if got["gen_ai.client.operation.duration"] != 2 || got["gen_ai.client.token.usage"] != 4 {
		t.Errorf("metrics: %v; want 2 operation durations and 4 token usages (input and output of 2 calls)", got)
	}
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return out
}

func TestAgent_TelemetryContentOptIn(t *testing.T) {
	a, rec, _ := traced(testcheck.MemoryStore(t))
	a.CaptureContent = true
	s, err := a.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(t.Context(), "calc 2+2"); err != nil {
		t.Fatal(err)
	}
	spans := rec.Ended()
	chat := spansNamed(spans, "chat offline")[0]
	if in := spanAttrs(chat)["gen_ai.input.messages"].AsString(); !strings.Contains(in, "calc 2+2") {
		t.Errorf("gen_ai.input.messages = %s, want the user's text", in)
	}
	wantAttr(t, chat, "gen_ai.system_instructions", "Be brief.")
	tool := spansNamed(spans, "execute_tool calc")[0]
	if args := spanAttrs(tool)["gen_ai.tool.call.arguments"].AsString(); !strings.Contains(args, "2+2") {
		t.Errorf("gen_ai.tool.call.arguments = %q", args)
	}
	wantAttr(t, tool, "gen_ai.tool.call.result", "4")
}

// TestAgent_TelemetryResumeLink checks that the span of a resumed run
// links to the span of the run it resumes, found in the session's events
// by another agent (as another process would).
func TestAgent_TelemetryResumeLink(t *testing.T) {
	st := testcheck.MemoryStore(t)
	a, rec, _ := traced(st)
	a.Tools = []*agent.Tool{builtin.Tools()[0].With(agent.RequireApproval(), agent.NotIdempotent())}
	s, err := a.Start(t.Context(), agent.WithID("tel-link"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(t.Context(), "calc 1+2")
	if err != nil || res.Status != cairn.StatusAwaiting {
		t.Fatal(res, err)
	}
	first := spansNamed(rec.Ended(), "invoke_agent helper")[0]

	b, rec2, _ := traced(st)
	b.Tools = a.Tools
	s2, err := b.Resume(t.Context(), "tel-link")
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Approve(t.Context(), res.Awaiting[0].ID, true, ""); err != nil {
		t.Fatal(err)
	}
	res2, err := s2.ResumeRun(t.Context())
	if err != nil || res2.Status != cairn.StatusCompleted {
		t.Fatal(res2, err)
	}
	spans := rec2.Ended()
	resumed := spansNamed(spans, "invoke_agent helper")
	if len(resumed) != 1 {
		t.Fatalf("got %d run spans, want 1: %v", len(resumed), names(spans))
	}
	wantAttr(t, resumed[0], "cairn.run.resumed", "true")
	wantAttr(t, resumed[0], "cairn.run.id", res.RunID)
	links := resumed[0].Links()
	if len(links) != 1 || links[0].SpanContext.SpanID() != first.SpanContext().SpanID() || links[0].SpanContext.TraceID() != first.SpanContext().TraceID() {
		t.Fatalf("resumed run's links = %+v, want one to the first run's span %s", links, first.SpanContext().SpanID())
	}
	tool := spansNamed(spans, "execute_tool calc")[0]
	wantAttr(t, tool, "cairn.tool.safety", "side_effect")
	wantAttr(t, tool, "cairn.tool.approval", "true")
	if !slices.ContainsFunc(spansNamed(spans, "cairn.append"), func(s sdktrace.ReadOnlySpan) bool {
		return s.Parent().SpanID() == tool.SpanContext().SpanID() && strings.Contains(spanAttrs(s)["cairn.append.kinds"].String(), "tool.started")
	}) {
		t.Error("no cairn.append of tool.started under the tool's span")
	}
}

// TestAgent_TelemetryOff checks that an agent without providers records no
// trace context in the session.
func TestAgent_TelemetryOff(t *testing.T) {
	st := testcheck.MemoryStore(t)
	a := &agent.Agent{Model: offline.New(), Tools: builtin.Tools(), Store: st, Logger: quietLogger()}
	s, err := a.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(t.Context(), "calc 2+2"); err != nil {
		t.Fatal(err)
	}
	for _, e := range loadEvents(t, st, s.ID()) {
		if e.Kind == cairn.KindCustom {
			t.Errorf("seq %d: a custom event with telemetry off: %s", e.Seq, e.Data)
		}
	}
}
