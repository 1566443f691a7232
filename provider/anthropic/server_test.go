package anthropic

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"testing"

	"github.com/cairnhq/cairn/internal/providertest"
)

// server is a local Messages API endpoint (see providertest).
type server = providertest.Server

func newServer(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, n int, done <-chan struct{})) *server {
	t.Helper()
	return providertest.NewServer(t, handle)
}

// event is one server-sent event of the Messages stream.
type event struct{ name, data string }

// writeSSE writes each event, flushing after each.
func writeSSE(w http.ResponseWriter, events ...event) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	for _, e := range events {
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e.name, e.data)
		if f != nil {
			f.Flush()
		}
	}
}

func messageStart(inputTokens int) event {
	return event{"message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":%d,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}`, inputTokens)}
}

func textStart(i int) event {
	return event{"content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"text","text":""}}`, i)}
}

func toolStart(i int, id, name string) event {
	return event{"content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"tool_use","id":%q,"name":%q,"input":{}}}`, i, id, name)}
}

func textDelta(i int, s string) event {
	b, _ := json.Marshal(s)
	return event{"content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":%s}}`, i, b)}
}

func inputDelta(i int, partial string) event {
	b, _ := json.Marshal(partial)
	return event{"content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"input_json_delta","partial_json":%s}}`, i, b)}
}

func blockStop(i int) event {
	return event{"content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i)}
}

func messageDelta(stop string, outputTokens int) event {
	return event{"message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null},"usage":{"output_tokens":%d}}`, stop, outputTokens)}
}

var (
	ping        = event{"ping", `{"type":"ping"}`}
	messageStop = event{"message_stop", `{"type":"message_stop"}`}
)

// writeError answers with a Messages API error body.
func writeError(w http.ResponseWriter, status int, typ, msg string, header map[string]string) {
	for k, v := range header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Request-Id", "req_test")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"type":"error","error":{"type":%q,"message":%q}}`, typ, msg)
}

// jsonEqual reports whether two JSON documents hold the same value.
func jsonEqual(t *testing.T, got, want []byte) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got invalid JSON %s: %v", got, err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("want invalid JSON %s: %v", want, err)
	}
	return reflect.DeepEqual(g, w)
}
