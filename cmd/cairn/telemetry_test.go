package main

import (
	"compress/gzip"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is an OTLP/HTTP endpoint: it decodes the protobuf export
// requests that the exporters post to /v1/traces and /v1/metrics, as a
// collector does, and keeps what they hold.
type otlpReceiver struct {
	*httptest.Server
	mu       sync.Mutex
	spans    []gotSpan
	metrics  map[string]int // data points by metric name
	services map[string]bool
}

// gotSpan is a received span, with its attributes as strings.
type gotSpan struct {
	*tracepb.Span
	attrs map[string]string
}

func (s gotSpan) traceID() string { return hex.EncodeToString(s.TraceId) }
func (s gotSpan) parent() string  { return hex.EncodeToString(s.ParentSpanId) }

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{metrics: map[string]int{}, services: map[string]bool{}}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve(t)))
	t.Cleanup(r.Close)
	return r
}

func (r *otlpReceiver) serve(t *testing.T) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, req *http.Request) {
		if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
			t.Errorf("OTLP export with Content-Type %q, want application/x-protobuf", ct)
			http.Error(w, "want protobuf", http.StatusUnsupportedMediaType)
			return
		}
		var body io.Reader = req.Body
		if req.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(req.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		data, err := io.ReadAll(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var resp proto.Message
		switch req.URL.Path {
		case "/v1/traces":
			var m coltracepb.ExportTraceServiceRequest
			if err := proto.Unmarshal(data, &m); err != nil {
				t.Errorf("decode ExportTraceServiceRequest: %v", err)
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			r.addSpans(&m)
			resp = &coltracepb.ExportTraceServiceResponse{}
		case "/v1/metrics":
			var m colmetricpb.ExportMetricsServiceRequest
			if err := proto.Unmarshal(data, &m); err != nil {
				t.Errorf("decode ExportMetricsServiceRequest: %v", err)
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			r.addMetrics(&m)
			resp = &colmetricpb.ExportMetricsServiceResponse{}
		default:
			http.NotFound(w, req)
			return
		}
		out, _ := proto.Marshal(resp)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}
}

func (r *otlpReceiver) addSpans(m *coltracepb.ExportTraceServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range m.ResourceSpans {
		r.services[attrString(rs.GetResource().GetAttributes())["service.name"]] = true
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				r.spans = append(r.spans, gotSpan{s, attrString(s.Attributes)})
			}
		}
	}
}

func (r *otlpReceiver) addMetrics(m *colmetricpb.ExportMetricsServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rm := range m.ResourceMetrics {
		for _, sm := range rm.ScopeMetrics {
			for _, met := range sm.Metrics {
				for _, p := range met.GetHistogram().GetDataPoints() {
					r.metrics[met.Name] += int(p.Count)
				}
			}
		}
	}
}

func attrString(kvs []*commonpb.KeyValue) map[string]string {
	out := map[string]string{}
	for _, kv := range kvs {
		v := kv.Value
		switch {
		case v.GetArrayValue() != nil:
			var parts []string
			for _, e := range v.GetArrayValue().Values {
				parts = append(parts, e.GetStringValue())
			}
			out[kv.Key] = strings.Join(parts, ",")
		case v.GetIntValue() != 0:
			out[kv.Key] = fmt.Sprint(v.GetIntValue())
		case v.GetBoolValue():
			out[kv.Key] = "true"
		default:
			out[kv.Key] = v.GetStringValue()
			if out[kv.Key] == "" {
				if _, ok := v.Value.(*commonpb.AnyValue_IntValue); ok {
					out[kv.Key] = "0"
				} else if _, ok := v.Value.(*commonpb.AnyValue_BoolValue); ok {
					out[kv.Key] = "false"
				}
			}
		}
	}
	return out
}

// received returns a copy of the spans received so far.
func (r *otlpReceiver) received() []gotSpan {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]gotSpan(nil), r.spans...)
}

