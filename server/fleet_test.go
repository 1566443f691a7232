package server

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/testing/testcheck"
)

// writeFleetSession writes session id with one run started at at, of agent and
// model, that calls tool (failing when failTool) and ends in outcome.
func writeFleetSession(t testing.TB, store cairn.Store, id string, at time.Time, agent, model, tool string, failTool bool, outcome cairn.Status, labels map[string]string) {
	t.Helper()
	var events []cairn.Event
	add := func(kind cairn.Kind, v any) {
		e := cairn.MustEvent(kind, "r-"+id, v)
		e.Seq, e.At = int64(len(events))+1, at.Add(time.Duration(len(events))*time.Second)
		events = append(events, e)
	}
	add(cairn.KindRunStarted, cairn.RunStarted{RunID: "r-" + id, Agent: agent, Model: model})
	add(cairn.KindMessageUser, cairn.MessageUser{Parts: []cairn.Part{{Type: "text", Text: "question of " + id}}})
	call := cairn.ToolCall{ID: "c1", Name: tool, Args: []byte(`{}`)}
	add(cairn.KindModelResponse, cairn.ModelResponse{ToolCalls: []cairn.ToolCall{call}, Model: model,
		Usage: cairn.Usage{InputTokens: 100, OutputTokens: 10}, FinishReason: "tool_calls", LatencyMS: 40})
	switch outcome {
	case cairn.StatusAwaiting:
		add(cairn.KindRunInterrupted, cairn.RunInterrupted{Reason: cairn.InterruptApproval, Pending: []cairn.ToolCall{call}})
	default:
		add(cairn.KindToolResult, cairn.ToolResult{CallID: "c1", Name: tool, Output: "out", IsError: failTool, DurationMS: 3})
		add(cairn.KindModelResponse, cairn.ModelResponse{Text: "done", Model: model,
			Usage: cairn.Usage{InputTokens: 200, OutputTokens: 20}, FinishReason: "stop", LatencyMS: 80})
		switch outcome {
		case cairn.StatusInterrupted:
			add(cairn.KindRunInterrupted, cairn.RunInterrupted{Reason: cairn.InterruptCancelled})
		case cairn.StatusRunning:
		default:
			fin := cairn.RunFinished{Status: outcome, Output: "done"}
			if outcome == cairn.StatusFailed {
				fin.Error = &cairn.ErrorInfo{Message: "the tool failed"}
			}
			add(cairn.KindRunFinished, fin)
		}
	}
	if err := store.Create(t.Context(), cairn.SessionMeta{ID: id, Labels: labels, CreatedAt: at}); err != nil {
		t.Fatal(err)
	}
	if err := store.Append(t.Context(), id, 0, events...); err != nil {
		t.Fatal(err)
	}
}

