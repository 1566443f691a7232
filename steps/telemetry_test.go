package steps_test

import (
	"context"
	"encoding/json"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/testcheck"
	"github.com/cairnhq/cairn/steps"
)

// TestTelemetry_Spans checks the spans of a loop: a chat span per model
// call, an execute_tool span per tool call, a cairn.step span per step
// function and a cairn.append span per append; a re-run that returns the
// recorded results makes no span but appends'.
func TestTelemetry_Spans(t *testing.T) {
	st := testcheck.MemoryStore(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	loop := func() {
		s := open(t, st, "tel", steps.Options{TracerProvider: tp})
		ctx := t.Context()
		if _, err := steps.Run(ctx, s, "plan", func(context.Context) (int, error) { return 1, nil }); err != nil {
			t.Fatal(err)
		}
		resp, err := steps.Model(ctx, s, func(context.Context) (cairn.ModelResponse, error) {
			return cairn.ModelResponse{Model: "openai:gpt-x", Usage: cairn.Usage{InputTokens: 5, OutputTokens: 2},
				ToolCalls: []cairn.ToolCall{{Name: "lookup", Args: json.RawMessage(`{}`)}}}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := steps.Tool(ctx, s, resp.ToolCalls[0], func(context.Context) (string, error) { return "found", nil }, steps.NotIdempotent()); err != nil {
			t.Fatal(err)
		}
	}
	loop()
	got := map[string]int{}
	attrs := map[string]map[string]string{}
	for _, sp := range rec.Ended() {
		got[sp.Name()]++
		m := map[string]string{}
		for _, kv := range sp.Attributes() {
			m[string(kv.Key)] = kv.Value.String()
		}
		attrs[sp.Name()] = m
	}
	want := map[string]int{"cairn.step plan": 1, "chat gpt-x": 1, "execute_tool lookup": 1, "cairn.append": 4}
	for name, n := range want {
		if got[name] != n {
			t.Errorf("%d spans %q, want %d (all: %v)", got[name], name, n, got)
		}
	}
	for k, v := range map[string]string{"gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-x", "gen_ai.usage.input_tokens": "5", "gen_ai.conversation.id": "tel"} {
		if attrs["chat gpt-x"][k] != v {
			t.Errorf("chat span: %s = %q, want %q", k, attrs["chat gpt-x"][k], v)
		}
	}
	if attrs["execute_tool lookup"]["cairn.tool.safety"] != "side_effect" || attrs["cairn.append"]["cairn.store.backend"] != "memory" {
		t.Errorf("attributes: %v", attrs)
	}

	// The re-run returns what was recorded: nothing runs, nothing is traced.
	before := len(rec.Ended())
	loop()
	if n := len(rec.Ended()) - before; n != 0 {
		t.Errorf("a re-run made %d spans, want 0", n)
	}
}
