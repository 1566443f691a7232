package cairngenkit_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	cairngenkit "github.com/cairnhq/cairn/contrib/genkit"
	"github.com/firebase/genkit/go/core/x/streaming"
	"github.com/firebase/genkit/go/genkit"
)

// sse reads a Genkit flow's server-sent events: each data line's message
// or result.
type sse struct{ r *bufio.Reader }

// next returns the next event's message (a chunk) or result; final is
// true for the result.
func (s sse) next(t *testing.T) (data string, final bool) {
	t.Helper()
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			t.Fatalf("read the stream: %v", err)
		}
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "data: ") {
			continue
		}
		var ev struct {
			Message json.RawMessage `json:"message"`
			Result  json.RawMessage `json:"result"`
			Error   json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal([]byte(line[6:]), &ev); err != nil {
			t.Fatalf("event %q: %v", line, err)
		}
		switch {
		case ev.Error != nil:
			t.Fatalf("the flow failed: %s", ev.Error)
		case ev.Result != nil:
			return string(ev.Result), true
		}
		return string(ev.Message), false
	}
}

// post calls a flow handler for a stream; streamID resumes one.
func post(t *testing.T, ctx context.Context, url, streamID string) (*http.Response, sse) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(`{"data": 5}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Content-Type", "application/json")
	if streamID != "" {
		req.Header.Set("X-Genkit-Stream-Id", streamID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %s", url, resp.Status)
	}
	return resp, sse{bufio.NewReader(resp.Body)}
}

// TestHandler_DurableStream runs a real Genkit streaming flow behind
// genkit.Handler with a StreamManager: the client leaves after two chunks,
// the flow goes on, and a client of another server, on a store opened
// anew (a restarted process), resumes the stream by its ID and gets every
// chunk and the result.
func TestHandler_DurableStream(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		g := genkit.Init(t.Context())
		gate := make(chan struct{})
		flow := genkit.DefineStreamingFlow(g, "count", func(ctx context.Context, n int, cb func(context.Context, int) error) (string, error) {
			for i := range n {
				if i == 2 {
					<-gate // the client leaves before the third chunk
				}
				if err := cb(ctx, i); err != nil {
					return "", err
				}
			}
			return fmt.Sprintf("counted %d", n), nil
		})
		serve := func() *httptest.Server {
			m := cairngenkit.NewStreamManager(b.open(t), cairngenkit.StreamOptions{})
			srv := httptest.NewServer(genkit.Handler(flow, genkit.WithStreamManager(m)))
			t.Cleanup(srv.Close)
			return srv
		}
		first := serve()
		ctx, leave := context.WithCancel(t.Context())
		resp, events := post(t, ctx, first.URL, "")
		id := resp.Header.Get("X-Genkit-Stream-Id")
		if id == "" {
			t.Fatal("no X-Genkit-Stream-Id in the response")
		}
		for i := range 2 {
			if got, _ := events.next(t); got != fmt.Sprint(i) {
				t.Fatalf("chunk %d = %s", i, got)
			}
		}
		leave()
		resp.Body.Close()
		close(gate)

		second := serve()
		resp, events = post(t, t.Context(), second.URL, id)
		defer resp.Body.Close()
		var got []string
		for {
			data, final := events.next(t)
			if final {
				if data != `"counted 5"` {
					t.Errorf("result = %s; want \"counted 5\"", data)
				}
				break
			}
			got = append(got, data)
		}
		if strings.Join(got, ",") != "0,1,2,3,4" {
			t.Errorf("chunks = %v; want 0..4", got)
		}

		// A reader that had the first two chunks asks for the rest only.
		ch, unsub, err := cairngenkit.NewStreamManager(b.open(t), cairngenkit.StreamOptions{}).SubscribeFrom(t.Context(), id, 2)
		if err != nil {
			t.Fatal(err)
		}
		defer unsub()
		chunks, end := collect(t, ch)
		if strings.Join(chunks, ",") != "2,3,4" || end.Type != streaming.StreamEventDone || string(end.Output) != `"counted 5"` {
			t.Errorf("from chunk 2: %v, %+v; want 2,3,4 and done", chunks, end)
		}
	})
}
