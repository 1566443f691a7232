package server

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/testcheck"
	"github.com/cairnhq/cairn/longterm"
	"github.com/cairnhq/cairn/store/storetest"
)

// The browser tests drive the inspector in a real Chromium, headless, on
// the SQLite store: the flows a person follows. CAIRN_TEST_CHROMIUM names
// the browser; without it "chromium" is looked up on PATH. A missing
// browser skips these tests locally and fails them under CI.

// browser is one headless Chromium tab signed in to a harness.
type browser struct {
	t   *testing.T
	h   *harness
	ctx context.Context
}

// waitLimit bounds each browser step, so that a page that never shows
// what a test waits for fails the test instead of hanging it.
const waitLimit = 60 * time.Second

func chromiumPath(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("CAIRN_TEST_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("CAIRN_TEST_CHROMIUM is not set and no chromium is on PATH: CI must run the browser tests (see .ci/run)")
	}
	t.Skip("CAIRN_TEST_CHROMIUM is not set and no chromium is on PATH: install chromium to run the browser tests")
	return ""
}

// newBrowser starts Chromium and signs it in to h with a one-time link.
func newBrowser(t *testing.T, h *harness) *browser {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	b := &browser{t: t, h: h, ctx: ctx}
	// Script errors and refusals of the page's policy (CSP) fail the test.
	var mu sync.Mutex
	var problems []string
	if err := chromedp.Listen(ctx, func(ev any) {
		var p string
		switch e := ev.(type) {
		case *runtime.EventExceptionThrown:
			p = "exception: " + e.ExceptionDetails.Text
			if e.ExceptionDetails.Exception != nil {
				p += " " + e.ExceptionDetails.Exception.Description
			}
		case *cdplog.EventEntryAdded:
			if e.Entry.Level == cdplog.EntryLevelError && e.Entry.Source != cdplog.EntrySourceNetwork {
				p = string(e.Entry.Source) + ": " + e.Entry.Text
			}
		}
		if p != "" {
			mu.Lock()
			problems = append(problems, p)
			mu.Unlock()
		}
	}); err != nil {
		t.Fatalf("start the browser: %v", err)
	}
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range problems {
			t.Errorf("the page reported %s", p)
		}
	})
	if err := chromedp.Do(ctx, chromedp.Navigate(h.srv.LoginURL(h.ts.URL))); err != nil {
		t.Fatalf("start the browser and sign in: %v", err)
	}
	b.wait("#sessions")
	return b
}

// do runs steps, each bounded by waitLimit.
func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, waitLimit)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// nav runs steps that load a new page (a click on a link or a form's
// button) and waits for it.
func (b *browser) nav(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, waitLimit)
	defer cancel()
	if _, err := chromedp.RunResponse(ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

func (b *browser) open(path string) {
	b.t.Helper()
	b.do("open "+path, chromedp.Navigate(b.h.ts.URL+path))
}

func (b *browser) wait(sel string) {
	b.t.Helper()
	b.do("wait for "+sel, chromedp.WaitVisible(chromedp.CSS(sel)))
}

// until waits for a JavaScript expression to be true.
func (b *browser) until(what, expr string) {
	b.t.Helper()
	b.do(what, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(waitLimit))(ctx, t)
		return err
	}))
}

// get runs an action that yields a value, bounded by waitLimit.
func get[T any](b *browser, what string, a chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, waitLimit)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
	return v
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	return get(b, "text of "+sel, chromedp.Text(chromedp.CSS(sel)))
}

func evalJS[T any](b *browser, expr string) T {
	b.t.Helper()
	return get(b, "evaluate "+expr, chromedp.Evaluate[T](expr))
}