func named(spans []gotSpan, prefix string) []gotSpan {
	var out []gotSpan
	for _, s := range spans {
		if strings.HasPrefix(s.Name, prefix) {
			out = append(out, s)
		}
	}
	return out
}

// TestTelemetry_OTLPCrashResume runs `cairn run` exporting to a real
// OTLP/HTTP receiver, kills it with SIGKILL in the middle of the run, and
// finishes the run with `cairn sessions resume`: the receiver decodes the
// protobuf exports of both processes, and the resumed run's span links to
// the span of the run that the killed process started.
func TestTelemetry_OTLPCrashResume(t *testing.T) {
	recv := newOTLPReceiver(t)
	c := newCLIEnv(t)
	c.env = append(c.env,
		"OTEL_EXPORTER_OTLP_ENDPOINT="+recv.URL,
		"OTEL_SERVICE_NAME=cairn-otlp-test",
		"OTEL_BSP_SCHEDULE_DELAY=20", // export the killed process's spans as they end
		"OTEL_METRIC_EXPORT_INTERVAL=100",
	)
	var steps []string
	for i := range 6 {
		steps = append(steps, fmt.Sprintf(`{"text":"step %d","tool_calls":[{"name":"calc","arguments":{"expression":"%d+1"}}],"delay_ms":100}`, i, i))
	}
	steps = append(steps, `{"text":"all done","delay_ms":50}`)
	model := "script:" + c.writeFile("slow.json", `{"steps":[`+strings.Join(steps, ",")+`]}`)

	cmd, out := c.start("--model", model, "run", "--session", "otel-crash", "count slowly")
	// Kill once the receiver holds two of the run's tool calls: the
	// process is then in the middle of the run.
	midRun := within(60*time.Second, 20*time.Millisecond, func() bool {
		return len(named(recv.received(), "execute_tool calc")) >= 2
	})
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if !midRun {
		t.Fatalf("the receiver never got two execute_tool spans from the running process:\n%s", out.String())
	}
	before := recv.received()
	if n := len(named(before, "invoke_agent")); n != 0 {
		t.Fatalf("got %d run spans before the kill; the killed run's span never ends", n)
	}
	firstChat := named(before, "chat ")[0]
	killedRun, killedTrace := firstChat.parent(), firstChat.traceID()

	stdout, stderr, code := c.run("sessions", "resume", "otel-crash")
	if code != 0 || !strings.Contains(stdout, "all done") {
		t.Fatalf("resume: exit %d\n%s%s", code, stdout, stderr)
	}
	// The resume exits after flushing: every span is in.
	all := recv.received()
	after := all[len(before):]
	runs := named(after, "invoke_agent")
	if len(runs) != 1 {
		t.Fatalf("got %d run spans from the resume, want 1", len(runs))
	}
	run := runs[0]
	for k, want := range map[string]string{
		"gen_ai.operation.name":  "invoke_agent",
		"gen_ai.conversation.id": "otel-crash",
		"gen_ai.provider.name":   "cairn.script",
		"cairn.run.resumed":      "true",
		"cairn.run.status":       "completed",
	} {
		if got := run.attrs[k]; got != want {
			t.Errorf("resumed run span: %s = %q, want %q", k, got, want)
		}
	}
	if len(run.Links) != 1 {
		t.Fatalf("resumed run span has %d links, want 1 to the killed run's span", len(run.Links))
	}
	link := run.Links[0]
	if got := hex.EncodeToString(link.SpanId); got != killedRun {
		t.Errorf("the resumed run links to span %s, want the killed run's %s (the parent of its chat spans)", got, killedRun)
	}
	if got := hex.EncodeToString(link.TraceId); got != killedTrace {
		t.Errorf("the resumed run links to trace %s, want the killed run's %s", got, killedTrace)
	}
	if got := attrString(link.Attributes)["cairn.run.id"]; got == "" || got != run.attrs["cairn.run.id"] {
		t.Errorf("the link's cairn.run.id = %q, want the run's %q", got, run.attrs["cairn.run.id"])
	}

	// Every chat, tool and append span, of both processes, is named and
	// attributed as the conventions say, and a child of its process's run.
	chats := named(all, "chat ")
	if len(chats) < 7 {
		t.Errorf("got %d chat spans, want at least the 7 steps of the script", len(chats))
	}
	for _, s := range chats {
		if s.Kind != tracepb.Span_SPAN_KIND_CLIENT {
			t.Errorf("chat span kind %v, want client", s.Kind)
		}
		for _, k := range []string{"gen_ai.request.model", "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "gen_ai.response.finish_reasons"} {
			if _, ok := s.attrs[k]; !ok {
				t.Errorf("chat span %q has no %s: %v", s.Name, k, s.attrs)
			}
		}
		if s.attrs["gen_ai.operation.name"] != "chat" || s.attrs["gen_ai.conversation.id"] != "otel-crash" {
			t.Errorf("chat span attributes: %v", s.attrs)
		}
		if _, ok := s.attrs["gen_ai.input.messages"]; ok {
			t.Error("chat span holds the input messages without the opt-in")
		}
	}
	for _, s := range named(all, "execute_tool") {
		if s.Name != "execute_tool calc" || s.attrs["gen_ai.tool.name"] != "calc" || s.attrs["gen_ai.tool.call.id"] == "" || s.attrs["cairn.tool.safety"] != "idempotent" {
			t.Errorf("execute_tool span %q: %v", s.Name, s.attrs)
		}
	}
	appends := named(all, "cairn.append")
	if len(appends) == 0 {
		t.Fatal("no cairn.append span")
	}
	seqs := map[string]bool{}
	for _, s := range appends {
		if s.attrs["cairn.store.backend"] != "sqlite" || s.attrs["cairn.append.seq"] == "" {
			t.Errorf("cairn.append span attributes: %v", s.attrs)
		}
		seqs[s.attrs["cairn.append.seq"]] = true
	}
	if !seqs["1"] {
		t.Error("no cairn.append span of seq 1, the run's start")
	}
	for _, s := range after {
		if s.traceID() != run.traceID() {
			t.Errorf("span %q of the resume is in trace %s, want the resumed run's %s", s.Name, s.traceID(), run.traceID())
		}
	}
	recv.mu.Lock()
	defer recv.mu.Unlock()
	if !recv.services["cairn-otlp-test"] {
		t.Errorf("service names %v, want OTEL_SERVICE_NAME's cairn-otlp-test", recv.services)
	}
	if recv.metrics["gen_ai.client.token.usage"] == 0 || recv.metrics["gen_ai.client.operation.duration"] == 0 {
		t.Errorf("metrics received: %v, want gen_ai.client.token.usage and gen_ai.client.operation.duration", recv.metrics)
	}
}

// TestTelemetry_Off checks that with no OTEL_* variable the command sends
// nothing, and that a bad exporter name is refused with a hint.
func TestTelemetry_Off(t *testing.T) {
	c := newCLIEnv(t)
	stdout, stderr, code := c.run("run", "--session", "quiet", "calc 2+2")
	if code != 0 || strings.Contains(stderr, "invoke_agent") {
		t.Fatalf("run without telemetry: exit %d\n%s%s", code, stdout, stderr)
	}
	shown := c.mustShow("quiet")
	for _, e := range shown.Events {
		if e.Kind == "custom" {
			t.Errorf("a custom event with telemetry off: %s", e.Data)
		}
	}
	c.env = append(c.env, "OTEL_TRACES_EXPORTER=jaeger")
	_, stderr, code = c.run("run", "--session", "quiet2", "hello")
	if code != 2 || !strings.Contains(stderr, `OTEL_TRACES_EXPORTER is "jaeger"`) || !strings.Contains(stderr, "hint:") {
		t.Errorf("an unknown exporter: exit %d, want 2 with the variable named\n%s", code, stderr)
	}
}
