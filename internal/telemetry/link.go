package telemetry

import (
	"encoding/json"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/trace"

	"github.com/cairnhq/cairn"
)

// TypeTrace is the type of the custom event in which a run records its
// span's trace context, in the same append as its run.started, when
// tracing is on: a process that resumes the run later reads it and links
// its own run span to it. Readers of the history pass it over as any
// custom event; it is written only by a run whose span records.
const TypeTrace = "cairn.trace"

// Trace is the payload of a TypeTrace event.
type Trace struct {
	Run         string `json:"run"`         // the run whose span it is
	Traceparent string `json:"traceparent"` // W3C trace context: 00-TRACEID-SPANID-FLAGS
}

// TraceEvent returns the TypeTrace event of run's span, and false when
// the span context is not valid (tracing is off).
func TraceEvent(run string, sc trace.SpanContext) (cairn.Event, bool) {
	if !sc.IsValid() {
		return cairn.Event{}, false
	}
	tp := fmt.Sprintf("00-%s-%s-%02x", sc.TraceID(), sc.SpanID(), byte(sc.TraceFlags()))
	payload, err := json.Marshal(Trace{Run: run, Traceparent: tp})
	if err != nil {
		return cairn.Event{}, false
	}
	return cairn.MustEvent(cairn.KindCustom, run, cairn.Custom{Type: TypeTrace, Payload: payload}), true
}

// FindLink returns the span context that the first TypeTrace event of run
// in events records, or an invalid one when there is none.
func FindLink(events []cairn.Event, run string) trace.SpanContext {
	for _, e := range events {
		if e.Kind != cairn.KindCustom || e.Run != run {
			continue
		}
		v, err := e.Decode()
		if err != nil {
			continue
		}
		c, ok := v.(*cairn.Custom)
		if !ok || c.Type != TypeTrace {
			continue
		}
		var t Trace
		if json.Unmarshal(c.Payload, &t) != nil || t.Run != run {
			continue
		}
		if sc, ok := ParseTraceparent(t.Traceparent); ok {
			return sc
		}
	}
	return trace.SpanContext{}
}

// ParseTraceparent parses a W3C traceparent into a remote span context.
func ParseTraceparent(s string) (trace.SpanContext, bool) {
	parts := strings.Split(s, "-")
	if len(parts) != 4 || parts[0] != "00" || len(parts[3]) != 2 {
		return trace.SpanContext{}, false
	}
	tid, err1 := trace.TraceIDFromHex(parts[1])
	sid, err2 := trace.SpanIDFromHex(parts[2])
	if err1 != nil || err2 != nil {
		return trace.SpanContext{}, false
	}
	var flags trace.TraceFlags
	if parts[3] == "01" {
		flags = trace.FlagsSampled
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: flags, Remote: true})
	return sc, sc.IsValid()
}