func evalJSAwait[T any](b *browser, expr string) T {
	b.t.Helper()
	return get(b, "evaluate "+expr, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
}

// browserHarness serves a SQLite store with the fixture agent.
func browserHarness(t *testing.T) (*harness, string) {
	return browserHarnessNotes(t, t.TempDir()+"/notes.txt")
}

// browserHarnessNotes is browserHarness with the file the fixture agent
// asks to append to.
func browserHarnessNotes(t *testing.T, notes string) (*harness, string) {
	h := newHarness(t, sqliteStore(t), Config{Agent: fixtureAgent(t, notes), PollInterval: 100 * time.Millisecond})
	return h, notes
}

func TestBrowser_SessionsPage(t *testing.T) {
	h, _ := browserHarness(t)
	awaitingSession(t, h.store, h.srv.cfg.Agent, "trip")
	writeSession(t, h.store, "math", chatEvents(14))
	b := newBrowser(t, h)

	for _, id := range []string{"trip", "math"} {
		b.wait(`tr[data-id="` + id + `"]`)
	}
	if got := b.text(`tr[data-id="trip"] .status`); got != "awaiting_approval" {
		t.Errorf("trip's status: %q", got)
	}
	if got := b.text(`tr[data-id="trip"] td.first`); !strings.Contains(got, "going to Lisbon") {
		t.Errorf("trip's first message: %q", got)
	}
	if got := b.text(`tr[data-id="trip"]`); !strings.Contains(got, "team=travel") {
		t.Errorf("trip's row shows no label: %q", got)
	}

	// The keyboard: "/" goes to the search box; a search by first message.
	b.do("search", chromedp.KeyEvent("/"))
	b.until("the search box has the focus", `document.activeElement && document.activeElement.id === "q"`)
	// A browser types nothing for a key whose keydown was taken; the
	// protocol's synthetic key sends its character all the same.
	evalJS[string](b, `document.querySelector("#q").value = ""`)
	b.nav("type a search", chromedp.KeyEvent("lisbon\r"))
	b.until("the search shows trip alone", `document.querySelectorAll("#session-rows tr[data-id]").length === 1 && !!document.querySelector('tr[data-id="trip"]')`)

	// A filter by status.
	b.open("/sessions?status=completed")
	b.until("the filter shows math alone", `document.querySelectorAll("#session-rows tr[data-id]").length === 1 && !!document.querySelector('tr[data-id="math"]')`)

	// The first page follows the store.
	b.open("/sessions")
	writeSession(t, h.store, "late", chatEvents(3))
	b.wait(`tr[data-id="late"]`)
	if first := evalJS[string](b, `document.querySelector("#session-rows tr").dataset.id`); first != "late" {
		t.Errorf("the newest session is %q, want late first", first)
	}
}

func TestBrowser_TimeTravel(t *testing.T) {
	h, _ := browserHarness(t)
	awaitingSession(t, h.store, h.srv.cfg.Agent, "trip")
	rec, err := h.store.Load(t.Context(), "trip", 0)
	if err != nil {
		t.Fatal(err)
	}
	setAt := int64(0) // the state.set of the remembered city
	for _, e := range rec.Events {
		if e.Kind == cairn.KindStateSet {
			setAt = e.Seq
		}
	}
	b := newBrowser(t, h)
	b.nav("open trip", chromedp.Click(chromedp.CSS(`tr[data-id="trip"] a`)))
	b.wait("#timeline li.k-model")

	// The timeline groups the run's steps and says what each tool did.
	if got := b.text("#timeline li.k-run"); !strings.Contains(got, "Run 1 started") {
		t.Errorf("the run's first row: %q", got)
	}
	if got := b.text("#timeline li.k-model .step"); got != "step 1" {
		t.Errorf("the first model call's step: %q", got)
	}
	if got := b.text("#timeline li.k-tool"); !strings.Contains(got, "remember") || !strings.Contains(got, "idempotent") {
		t.Errorf("the tool row: %q", got)
	}
	if got := b.text("#timeline li.k-interrupt"); !strings.Contains(got, "append_file") {
		t.Errorf("the interruption row: %q", got)
	}
	if got := b.text("#st-vars"); !strings.Contains(got, "city") {
		t.Errorf("the state now has no city: %q", got)
	}

	// The slider, with the keyboard: Home goes to seq 0, then to the
	// event before the variable was set, and the state follows.
	b.do("focus the slider", chromedp.KeyEvent("t"))
	b.until("the slider has the focus", `document.activeElement.id === "at"`)
	b.do("slide to the start", chromedp.KeyEvent(kb.Home))
	b.until("the state after #0", `document.querySelector("#state .at").textContent.includes("After #0")`)
	if got := b.text("#st-messages"); got != "0" {
		t.Errorf("messages after #0: %q", got)
	}
	for range setAt - 1 {
		b.do("step right", chromedp.KeyEvent(kb.ArrowRight))
	}
	b.until("the state before the variable", fmt.Sprintf(`document.querySelector("#state .at").textContent.includes("After #%d ")`, setAt-1))
	if got := b.text("#st-vars"); got != "none" {
		t.Errorf("variables before #%d: %q, want none", setAt, got)
	}
	b.do("step right", chromedp.KeyEvent(kb.ArrowRight))
	b.until("the state with the variable", fmt.Sprintf(`document.querySelector("#state .at").textContent.includes("After #%d ") && document.querySelector("#st-vars").textContent.includes("Lisbon")`, setAt))
	if u := evalJS[string](b, "location.search"); !strings.Contains(u, fmt.Sprintf("at=%d", setAt)) {
		t.Errorf("the address does not keep the seq: %q", u)
	}
	if n := evalJS[int](b, `document.querySelectorAll("#timeline li.at").length`); n != 1 {
		t.Errorf("%d rows marked as the chosen seq, want 1", n)
	}

	// A row's seq picks it too; compare two seqs.
	b.do("pick row 2", chromedp.Click(chromedp.CSS(`#seq-2 a.travel-to`)))
	b.until("the state after #2", `document.querySelector("#state .at").textContent.includes("After #2 ")`)
	b.nav("compare", chromedp.Click(chromedp.CSS(`#state form[action$="/compare"] button`)))
	b.wait("#cmp-vars")
	if got := b.text("#cmp-vars .v-added"); !strings.Contains(got, "city") {
		t.Errorf("the comparison does not show city as added: %q", got)
	}
}

func TestBrowser_ApproveResumes(t *testing.T) {
	h, notes := browserHarness(t)
	call := awaitingSession(t, h.store, h.srv.cfg.Agent, "trip")
	b := newBrowser(t, h)
	b.open("/sessions/trip")
	b.wait("#pending-" + call)
	if got := b.text("#pending-" + call); !strings.Contains(got, "append_file") || !strings.Contains(got, "Lisbon") {
		t.Errorf("the pending call: %q", got)
	}
	b.do("open the decision", chromedp.Click(chromedp.CSS(`#pending-`+call+` summary`)))
	b.do("note", chromedp.SendKeys(chromedp.CSS(`#pending-`+call+` input[name=note]`), "fine by me"))
	b.nav("approve", chromedp.Click(chromedp.CSS(`#pending-`+call+` button[value=approve]`)))
	// The run goes on in the server; the page's tail shows its events.
	b.until("the approval in the timeline", `[...document.querySelectorAll("#timeline li.k-approval")].some(li => li.textContent.includes("Approved") && li.textContent.includes("fine by me"))`)
	b.until("the tool's result in the timeline", `[...document.querySelectorAll("#timeline li.k-tool")].some(li => li.textContent.includes("append_file") && li.textContent.includes("not idempotent"))`)
	b.until("the run completed", `document.querySelector("#session-head .status").textContent === "completed"`)
	if got := b.text("#state"); !strings.Contains(got, "Done: Lisbon is noted.") {
		t.Errorf("the state after the run: %q", got)
	}
	data, err := os.ReadFile(notes)
	if err != nil || string(data) != "Lisbon\n" {
		t.Errorf("the approved call's side effect: %q, %v; want one line Lisbon", data, err)
	}
	if n := evalJS[int](b, `document.querySelectorAll("#session-head .waiting").length`); n != 0 {
		t.Errorf("the page still asks for a decision")
	}
}

func TestBrowser_ResumeInterrupted(t *testing.T) {
	h, _ := browserHarness(t)
	run := "r1"
	var events []cairn.Event
	for _, e := range []struct {
		kind cairn.Kind
		data any
	}{
		{cairn.KindRunStarted, cairn.RunStarted{RunID: run, Agent: "fixture", Model: "script", Reset: true}},
		{cairn.KindMemoryReset, cairn.MemoryReset{}},
		{cairn.KindMessageUser, cairn.MessageUser{Parts: []cairn.Part{{Type: "text", Text: "Note that I am going to Lisbon"}}}},
		{cairn.KindRunInterrupted, cairn.RunInterrupted{Reason: cairn.InterruptCancelled, Pending: []cairn.ToolCall{}}},
	} {
		ev := cairn.MustEvent(e.kind, run, e.data)
		ev.Seq = int64(len(events)) + 1
		events = append(events, ev)
	}
	writeSession(t, h.store, "halted", events)
	b := newBrowser(t, h)
	b.open("/sessions/halted")
	if got := b.text("#session-head .status"); got != "interrupted" {
		t.Fatalf("status %q, want interrupted", got)
	}
	b.do("open the confirmation", chromedp.Click(chromedp.CSS(`#session-head details.action summary`)))
	b.nav("resume", chromedp.Click(chromedp.CSS("#resume")))
	// The fixture agent remembers the city, then asks for a call that
	// needs approval: the page follows the run to that point.
	b.until("the remembered city", `document.querySelector("#st-vars") && document.querySelector("#st-vars").textContent.includes("Lisbon")`)
	b.until("the run waits for a decision", `document.querySelector("#session-head .status").textContent === "awaiting_approval" && !!document.querySelector("#session-head .waiting")`)
}

func TestBrowser_TailsRunningSession(t *testing.T) {
	h, _ := browserHarness(t)
	events := chatEvents(40)
	writeSession(t, h.store, "live", events[:9]) // a run under way: started, a first turn, the next started
	b := newBrowser(t, h)
	b.open("/sessions/live")
	b.wait("#seq-9")
	if got := b.text("#session-head .status"); got != "running" {
		t.Fatalf("status %q, want running", got)
	}
	// Another process appends (straight to the store): the page follows.
	for i := 9; i < 14; i += 2 {
		if err := h.store.Append(t.Context(), "live", int64(i), events[i:i+2]...); err != nil {
			t.Fatal(err)
		}
		b.wait(fmt.Sprintf("#seq-%d", i+2))
	}
	b.until("the state follows the tail", `document.querySelector("#state .at").textContent.includes("Now (after #15)")`)
	if got := b.text("#tl-last"); got != "15" {
		t.Errorf("the timeline's count: %q, want 15", got)
	}
	if err := h.store.Append(t.Context(), "live", 15, events[15:21]...); err != nil {
		t.Fatal(err)
	}
	b.until("the head follows the status", `document.querySelector("#session-head .status").textContent === "completed"`)
}

func TestBrowser_ForkAndDelete(t *testing.T) {
	h, _ := browserHarness(t)
	writeSession(t, h.store, "math", chatEvents(21))
	b := newBrowser(t, h)
	b.open("/sessions/math?at=5")
	b.do("open the fork form", chromedp.Click(chromedp.CSS(`#state details.action summary`)))
	b.do("name the fork", chromedp.SendKeys(chromedp.CSS("#fork-as"), "math-fork"))
	b.nav("fork", chromedp.Click(chromedp.CSS("#fork-confirm")))
	b.until("the fork's page", `location.pathname === "/sessions/math-fork"`)
	if got := b.text(".notice"); !strings.Contains(got, "fork of math") {
		t.Errorf("the fork's notice: %q", got)
	}
	// Seq 5 is mid-run: the fork's sixth event says its run was interrupted there.
	if got := b.text("#tl-last"); got != "6" {
		t.Errorf("the fork holds %q events, want 6", got)
	}
	if got := b.text("#session-head .status"); got != "interrupted" {
		t.Errorf("the fork's status: %q, want interrupted", got)
	}
	b.open("/sessions?label=forked_from%3Dmath")
	b.wait(`tr[data-id="math-fork"]`)
	if n := evalJS[int](b, `document.querySelectorAll("#session-rows tr[data-id]").length`); n != 1 {
		t.Errorf("the label filter shows %d sessions, want the fork alone", n)
	}

	// Delete asks first; the export links are on the page.
	b.open("/sessions/math-fork")
	if n := evalJS[int](b, `document.querySelectorAll('.export a[href*="/export?format="]').length`); n != 3 {
		t.Errorf("%d export links, want 3", n)
	}
	b.do("open the delete confirmation", chromedp.Click(chromedp.CSS(".danger-zone summary")))
	b.nav("confirm", chromedp.Click(chromedp.CSS("#delete-confirm")))
	b.until("back on the list", `location.pathname === "/sessions" && document.querySelector(".notice").textContent.includes("Deleted session math-fork")`)
	if _, err := h.store.Load(t.Context(), "math-fork", 0); err == nil {
		t.Error("the fork is still in the store")
	}
}

// screenshots, when set (go test ./server -run TestBrowser_Screenshots
// -args -screenshots=DIR; docs/screenshots.sh does it), is the folder the
// screenshots of the main pages are written to.
var screenshots = flag.String("screenshots", "", "write screenshots of the main pages to this folder")

func TestBrowser_Screenshots(t *testing.T) {
	if *screenshots == "" {
		t.Skip("no -screenshots folder given (docs/screenshots.sh regenerates the screenshots in docs/)")
	}
	h, _ := browserHarnessNotes(t, "/home/ada/notes/trips.txt") // never approved here: nothing is written
	events := chatEvents(63)
	failed := append(events[:6:6], cairn.MustEvent(cairn.KindRunFinished, "run-0000", cairn.RunFinished{Status: cairn.StatusFailed,
		Error: &cairn.ErrorInfo{Code: "provider_error", Message: "the model answered 503 three times"}}))
	failed[6].Seq = 7
	writeSession(t, h.store, "ticket-977", failed)
	writeSession(t, h.store, "math-tutor", events)
	r := h.do("POST", "/api/sessions/math-tutor/fork", map[string]any{"at": 21, "as": "math-tutor-what-if"})
	wantStatus(t, "fork", r, http.StatusCreated)
	writeSession(t, h.store, "support-4812", events[:11])
	awaitingSession(t, h.store, h.srv.cfg.Agent, "trip-lisbon")
	b := newBrowser(t, h)
	shot := func(name string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(b.ctx, waitLimit)
		defer cancel()
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(*screenshots, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b.open("/sessions")
	b.wait(`tr[data-id="trip-lisbon"]`)
	shot("inspector-sessions.png")
	b.open("/sessions/trip-lisbon")
	b.wait("#timeline li.k-interrupt")
	b.do("open the decision", chromedp.Click(chromedp.CSS(`.waiting summary`)))
	shot("inspector-session.png")
	b.open("/sessions/math-tutor?at=40#seq-36")
	b.wait("#seq-40.at")
	b.do("dark", chromedp.KeyEvent("d"))
	b.until("dark", `document.documentElement.dataset.theme === "dark"`)
	shot("inspector-time-travel-dark.png")
}

// TestBrowser_LongSession opens a session of 10,000 events: the page
// shows one window of PageEvents events (never the whole history in the
// DOM), the slider travels to any seq, and the older pages are a link
// away. It logs how long the browser took; it asserts no time.
func TestBrowser_LongSession(t *testing.T) {
	h, _ := browserHarness(t)
	const n = 10_000
	writeSession(t, h.store, "long", chatEvents(n))
	b := newBrowser(t, h)

	load := func(path string) (float64, float64, int) {
		t.Helper()
		start := time.Now()
		b.open(path)
		b.wait("#timeline li.ev")
		wall := time.Since(start)
		nav := evalJS[map[string]float64](b, `(() => { const e = performance.getEntriesByType("navigation")[0]; return {ttfb: e.responseStart - e.requestStart, dcl: e.domContentLoadedEventEnd - e.startTime, load: e.loadEventEnd - e.startTime, bytes: e.transferSize}; })()`)
		nodes := evalJS[int](b, `document.getElementsByTagName("*").length`)
		t.Logf("%s: server %.0f ms, DOMContentLoaded %.0f ms, load %.0f ms (wall %.0f ms), %.0f KB, %d DOM nodes",
			path, nav["ttfb"], nav["dcl"], nav["load"], float64(wall.Milliseconds()), nav["bytes"]/1024, nodes)
		return nav["ttfb"], nav["load"], nodes
	}
	load("/sessions/long") // the first load reads the history into the server's cache
	_, _, nodes := load("/sessions/long")
	if rows := evalJS[int](b, `document.querySelectorAll("#timeline li.ev").length`); rows != PageEvents {
		t.Errorf("the latest page shows %d events, want %d", rows, PageEvents)
	}
	if nodes > 6000 {
		t.Errorf("the page has %d DOM nodes: the history is not paged", nodes)
	}
	if got := b.text("#tl-range"); !strings.Contains(got, "9,801–10,000 of 10,000") {
		t.Errorf("the window: %q", got)
	}
	_, _, nodes = load("/sessions/long?from=1&at=5000")
	if nodes > 6000 {
		t.Errorf("the first page has %d DOM nodes", nodes)
	}
	if got := b.text("#state .at"); !strings.Contains(got, "After #5000 of 10000") {
		t.Errorf("the state at 5000: %q", got)
	}

	// The slider: from the keyboard, the state follows.
	b.open("/sessions/long")
	b.do("focus the slider", chromedp.Focus(chromedp.CSS("#at")))
	start := time.Now()
	b.do("travel", chromedp.KeyEvent(kb.Home))
	b.until("the state after #0", `document.querySelector("#state .at").textContent.includes("After #0 ")`)
	t.Logf("time travel to #0 (slider, fetch, swap): %d ms", time.Since(start).Milliseconds())
	evalJS[bool](b, `(() => { const s = document.querySelector("#at"); s.value = 5000; s.dispatchEvent(new Event("input")); return true; })()`)
	start = time.Now()
	b.until("the state after #5000", `document.querySelector("#state .at").textContent.includes("After #5000 ")`)
	t.Logf("time travel to #5000: %d ms (after the slider's 120 ms pause)", time.Since(start).Milliseconds())
	for _, at := range []int{1, 2500, 5000, 9999} {
		ms := evalJSAwait[float64](b, fmt.Sprintf(`(async () => { const t0 = performance.now(); const r = await fetch("/sessions/long/state?at=%d"); await r.text(); return performance.now() - t0; })()`, at))
		t.Logf("the state panel after #%d: %.0f ms to fetch", at, ms)
	}
	b.nav("older page", chromedp.KeyEvent("p"))
	if got := b.text("#tl-range"); !strings.Contains(got, "9,601–9,800") {
		t.Errorf("the older page: %q", got)
	}
}

// TestBrowser_LoginStaysOnServer follows, in Chromium, a one-time link
// and the login form whose next is "/<TAB>/HOST/", HOST another server
// here: a browser drops the tab and would go to //HOST/. It must stay on
// this server's sessions page, and the other server must see no request.
func TestBrowser_LoginStaysOnServer(t *testing.T) {
	h, _ := browserHarness(t)
	var mu sync.Mutex
	var visits []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		visits = append(visits, r.URL.String())
		mu.Unlock()
		fmt.Fprint(w, "<title>elsewhere</title>")
	}))
	defer other.Close()
	next := url.QueryEscape("/\t/" + strings.TrimPrefix(other.URL, "http://") + "/")
	b := newBrowser(t, h)
	here := func(what string) {
		t.Helper()
		if got := evalJS[string](b, `location.origin + location.pathname`); got != h.ts.URL+"/sessions" {
			t.Errorf("%s: the browser is at %s, want %s/sessions", what, got, h.ts.URL)
		}
	}
	b.nav("the one-time link", chromedp.Navigate(h.srv.LoginURL(h.ts.URL)+"&next="+next))
	here("after the one-time link")
	b.open("/login?next=" + next)
	b.do("type the token", chromedp.SendKeys(chromedp.CSS("#token"), testToken))
	b.nav("sign in", chromedp.Click(chromedp.CSS("form button")))
	here("after the login form")
	mu.Lock()
	defer mu.Unlock()
	if len(visits) != 0 {
		t.Errorf("the browser went to the other server: %q", visits)
	}
}

