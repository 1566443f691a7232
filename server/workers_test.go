package server

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/store/memory"
	"github.com/cairnhq/cairn/worker"
)

// workersFixture fills a store with sessions in every state the workers
// view tells apart, on a clock the test moves.
func workersFixture(t testing.TB, start time.Time) (cairn.Store, *atomic.Int64) {
	t.Helper()
	var clock atomic.Int64
	clock.Store(start.UnixNano())
	st, err := memory.New(cairn.StoreOptions{Now: func() time.Time { return time.Unix(0, clock.Load()) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ctx := t.Context()
	tick := func(d time.Duration) { clock.Add(int64(d)) }
	enqueue := func(id, queue, input string) {
		t.Helper()
		if _, err := worker.Enqueue(ctx, st, input, worker.EnqueueOptions{ID: id, Queue: queue}); err != nil {
			t.Fatal(err)
		}
		tick(time.Minute)
	}
	var l cairn.Leaser = st
	start1 := func(id string) {
		t.Helper()
		rec, err := st.Load(ctx, id, 1)
		if err != nil {
			t.Fatal(err)
		}
		e := cairn.MustEvent(cairn.KindRunStarted, "r1", cairn.RunStarted{RunID: "r1", Agent: "mailer"})
		e.Seq, e.At = rec.Info.LastSeq+1, time.Unix(0, clock.Load())
		if err := st.Append(ctx, id, rec.Info.LastSeq, e); err != nil {
			t.Fatal(err)
		}
	}
	enqueue("mail-old", "mail", "sort the inbox")
	enqueue("mail-new", "mail", "answer <Ada>")
	enqueue("mail-run", "mail", "file the receipts")
	enqueue("mail-dead", "mail", "summarise the week")
	enqueue("bill-1", "billing", "send the invoices")
	enqueue("bill-done", "billing", "done already")
	// mail-dead: its first worker stalled, the next took it over and died
	// (both leases ran out).
	start1("mail-dead")
	if _, err := l.Acquire(ctx, "mail-dead", "worker-stalled", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	tick(time.Minute)
	if _, err := l.Acquire(ctx, "mail-dead", "worker-gone", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	tick(2 * time.Minute)
	// mail-run: held by worker-a, after a takeover from worker-b.
	start1("mail-run")
	if _, err := l.Acquire(ctx, "mail-run", "worker-b", 30*time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Takeover(ctx, "mail-run", "worker-a", 30*time.Minute); err != nil {
		t.Fatal(err)
	}
	// bill-done: finished; not shown.
	start1("bill-done")
	fin := cairn.MustEvent(cairn.KindRunFinished, "r1", cairn.RunFinished{Status: cairn.StatusCompleted})
	fin.Seq, fin.At = 3, time.Unix(0, clock.Load())
	if err := st.Append(ctx, "bill-done", 2, fin); err != nil {
		t.Fatal(err)
	}
	// chat: not queued, held by a cairn command.
	if err := st.Create(ctx, cairn.SessionMeta{ID: "chat"}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(ctx, "chat", "laptop:4242", 20*time.Minute); err != nil {
		t.Fatal(err)
	}
	return st, &clock
}

func TestAPI_Workers(t *testing.T) {
	st, _ := workersFixture(t, time.Now().Add(-10*time.Minute))
	h := newHarness(t, st, Config{})
	var rep workersReport
	r := h.do("GET", "/api/workers", nil)
	wantStatus(t, "the workers view", r, http.StatusOK)
	r.Decode(t, &rep)
	if !rep.Leases || rep.Capped || rep.Read != 6 {
		t.Errorf("leases %v, capped %v, read %d; want true, false, 6 (every session but the finished one)", rep.Leases, rep.Capped, rep.Read)
	}
	var order []string
	for _, s := range rep.Sessions {
		order = append(order, s.ID+":"+s.State)
	}
	// Running first, soonest expiry first; then the stalled; then the
	// waiting, longest waiting first.
	if got, want := strings.Join(order, " "), "chat:running mail-run:running mail-dead:stalled mail-old:waiting mail-new:waiting bill-1:waiting"; got != want {
		t.Errorf("the sessions:\n got %s\nwant %s", got, want)
	}
	if s := rep.Sessions[1]; s.Holder != "worker-a" || s.Token == 0 || s.Expires == nil || s.Queue != "mail" || s.Takeovers != 1 {
		t.Errorf("mail-run: %+v; want held by worker-a, with the lease's token, taken over once", s)
	}
	if s := rep.Sessions[2]; s.Holder != "" || s.Takeovers != 1 {
		t.Errorf("mail-dead: %+v; want no holder, taken over once", s)
	}
	if s := rep.Sessions[4]; s.Input != "answer <Ada>" {
		t.Errorf("mail-new's input: %q, want the queued input", s.Input)
	}
	if s := rep.Sessions[1]; s.Input != "file the receipts" {
		t.Errorf("mail-run's input: %q, want the queued input of a run under way", s.Input)
	}
	queues := map[string]workerQueue{}
	for _, q := range rep.Queues {
		queues[q.Queue] = q
	}
	if q := queues["mail"]; q.States[workWaiting] != 2 || q.States[workRunning] != 1 || q.States[workStalled] != 1 || q.OldestWaiting == nil || q.Takeovers != 2 {
		t.Errorf("the mail queue: %+v", q)
	}
	if q := queues["billing"]; q.States[workWaiting] != 1 || len(q.States) != 1 {
		t.Errorf("the billing queue: %+v", q)
	}
	if q, ok := queues[""]; !ok || q.States[workRunning] != 1 {
		t.Errorf("the sessions in no queue: %+v", q)
	}
	if len(rep.Holders) != 2 || rep.Holders[0].Holder != "laptop:4242" || rep.Holders[1].Holder != "worker-a" || rep.Holders[1].Sessions != 1 {
		t.Errorf("the holders: %+v", rep.Holders)
	}
}

func TestUI_Workers(t *testing.T) {
	st, _ := workersFixture(t, time.Now().Add(-10*time.Minute))
	h := newHarness(t, st, Config{})
	cookie, _ := signIn(t, h)
	r := h.doWith("GET", "/workers", nil, map[string]string{"Cookie": CookieName + "=" + cookie})
	wantStatus(t, "the workers page", r, http.StatusOK)
	body := string(r.Body)
	for _, want := range []string{
		`href="/workers"`, `<tr data-queue="mail">`, `href="/sessions?label=cairn.queue%3Dmail"`,
		`<tr data-id="mail-dead" data-state="stalled">`, `<tr data-holder="worker-a">`, `<code>laptop:4242</code>`,
		`answer &lt;Ada&gt;`, `href="/sessions/mail-run"`, `>no queue<`, `<td class="num takeovers">2</td>`, `<td class="num takeovers">1</td>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the workers page lacks %s", want)
		}
	}
	if strings.Contains(body, "bill-done") || strings.Contains(body, `id="no-leases"`) {
		t.Error("the workers page shows a finished session, or says the store has no leases")
	}

	// A store without leases: no worker can run on it, and the page says so.
	bare := newHarness(t, struct{ cairn.Store }{st}, Config{})
	cookie, _ = signIn(t, bare)
	r = bare.doWith("GET", "/workers", nil, map[string]string{"Cookie": CookieName + "=" + cookie})
	wantStatus(t, "the workers page of a store without leases", r, http.StatusOK)
	if body := string(r.Body); !strings.Contains(body, `id="no-leases"`) || !strings.Contains(body, `data-id="mail-new" data-state="waiting"`) {
		t.Errorf("the workers page of a store without leases: %s", clipBody([]byte(body[strings.Index(body, "<main"):])))
	}
}