func TestAPI_Fleet(t *testing.T) {
	h := newHarness(t, testcheck.MemoryStore(t), Config{})
	day := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	writeFleetSession(t, h.store, "ok-1", day.Add(9*time.Hour), "support", "m-small", "calc", false, cairn.StatusCompleted, nil)
	writeFleetSession(t, h.store, "ok-2", day.Add(9*time.Hour+30*time.Minute), "support", "m-small", "calc", false, cairn.StatusCompleted, nil)
	writeFleetSession(t, h.store, "bad-1", day.Add(10*time.Hour+30*time.Minute), "support", "m-big", "search", true, cairn.StatusFailed, map[string]string{"team": "blue"})
	writeFleetSession(t, h.store, "wait-1", day.Add(11*time.Hour+10*time.Minute), "triage", "m-small", "refund", false, cairn.StatusAwaiting, nil)
	writeFleetSession(t, h.store, "old-1", day.Add(-3*time.Hour), "support", "m-old", "calc", true, cairn.StatusFailed, nil)
	window := "from=" + url.QueryEscape(day.Format(time.RFC3339)) + "&to=" + url.QueryEscape(day.Add(24*time.Hour).Format(time.RFC3339))

	var rep fleetReport
	r := h.do("GET", "/api/fleet?"+window, nil)
	wantStatus(t, "the fleet view", r, http.StatusOK)
	r.Decode(t, &rep)
	if rep.Runs != 4 || rep.Outcomes["completed"] != 2 || rep.Outcomes["failed"] != 1 || rep.Outcomes["awaiting_approval"] != 1 {
		t.Errorf("runs %d, outcomes %v; want 4: 2 completed, 1 failed, 1 awaiting approval (the run of the day before left out)", rep.Runs, rep.Outcomes)
	}
	if len(rep.Buckets) != 24 || rep.BucketSec != 3600 || rep.Buckets[9].Outcomes["completed"] != 2 || rep.Buckets[10].Outcomes["failed"] != 1 || rep.Buckets[11].Outcomes["awaiting_approval"] != 1 {
		t.Errorf("the buckets: %d of %d s; 9: %v, 10: %v, 11: %v", len(rep.Buckets), rep.BucketSec, rep.Buckets[9].Outcomes, rep.Buckets[10].Outcomes, rep.Buckets[11].Outcomes)
	}
	if len(rep.Models) != 2 || rep.Models[0].Model != "m-small" || rep.Models[0].Calls != 5 || rep.Models[0].InputTokens != 700 ||
		rep.Models[0].OutputTokens != 70 || rep.Models[0].P50MS != 40 || rep.Models[0].P90MS != 80 {
		t.Errorf("the models: %+v; want m-small first: 5 calls, 700 in, 70 out, p50 40 ms, p90 80 ms", rep.Models)
	}
	if len(rep.Tools) != 2 || rep.Tools[0].Name != "search" || rep.Tools[0].Errors != 1 || rep.Tools[1].Name != "calc" || rep.Tools[1].Calls != 2 {
		t.Errorf("the tools: %+v; want search (1 failure) first, then calc (2 calls); refund waits for approval, no result", rep.Tools)
	}
	if strings.Join(rep.Agents, ",") != "support,triage" {
		t.Errorf("the agents: %v", rep.Agents)
	}
	// The store's updated time is when the events were written (now):
	// the session of the day before is read, its run left out.
	if rep.Sessions != 5 || rep.Capped || len(rep.Matching) != 4 {
		t.Errorf("read %d sessions (capped %v), %d behind the view; want 5, 4", rep.Sessions, rep.Capped, len(rep.Matching))
	}

	// Each filter narrows to the runs, and the sessions, behind it.
	for _, c := range []struct{ filter, want string }{
		{"tool=search", "bad-1"},
		{"agent=triage", "wait-1"},
		{"model=m-big", "bad-1"},
		{"outcome=completed", "ok-2,ok-1"},
		{"label=team%3Dblue", "bad-1"},
		{"agent=support&outcome=awaiting_approval", ""},
	} {
		var got fleetReport
		r := h.do("GET", "/api/fleet?"+window+"&"+c.filter, nil)
		wantStatus(t, c.filter, r, http.StatusOK)
		r.Decode(t, &got)
		var ids []string
		for _, s := range got.Matching {
			ids = append(ids, s.ID)
		}
		if strings.Join(ids, ",") != c.want {
			t.Errorf("%s: the sessions behind it are %v, want %s", c.filter, ids, c.want)
		}
	}

	// Bad filters are refused, naming the parameter.
	for _, c := range []struct{ query, field string }{
		{"since=2w", "since"},
		{"outcome=exploded", "outcome"},
		{"from=2026-11-30T00:00:00Z", "from"},
		{"from=yesterday&to=2026-11-30T00:00:00Z", "from"},
		{"from=2026-11-30T00:00:00Z&to=2026-11-29T00:00:00Z", "to"},
		{"label=team", "label"},
	} {
		r := h.do("GET", "/api/fleet?"+c.query, nil)
		wantStatus(t, c.query, r, http.StatusBadRequest)
		if e := r.Err(t); e["field"] != c.field {
			t.Errorf("%s: the error names %v, want %s: %v", c.query, e["field"], c.field, e)
		}
	}

	// A session the view cannot read is left out, and counted.
	damaged := newHarness(t, damagedLoads{Store: h.store, id: "bad-1"}, Config{})
	var left fleetReport
	damaged.do("GET", "/api/fleet?"+window, nil).Decode(t, &left)
	if left.Unreadable != 1 || left.Runs != 3 {
		t.Errorf("with bad-1 damaged: %d unreadable, %d runs; want 1, 3", left.Unreadable, left.Runs)
	}

	// A view reads at most maxFleetSessions sessions, and says so.
	defer func(n int) { maxFleetSessions = n }(maxFleetSessions)
	maxFleetSessions = 3
	var capped fleetReport
	h.do("GET", "/api/fleet?"+window, nil).Decode(t, &capped)
	if capped.Sessions != 3 || !capped.Capped {
		t.Errorf("with room for 3 of 5 sessions: read %d, capped %v", capped.Sessions, capped.Capped)
	}
	maxFleetSessions = MaxFleetSessions

	// The default window is the last 24 hours: none of these runs.
	var now fleetReport
	h.do("GET", "/api/fleet", nil).Decode(t, &now)
	if now.Runs != 0 || now.To.Sub(now.From) != 24*time.Hour {
		t.Errorf("the default view: %d runs from %s to %s", now.Runs, now.From, now.To)
	}
}