// TestBrowser_NarrowScreen opens the list and a session at a phone's
// width (420 px): neither page scrolls sideways, and the list still shows
// each session's ID, status and first message.
func TestBrowser_NarrowScreen(t *testing.T) {
	h, _ := browserHarness(t)
	awaitingSession(t, h.store, h.srv.cfg.Agent, "trip-to-lisbon-with-a-long-session-id")
	writeSession(t, h.store, "math", chatEvents(14))
	b := newBrowser(t, h)
	b.do("a phone's width", chromedp.EmulateViewport(420, 860))
	fits := `document.documentElement.scrollWidth <= window.innerWidth`
	b.open("/sessions")
	b.wait(`tr[data-id="math"]`)
	if w := evalJS[float64](b, `window.innerWidth`); w != 420 {
		t.Fatalf("the window is %v px wide, want 420", w)
	}
	if !evalJS[bool](b, fits) {
		t.Errorf("/sessions at 420 px is %v px wide: it scrolls sideways", evalJS[float64](b, `document.documentElement.scrollWidth`))
	}
	for _, sel := range []string{`tr[data-id="math"] td.id`, `tr[data-id="math"] .status`, `tr[data-id="math"] td.first`} {
		if !evalJS[bool](b, `(() => { const r = document.querySelector('`+sel+`').getBoundingClientRect(); return r.width > 0 && r.right <= window.innerWidth })()`) {
			t.Errorf("%s is not shown within the window", sel)
		}
	}
	b.open("/sessions/trip-to-lisbon-with-a-long-session-id")
	b.wait("#timeline li.k-interrupt")
	if !evalJS[bool](b, fits) {
		t.Errorf("the session's page at 420 px is %v px wide: it scrolls sideways", evalJS[float64](b, `document.documentElement.scrollWidth`))
	}
	if *screenshots != "" {
		b.open("/sessions")
		b.wait(`tr[data-id="math"]`)
		png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(*screenshots, "inspector-sessions-420.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBrowser_Memory opens the memory page from the header, searches,
// sees the ranked result, and follows its provenance link to the event
// of the session it was saved from; at a phone's width the page does not
// scroll sideways.
func TestBrowser_Memory(t *testing.T) {
	h := newHarness(t, sqliteStore(t), Config{Memory: sqliteLongTerm(t), PollInterval: 100 * time.Millisecond})
	writeSession(t, h.store, "math", chatEvents(14))
	for _, it := range []longterm.Item{
		{Namespace: "users/ada", Key: "answer-9", Value: []byte(`{"answer":63}`), Text: "Ada asked what 9 times 7 is: 63",
			Labels: map[string]string{"kind": "fact"}, Source: longterm.Source{Session: "math", Seq: 11}},
		{Namespace: "users/ada/notes", Key: "city", Value: []byte(`"Lisbon"`), Text: "Ada is going to Lisbon"},
		{Namespace: "users/a-person-with-a-rather-long-name/notes-about-their-preferences", Key: "food-preference-for-dinner-parties",
			Value: []byte(`"pizza"`), Text: strings.Repeat("pizza ", 60)},
	} {
		if _, err := h.srv.cfg.Memory.Put(t.Context(), it, longterm.PutOptions{TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	b := newBrowser(t, h)
	b.nav("open the memory page", chromedp.Click(chromedp.CSS(`header nav a[href="/memory"]`)))
	b.wait("#mem-namespaces")
	if got := b.text("#mem-namespaces"); !strings.Contains(got, "users/ada/notes") {
		t.Errorf("the namespaces: %q", got)
	}

	// A namespace's items.
	b.nav("open users/ada", chromedp.Click(chromedp.CSS(`#mem-namespaces a[href="/memory?ns=users/ada"]`)))
	b.wait(`#mem-list li[data-key="city"]`)
	if got := b.text(`#mem-list li[data-key="answer-9"]`); !strings.Contains(got, "kind=fact") || !strings.Contains(got, "expires") {
		t.Errorf("the item's row: %q", got)
	}

	// A search, with the keyboard's "/".
	b.do("search", chromedp.KeyEvent("/"))
	b.until("the search box has the focus", `document.activeElement && document.activeElement.id === "q"`)
	evalJS[string](b, `document.querySelector("#q").value = ""`)
	b.do("type a query", chromedp.SendKeys(chromedp.CSS("#q"), "times 7"))
	b.do("type a prefix", chromedp.SendKeys(chromedp.CSS("#prefix"), "users"))
	b.nav("search", chromedp.Click(chromedp.CSS(`form[role="search"] button`)))
	b.wait(`#mem-results li[data-key="answer-9"]`)
	if n := evalJS[int](b, `document.querySelectorAll("#mem-results li.mem-item").length`); n != 1 {
		t.Errorf("%d results, want 1", n)
	}
	if got := b.text(`#mem-results li[data-key="answer-9"] .score`); got != "1.00" {
		t.Errorf("the result's score: %q", got)
	}

	// Its provenance: the session's page at the event.
	b.nav("follow the source", chromedp.Click(chromedp.CSS(`#mem-results li[data-key="answer-9"] a.source`)))
	b.wait("#seq-11.at")
	if u := evalJS[string](b, "location.pathname + location.search + location.hash"); !strings.HasPrefix(u, "/sessions/math?") || !strings.HasSuffix(u, "#seq-11") {
		t.Errorf("the source link led to %s", u)
	}
	if got := b.text("#state .at"); !strings.Contains(got, "After #11 ") {
		t.Errorf("the state shown: %q, want the state after #11", got)
	}

	// A phone's width.
	b.do("a phone's width", chromedp.EmulateViewport(420, 860))
	b.open("/memory?ns=users&q=pizza")
	b.wait("#mem-results li.mem-item")
	if !evalJS[bool](b, `document.documentElement.scrollWidth <= window.innerWidth`) {
		t.Errorf("the memory page at 420 px is %v px wide: it scrolls sideways", evalJS[float64](b, `document.documentElement.scrollWidth`))
	}
	if *screenshots != "" {
		for _, w := range []int64{420, 1280} {
			b.do("width", chromedp.EmulateViewport(w, 900))
			b.open("/memory?ns=users/ada&q=ada")
			b.wait("#mem-results li.mem-item")
			png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(*screenshots, fmt.Sprintf("inspector-memory-%d.png", w)), png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestBrowser_FleetAndWorkers(t *testing.T) {
	st, _ := workersFixture(t, time.Now().Add(-10*time.Minute))
	h := newHarness(t, st, Config{})
	// A day of runs: most complete, some fail in a tool, a few wait.
	now := time.Now().UTC()
	for i := range 60 {
		at := now.Add(-23*time.Hour + time.Duration(i)*23*time.Minute)
		outcome, tool, fail := cairn.StatusCompleted, "calc", false
		switch {
		case i%9 == 4:
			outcome, tool, fail = cairn.StatusFailed, "search_tickets", true
		case i%13 == 7:
			outcome, tool = cairn.StatusAwaiting, "refund"
		case i%17 == 3:
			outcome = cairn.StatusInterrupted
		}
		agent, model := "support", "gpt-4o-mini"
		if i%3 == 0 {
			agent, model = "triage", "claude-haiku"
		}
		writeFleetSession(t, h.store, fmt.Sprintf("day-%02d", i), at, agent, model, tool, fail, outcome, nil)
	}
	b := newBrowser(t, h)
	b.nav("open the fleet page", chromedp.Click(chromedp.CSS(`header nav a[href="/fleet"]`)))
	b.wait("#fleet-chart rect")
	if n := evalJS[int](b, `document.querySelectorAll("#fleet-chart rect.o-failed").length`); n == 0 {
		t.Error("the chart has no failed runs")
	}
	if got := b.text("#fleet-models"); !strings.Contains(got, "gpt-4o-mini") || !strings.Contains(got, "claude-haiku") {
		t.Errorf("the models table: %q", got)
	}

	// A failing tool leads to the runs in which it failed, and to their sessions.
	b.nav("follow the failing tool", chromedp.Click(chromedp.CSS(`#fleet-tools a`)))
	b.wait("#fleet-sessions tbody tr[data-id]")
	if got := evalJS[string](b, `new URL(location.href).searchParams.get("tool")`); got != "search_tickets" {
		t.Errorf("the tool link led to tool=%q", got)
	}
	statuses := evalJS[[]string](b, `[...document.querySelectorAll("#fleet-sessions tbody tr[data-id] .status")].map(e => e.textContent)`)
	if len(statuses) == 0 || slices.ContainsFunc(statuses, func(s string) bool { return s != "failed" }) {
		t.Errorf("the sessions behind the failing tool: %v, want all failed", statuses)
	}

	// A column's part leads to its runs.
	b.open("/fleet")
	b.wait("#fleet-chart rect.o-completed")
	title := evalJS[string](b, `document.querySelector("#fleet-chart a:first-of-type rect title").textContent`)
	_, n, _ := strings.Cut(title, ": ")
	n, _, _ = strings.Cut(n, " ")
	b.nav("follow a column", chromedp.Click(chromedp.CSS(`#fleet-chart a:first-of-type rect`)))
	b.wait("#fleet-scope")
	if got := evalJS[string](b, `new URL(location.href).searchParams.get("from")`); got == "" {
		t.Error("a column's link does not narrow the window")
	}
	if got := b.text("#fleet-scope"); n == "" || !strings.HasPrefix(got, n+" runs started") {
		t.Errorf("a column's part titled %q led to %q", title, got)
	}

	// The workers page.
	b.nav("open the workers page", chromedp.Click(chromedp.CSS(`header nav a[href="/workers"]`)))
	b.wait(`#work tr[data-id="mail-dead"]`)
	if got := b.text(`#work tr[data-id="mail-dead"]`); !strings.Contains(got, "stalled") {
		t.Errorf("the dead worker's session: %q", got)
	}
	if got := b.text(`#holders`); !strings.Contains(got, "worker-a") || !strings.Contains(got, "in ") {
		t.Errorf("the holders: %q", got)
	}

	for _, page := range []string{"/fleet", "/workers"} {
		b.do("a phone's width", chromedp.EmulateViewport(420, 860))
		b.open(page)
		b.wait("main h1")
		if !evalJS[bool](b, `document.documentElement.scrollWidth <= window.innerWidth + 1`) {
			t.Errorf("%s at 420 px is %v px wide: it scrolls sideways", page, evalJS[float64](b, `document.documentElement.scrollWidth`))
		}
		if *screenshots != "" {
			name := strings.TrimPrefix(page, "/")
			for _, w := range []int64{420, 1280} {
				b.do("width", chromedp.EmulateViewport(w, 900))
				b.open(page)
				b.wait("main h1")
				png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(*screenshots, fmt.Sprintf("inspector-%s-%d.png", name, w)), png, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// TestBrowser_Search: words typed in the sessions page's box find the
// sessions holding them, best first, the words marked; a result's event
// link opens the session at that event; no sideways scroll at 420 px.
func TestBrowser_Search(t *testing.T) {
	h := newHarness(t, testcheck.MemoryStore(t), Config{})
	topics := []string{"a refund for order 1183", "the invoice of March", "a password reset", "shipping to Porto", "a broken charger"}
	for i := range 30 {
		text := "Help with " + topics[i%len(topics)]
		if i == 17 {
			text = "My parcel to Lisbon never came; it left the Lisbon depot on Monday and the tracking number is LX-4471"
		}
		if i == 22 {
			text = "Book a hotel in Lisbon for the conference"
		}
		id := fmt.Sprintf("ticket-%02d", i)
		if err := h.store.Create(t.Context(), cairn.SessionMeta{ID: id, Labels: map[string]string{"team": []string{"support", "sales"}[i%2]}}); err != nil {
			t.Fatal(err)
		}
		if err := h.store.Append(t.Context(), id, 0, storetest.UserTurn(0, "r1", text)...); err != nil {
			t.Fatal(err)
		}
	}
	b := newBrowser(t, h)
	b.do("type words", chromedp.SendKeys(chromedp.CSS("#text"), "lisbon tracking"))
	b.nav("search", chromedp.Click(chromedp.CSS(`form[role="search"] button`)))
	b.wait(`#found tbody tr[data-id]`)
	ids := evalJS[[]string](b, `[...document.querySelectorAll("#found tbody tr[data-id]")].map(e => e.dataset.id)`)
	if !slices.Equal(ids, []string{"ticket-17", "ticket-22"}) {
		t.Errorf("found %v, want ticket-17 (both words) then ticket-22", ids)
	}
	if got := evalJS[[]string](b, `[...document.querySelectorAll("#found tr[data-id=ticket-17] mark")].map(e => e.textContent)`); !slices.Equal(got, []string{"Lisbon", "Lisbon", "tracking"}) {
		t.Errorf("marked words %v", got)
	}

	// The result's event: the session's page, its timeline at the event.
	b.nav("follow the match", chromedp.Click(chromedp.CSS(`#found tr[data-id=ticket-17] td.match a`)))
	b.wait("#seq-2.at")
	if u := evalJS[string](b, "location.pathname + location.hash"); u != "/sessions/ticket-17#seq-2" {
		t.Errorf("the match led to %s", u)
	}

	// A label narrows the search.
	b.open("/sessions?text=lisbon&label=team%3Dsales")
	b.wait(`#found tbody tr[data-id]`)
	if ids := evalJS[[]string](b, `[...document.querySelectorAll("#found tbody tr[data-id]")].map(e => e.dataset.id)`); !slices.Equal(ids, []string{"ticket-17"}) {
		t.Errorf("team sales: %v, want ticket-17", ids)
	}

	b.do("a phone's width", chromedp.EmulateViewport(420, 860))
	b.open("/sessions?text=lisbon")
	b.wait(`#found tbody tr[data-id]`)
	if !evalJS[bool](b, `document.documentElement.scrollWidth <= window.innerWidth + 1`) {
		t.Errorf("the search at 420 px is %v px wide: it scrolls sideways", evalJS[float64](b, `document.documentElement.scrollWidth`))
	}
	if *screenshots != "" {
		for _, w := range []int64{420, 1280} {
			b.do("width", chromedp.EmulateViewport(w, 700))
			b.open("/sessions?text=lisbon+tracking")
			b.wait(`#found tbody tr[data-id]`)
			png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(*screenshots, fmt.Sprintf("inspector-search-%d.png", w)), png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}
