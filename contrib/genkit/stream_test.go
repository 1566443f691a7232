package cairngenkit_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	cairngenkit "github.com/cairnhq/cairn/contrib/genkit"
	"github.com/firebase/genkit/go/core"
	"github.com/firebase/genkit/go/core/x/streaming"
)

func TestStreamManager(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		t.Run("Live", func(t *testing.T) { testStreamLive(t, b) })
		t.Run("Restart", func(t *testing.T) { testStreamRestart(t, b) })
		t.Run("Error", func(t *testing.T) { testStreamError(t, b) })
		t.Run("Errors", func(t *testing.T) { testStreamErrors(t, b) })
		t.Run("Idle", func(t *testing.T) { testStreamIdle(t, b) })
	})
}

// collect reads ch to its end.
func collect(t *testing.T, ch <-chan streaming.StreamEvent) (chunks []string, end streaming.StreamEvent) {
	t.Helper()
	for ev := range ch {
		switch ev.Type {
		case streaming.StreamEventChunk:
			chunks = append(chunks, string(ev.Chunk))
		default:
			end = ev
		}
	}
	return chunks, end
}

// testStreamLive: a subscriber of another manager (another process) sees
// the chunks as they come, and the result.
func testStreamLive(t *testing.T, b backend) {
	ctx := t.Context()
	w := cairngenkit.NewStreamManager(b.open(t), cairngenkit.StreamOptions{})
	r := cairngenkit.NewStreamManager(b.open(t), cairngenkit.StreamOptions{})
	in, err := w.Open(ctx, "live1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Open(ctx, "live1"); !isStatus(err, core.ALREADY_EXISTS) {
		t.Errorf("second Open: %v; want ALREADY_EXISTS", err)
	}
	ch, unsub, err := r.Subscribe(ctx, "live1")
	if err != nil {
		t.Fatal(err)
	}
	defer unsub()
	for i := range 3 {
		if err := in.Write(ctx, json.RawMessage(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
		// Each chunk reaches the subscriber before the next is written.
		ev := <-ch
		if ev.Type != streaming.StreamEventChunk || string(ev.Chunk) != fmt.Sprint(i) {
			t.Fatalf("event %d = %+v; want chunk %d", i, ev, i)
		}
	}
	if err := in.Done(ctx, json.RawMessage(`{"total":3}`)); err != nil {
		t.Fatal(err)
	}
	if err := in.Write(ctx, json.RawMessage(`4`)); !isStatus(err, core.FAILED_PRECONDITION) {
		t.Errorf("Write after Done: %v; want FAILED_PRECONDITION", err)
	}
	chunks, end := collect(t, ch)
	if len(chunks) != 0 || end.Type != streaming.StreamEventDone || string(end.Output) != `{"total":3}` {
		t.Errorf("rest = %v, %+v; want only done {\"total\":3}", chunks, end)
	}
	info, err := b.open(t).Stat(ctx, "live1")
	if err != nil || info.Status != cairn.StatusCompleted {
		t.Errorf("cairn status = %v, %v; want completed", info, err)
	}
}

// testStreamRestart: the writer stops midway; a reader that comes back
// with a store opened anew gets the chunks it lacks, from where it left,
// and the result once a writer finishes the stream.
func testStreamRestart(t *testing.T, b backend) {
	ctx := t.Context()
	cs := b.open(t)
	w := cairngenkit.NewStreamManager(cs, cairngenkit.StreamOptions{})
	in, err := w.Open(ctx, "rs1")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := in.Write(ctx, json.RawMessage(fmt.Sprintf(`"c%d"`, i))); err != nil {
			t.Fatal(err)
		}
	}
	// The first reader reads two chunks and goes away.
	ch, unsub, err := w.Subscribe(ctx, "rs1")
	if err != nil {
		t.Fatal(err)
	}
	<-ch
	<-ch
	unsub()
	for range ch { // unsubscribe closed it; what was buffered may remain
	}
	// It comes back through another store (a restarted process).
	r := cairngenkit.NewStreamManager(b.open(t), cairngenkit.StreamOptions{})
	ch, unsub, err = r.SubscribeFrom(ctx, "rs1", 2)
	if err != nil {
		t.Fatal(err)
	}
	defer unsub()
	for i := 2; i < 5; i++ {
		if ev := <-ch; string(ev.Chunk) != fmt.Sprintf(`"c%d"`, i) {
			t.Fatalf("chunk %d = %+v", i, ev)
		}
	}
	if err := in.Write(ctx, json.RawMessage(`"c5"`)); err != nil {
		t.Fatal(err)
	}
	if err := in.Done(ctx, json.RawMessage(`"end"`)); err != nil {
		t.Fatal(err)
	}
	chunks, end := collect(t, ch)
	if len(chunks) != 1 || chunks[0] != `"c5"` || end.Type != streaming.StreamEventDone || string(end.Output) != `"end"` {
		t.Errorf("rest = %v, %+v; want c5 then done \"end\"", chunks, end)
	}
	// A subscriber of the finished stream gets all of it.
	ch2, unsub2, err := r.Subscribe(ctx, "rs1")
	if err != nil {
		t.Fatal(err)
	}
	defer unsub2()
	if chunks, end := collect(t, ch2); len(chunks) != 6 || end.Type != streaming.StreamEventDone {
		t.Errorf("finished stream = %v, %+v; want 6 chunks and done", chunks, end)
	}
}

// testStreamError: a stream ended by an error gives the error's status and
// message to every subscriber, and the session is failed for cairn.
func testStreamError(t *testing.T, b backend) {
	ctx := t.Context()
	m := cairngenkit.NewStreamManager(b.open(t), cairngenkit.StreamOptions{})
	in, err := m.Open(ctx, "err1")
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Write(ctx, json.RawMessage(`1`)); err != nil {
		t.Fatal(err)
	}
	if err := in.Error(ctx, core.NewPublicError(core.RESOURCE_EXHAUSTED, "quota", nil)); err != nil {
		t.Fatal(err)
	}
	ch, unsub, err := cairngenkit.NewStreamManager(b.open(t), cairngenkit.StreamOptions{}).Subscribe(ctx, "err1")
	if err != nil {
		t.Fatal(err)
	}
	defer unsub()
	chunks, end := collect(t, ch)
	if len(chunks) != 1 || end.Type != streaming.StreamEventError || !isStatus(end.Err, core.RESOURCE_EXHAUSTED) || end.Err.(*core.UserFacingError).Message != "quota" {
		t.Errorf("stream = %v, %+v; want one chunk and RESOURCE_EXHAUSTED quota", chunks, end)
	}
	info, err := b.open(t).Stat(ctx, "err1")
	if err != nil || info.Status != cairn.StatusFailed {
		t.Errorf("cairn status = %v, %v; want failed", info, err)
	}
}

func testStreamErrors(t *testing.T, b backend) {
	ctx := t.Context()
	m := cairngenkit.NewStreamManager(b.open(t), cairngenkit.StreamOptions{})
	if _, _, err := m.Subscribe(ctx, "none"); !isStatus(err, core.NOT_FOUND) {
		t.Errorf("Subscribe to a missing stream: %v; want NOT_FOUND", err)
	}
	if _, err := m.Open(ctx, "a/b"); !errors.Is(err, cairn.ErrInvalidID) {
		t.Errorf("Open a/b: %v; want ErrInvalidID", err)
	}
	in, err := m.Open(ctx, "bad1")
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Write(ctx, json.RawMessage(`{`)); err == nil {
		t.Error("Write of a chunk that is not JSON: no error")
	}
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	if err := in.Done(ctx, nil); !isStatus(err, core.FAILED_PRECONDITION) {
		t.Errorf("Done after Close: %v; want FAILED_PRECONDITION", err)
	}
}

func isStatus(err error, s core.StatusName) bool {
	var uf *core.UserFacingError
	return errors.As(err, &uf) && uf.Status == s
}

// testStreamIdle: a writer stops without ending its stream; a subscriber
// with Idle gets the chunks, then DEADLINE_EXCEEDED, instead of waiting
// for ever.
func testStreamIdle(t *testing.T, b backend) {
	ctx := t.Context()
	in, err := cairngenkit.NewStreamManager(b.open(t), cairngenkit.StreamOptions{}).Open(ctx, "idle1")
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Write(ctx, json.RawMessage(`1`)); err != nil {
		t.Fatal(err)
	}
	in.Close() // the writer goes away
	m := cairngenkit.NewStreamManager(b.open(t), cairngenkit.StreamOptions{Idle: time.Millisecond, Poll: time.Millisecond})
	ch, unsub, err := m.Subscribe(ctx, "idle1")
	if err != nil {
		t.Fatal(err)
	}
	defer unsub()
	chunks, end := collect(t, ch)
	if len(chunks) != 1 || end.Type != streaming.StreamEventError || !isStatus(end.Err, core.DEADLINE_EXCEEDED) {
		t.Errorf("abandoned stream = %v, %+v; want one chunk and DEADLINE_EXCEEDED", chunks, end)
	}
}