func TestUI_Fleet(t *testing.T) {
	h := newHarness(t, testcheck.MemoryStore(t), Config{})
	base := time.Now().UTC().Add(-20 * time.Hour)
	writeFleetSession(t, h.store, "ok-1", base, "support", "m-small", "calc", false, cairn.StatusCompleted, nil)
	writeFleetSession(t, h.store, "bad-1", base.Add(2*time.Hour), "support", "m-big", "search <b>", true, cairn.StatusFailed, nil)
	jar, _, page := browse(t, h)
	if body := page("/sessions"); !strings.Contains(body, `href="/fleet"`) {
		t.Error("the sessions page does not link the fleet page")
	}
	body := page("/fleet")
	for _, want := range []string{
		`<svg id="fleet-chart"`, `<rect class="o-failed"`, `<rect class="o-completed"`,
		`outcome=failed`, // the failed part of its column links to its runs
		`href="/fleet?model=m-big&amp;since=24h"`,             // a model's row, to its runs
		`href="/fleet?since=24h&amp;tool=search&#43;%3Cb%3E"`, // a failing tool, escaped
		`search &lt;b&gt;`, `href="/sessions/bad-1"`, `href="/sessions/ok-1"`,
		`2 runs started`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the fleet page lacks %s", want)
		}
	}
	body = page("/fleet?since=24h&tool=" + url.QueryEscape("search <b>"))
	if !strings.Contains(body, `href="/sessions/bad-1"`) || strings.Contains(body, `href="/sessions/ok-1"`) {
		t.Errorf("the runs in which search failed: %s", clipBody([]byte(body[strings.Index(body, "<main"):])))
	}
	r := h.doWith("GET", "/fleet?since=forever", nil, jar)
	wantStatus(t, "a bad window", r, http.StatusBadRequest)
	if !strings.Contains(string(r.Body), "unknown window") {
		t.Errorf("the error page: %s", clipBody(r.Body))
	}
}

// damagedLoads is a store whose session id loads as damaged.
type damagedLoads struct {
	cairn.Store
	id string
}

func (d damagedLoads) Load(ctx context.Context, id string, from int64) (*cairn.Record, error) {
	if id == d.id {
		return nil, fmt.Errorf("session %s: %w", id, cairn.ErrDamaged)
	}
	return d.Store.Load(ctx, id, from)
}
