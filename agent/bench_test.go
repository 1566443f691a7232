package agent_test

import (
	"context"
	"path/filepath"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/store/sqlite"
)

// BenchmarkSession_Run measures one turn with a tool call (four appends:
// the input, the model response asking for calc, its result, the answer)
// with the offline model, so the figure is the runtime's and the store's.
func BenchmarkSession_Run(b *testing.B) {
	stores := map[string]func(b *testing.B) cairn.Store{
		"memory": func(b *testing.B) cairn.Store {
			st, err := cairn.Open(b.Context(), "memory:", cairn.StoreOptions{Namespace: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			return st
		},
		"sqlite": func(b *testing.B) cairn.Store {
			st, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "cairn.db"), sqlite.Options{})
			if err != nil {
				b.Fatal(err)
			}
			return st
		},
	}
	for _, name := range []string{"memory", "sqlite"} {
		b.Run(name, func(b *testing.B) {
			st := stores[name](b)
			defer st.Close()
			runTurns(b, offlineAgent(st))
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/4, "µs/append")
		})
	}
}

// BenchmarkSession_RunTelemetry measures the turn of BenchmarkSession_Run
// on the memory store (three steps: two model calls and a tool call, four
// appends) with telemetry off (no providers: otel's no-op tracer) and on
// (the SDK's tracer and meter, spans sampled and dropped at their end), so
// that the difference is the cost of the spans and metrics alone.
func BenchmarkSession_RunTelemetry(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			st, err := cairn.Open(b.Context(), "memory:", cairn.StoreOptions{Namespace: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			a := offlineAgent(st)
			if on {
				tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(dropSpans{}))
				mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
				defer tp.Shutdown(context.Background())
				defer mp.Shutdown(context.Background())
				a.TracerProvider, a.MeterProvider = tp, mp
			}
			runTurns(b, a)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/3, "ns/step")
		})
	}
}

// runTurns starts a session of a and runs the turn "calc 2*(3+4)" in it
// for each iteration of b, with allocations reported.
func runTurns(b *testing.B, a *agent.Agent) {
	s, err := a.Start(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		res, err := s.Run(b.Context(), "calc 2*(3+4)")
		if err != nil || res.Status != cairn.StatusCompleted {
			b.Fatal(res, err)
		}
	}
}

// dropSpans is a span processor that keeps nothing: the spans are built
// and ended, and no exporter's cost is counted.
type dropSpans struct{}

func (dropSpans) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (dropSpans) OnEnd(sdktrace.ReadOnlySpan)                     {}
func (dropSpans) Shutdown(context.Context) error                  { return nil }
func (dropSpans) ForceFlush(context.Context) error                { return nil }
