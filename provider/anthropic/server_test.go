package anthropic

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/cairnhq/cairn/internal/testing/providertest"
	"github.com/cairnhq/cairn/provider"
)

// api tells the scenarios of providertest how the Messages API answers.
var api = providertest.API{
	Model: func(t *testing.T, s *providertest.Server, retries int) provider.Model {
		return newModel(t, s, Config{MaxRetries: retries})
	},
	Text: func(w http.ResponseWriter, text string) {
		writeSSE(w, messageStart(1), textStart(0), textDelta(0, text), blockStop(0), messageDelta("end_turn", 1), messageStop)
	},
	Begin: func(w http.ResponseWriter, text string) {
		writeSSE(w, messageStart(1), textStart(0), textDelta(0, text))
	},
	Error: writeError,
}

// event is one server-sent event of the Messages stream.
type event = providertest.Event

// writeSSE writes each event, flushing after each.
func writeSSE(w http.ResponseWriter, events ...event) { providertest.WriteEvents(w, events...) }

func messageStart(inputTokens int) event {
	return event{Name: "message_start", Data: fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":%d,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}`, inputTokens)}
}

func textStart(i int) event {
	return event{Name: "content_block_start", Data: fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"text","text":""}}`, i)}
}

func toolStart(i int, id, name string) event {
	return event{Name: "content_block_start", Data: fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"tool_use","id":%q,"name":%q,"input":{}}}`, i, id, name)}
}

func textDelta(i int, s string) event {
	b, _ := json.Marshal(s)
	return event{Name: "content_block_delta", Data: fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":%s}}`, i, b)}
}

func inputDelta(i int, partial string) event {
	b, _ := json.Marshal(partial)
	return event{Name: "content_block_delta", Data: fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"input_json_delta","partial_json":%s}}`, i, b)}
}

func blockStop(i int) event {
	return event{Name: "content_block_stop", Data: fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i)}
}

func messageDelta(stop string, outputTokens int) event {
	return event{Name: "message_delta", Data: fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null},"usage":{"output_tokens":%d}}`, stop, outputTokens)}
}

var (
	ping        = event{Name: "ping", Data: `{"type":"ping"}`}
	messageStop = event{Name: "message_stop", Data: `{"type":"message_stop"}`}
)

// writeError answers with a Messages API error body.
func writeError(w http.ResponseWriter, status int, typ, msg string, header map[string]string) {
	w.Header().Set("Request-Id", "req_test")
	providertest.WriteError(w, status, header, fmt.Sprintf(`{"type":"error","error":{"type":%q,"message":%q}}`, typ, msg))
}
