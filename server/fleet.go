package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/cairnhq/cairn"
)

// The fleet view: the runs of the sessions updated in a window, by time
// and outcome, the model calls by model and the failing tools, read from
// the events (GET /fleet and GET /api/fleet). Every figure can be narrowed
// to the runs behind it, whose sessions the view lists.

// MaxFleetSessions bounds the sessions one fleet view reads: the most
// recently updated of the window. A view that reached it says so.
const MaxFleetSessions = 2000

// maxFleetSessions is MaxFleetSessions; tests lower it.
var maxFleetSessions = MaxFleetSessions

// fleetSessionsShown is how many sessions behind a view it lists.
const fleetSessionsShown = 100

// Outcomes of a run, in the order the views stack them.
var fleetOutcomes = []string{"completed", "failed", "max_steps", "interrupted", "awaiting_approval", "running"}

// fleetQuery is a fleet view's filter. The window is Since before now,
// or From to To when both are given.
type fleetQuery struct {
	Since   string            // as asked: 1h, 24h, 7d, 30d
	From    time.Time         // the window's start, included
	To      time.Time         // its end, excluded
	Agent   string            // runs of this agent
	Model   string            // runs that called this model
	Tool    string            // runs in which this tool failed
	Outcome string            // runs that ended so
	Labels  map[string]string // sessions with all of these labels
}

// fleetSince are the windows a view offers, and how they are cut.
var fleetSince = []struct {
	name   string
	span   time.Duration
	bucket time.Duration
}{
	{"1h", time.Hour, 5 * time.Minute},
	{"24h", 24 * time.Hour, time.Hour},
	{"7d", 7 * 24 * time.Hour, 6 * time.Hour},
	{"30d", 30 * 24 * time.Hour, 24 * time.Hour},
}

func parseFleetQuery(q url.Values, now time.Time) (fleetQuery, time.Duration, error) {
	fq := fleetQuery{Since: q.Get("since"), Agent: q.Get("agent"), Model: q.Get("model"), Tool: q.Get("tool"), Outcome: q.Get("outcome")}
	if fq.Outcome != "" && !slices.Contains(fleetOutcomes, fq.Outcome) {
		return fq, 0, badRequest("outcome", "unknown outcome %q (want one of %s)", fq.Outcome, strings.Join(fleetOutcomes, ", "))
	}
	var err error
	if fq.Labels, err = queryLabels(q, "KEY=VALUE"); err != nil {
		return fq, 0, err
	}
	from, to := q.Get("from"), q.Get("to")
	if from != "" || to != "" {
		if from == "" || to == "" {
			return fq, 0, badRequest("from", "from and to go together (RFC 3339 times)")
		}
		if fq.From, err = time.Parse(time.RFC3339Nano, from); err != nil {
			return fq, 0, badRequest("from", "from=%q is not an RFC 3339 time", from)
		}
		if fq.To, err = time.Parse(time.RFC3339Nano, to); err != nil {
			return fq, 0, badRequest("to", "to=%q is not an RFC 3339 time", to)
		}
		if !fq.To.After(fq.From) {
			return fq, 0, badRequest("to", "to (%s) is not after from (%s)", to, from)
		}
		fq.Since = ""
		span := fq.To.Sub(fq.From)
		return fq, max(span/24, time.Second).Truncate(time.Second), nil
	}
	if fq.Since == "" {
		fq.Since = "24h"
	}
	for _, w := range fleetSince {
		if w.name == fq.Since {
			fq.To = now.Truncate(w.bucket).Add(w.bucket)
			fq.From = fq.To.Add(-w.span)
			return fq, w.bucket, nil
		}
	}
	return fq, 0, badRequest("since", "unknown window %q (want 1h, 24h, 7d or 30d, or from and to)", fq.Since)
}

// fleetReport is a fleet view: GET /api/fleet's body, and the page's data.
type fleetReport struct {
	From       time.Time      `json:"from"`
	To         time.Time      `json:"to"`
	BucketSec  int64          `json:"bucket_seconds"`
	Sessions   int            `json:"sessions_read"` // sessions updated in the window, read for the view
	Capped     bool           `json:"capped"`        // more were updated: the view holds the latest MaxFleetSessions
	Unreadable int            `json:"unreadable"`    // sessions left out: damaged, or sealed without the key
	Runs       int            `json:"runs"`          // runs the filter keeps
	Outcomes   map[string]int `json:"outcomes"`      // those runs by outcome
	Buckets    []fleetBucket  `json:"buckets"`
	Models     []fleetModel   `json:"models"`
	Tools      []fleetTool    `json:"tools"`
	Agents     []string       `json:"agents"`          // the agents of the window's runs, for the filter
	Matching   []fleetSession `json:"matching"`        // the sessions behind the view, newest first
	More       int            `json:"matching_beyond"` // sessions behind it that the list leaves out
}

// fleetBucket counts the runs that started in [Start, Start+bucket).
type fleetBucket struct {
	Start    time.Time      `json:"start"`
	Outcomes map[string]int `json:"outcomes"`
}

// fleetModel sums the model calls of the kept runs for one model.
type fleetModel struct {
	Model        string `json:"model"`
	Calls        int    `json:"calls"`
	InputTokens  int64  `json:"input_tokens"`
	OutputTokens int64  `json:"output_tokens"`
	P50MS        int64  `json:"latency_p50_ms"`
	P90MS        int64  `json:"latency_p90_ms"`
	latencies    []int64
}

// fleetTool counts one tool's results in the kept runs.
type fleetTool struct {
	Name   string `json:"name"`
	Calls  int    `json:"calls"`
	Errors int    `json:"errors"`
}

// fleetSession is a session behind a view.
type fleetSession struct {
	ID           string       `json:"id"`
	Status       cairn.Status `json:"status"`
	FirstMessage string       `json:"first_message"`
	UpdatedAt    time.Time    `json:"updated_at"`
	Runs         int          `json:"runs"` // of its runs, those the filter keeps
}

// fleetRun is one run as the view reads it from a session's events.
type fleetRun struct {
	started time.Time
	agent   string
	model   string
	info    cairn.SessionInfo // the run's own events folded: its status
	calls   []*cairn.ModelResponse
	results []*cairn.ToolResult
}

func (r *fleetRun) outcome() string {
	return string(r.info.Status) // running, awaiting_approval, interrupted, completed, failed, max_steps
}

// keeps reports whether the filter keeps run r of a session, leaving the
// window, which the caller checks, and the labels, which the store does.
func (fq fleetQuery) keeps(r *fleetRun) bool {
	if fq.Agent != "" && r.agent != fq.Agent || fq.Outcome != "" && r.outcome() != fq.Outcome {
		return false
	}
	if fq.Model != "" && r.model != fq.Model && !slices.ContainsFunc(r.calls, func(m *cairn.ModelResponse) bool { return m.Model == fq.Model }) {
		return false
	}
	if fq.Tool != "" && !slices.ContainsFunc(r.results, func(t *cairn.ToolResult) bool { return t.Name == fq.Tool && t.IsError }) {
		return false
	}
	return true
}

// sessionRuns reads a session's runs from its events.
func sessionRuns(events []cairn.Event) ([]*fleetRun, error) {
	byID := map[string]*fleetRun{}
	var runs []*fleetRun
	for _, e := range events {
		if e.Run == "" {
			continue
		}
		v, err := e.Decode()
		if err != nil {
			return nil, fmt.Errorf("event seq %d: %w", e.Seq, err)
		}
		r := byID[e.Run]
		if r == nil {
			st, ok := v.(*cairn.RunStarted)
			if !ok {
				continue // a run that started before the events read
			}
			r = &fleetRun{started: e.At, agent: st.Agent, model: st.Model}
			byID[e.Run] = r
			runs = append(runs, r)
		}
		if err := r.info.Apply(e); err != nil {
			return nil, err
		}
		switch d := v.(type) {
		case *cairn.ModelResponse:
			r.calls = append(r.calls, d)
		case *cairn.ToolResult:
			r.results = append(r.results, d)
		}
	}
	return runs, nil
}

// fleet reads the view fq asks for.
func (s *Server) fleet(ctx context.Context, fq fleetQuery, bucket time.Duration) (*fleetReport, error) {
	rep := &fleetReport{From: fq.From, To: fq.To, BucketSec: int64(bucket / time.Second), Outcomes: map[string]int{}}
	for t := fq.From; t.Before(fq.To); t = t.Add(bucket) {
		rep.Buckets = append(rep.Buckets, fleetBucket{Start: t, Outcomes: map[string]int{}})
	}
	models := map[string]*fleetModel{}
	tools := map[string]*fleetTool{}
	agents := map[string]bool{}
	opts := cairn.ListOptions{UpdatedAfter: fq.From.Add(-time.Nanosecond), Labels: fq.Labels, Limit: min(MaxListLimit, maxFleetSessions)}
	for {
		page, err := s.store.List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list sessions: %w", err)
		}
		for _, info := range page.Sessions {
			if rep.Sessions == maxFleetSessions {
				rep.Capped = true
				break
			}
			rep.Sessions++
			rec, err := s.store.Load(ctx, info.ID, 1)
			if errors.Is(err, cairn.ErrNotFound) {
				continue // deleted since the listing
			}
			if errors.Is(err, cairn.ErrDamaged) || errors.Is(err, cairn.ErrSealed) {
				rep.Unreadable++ // one session the view cannot read does not hide the others
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("load session %s: %w", info.ID, err)
			}
			runs, err := sessionRuns(rec.Events)
			if err != nil {
				rep.Unreadable++
				continue
			}
			kept := 0
			for _, r := range runs {
				if r.started.Before(fq.From) || !r.started.Before(fq.To) {
					continue
				}
				if r.agent != "" {
					agents[r.agent] = true
				}
				if !fq.keeps(r) {
					continue
				}
				kept++
				rep.Runs++
				rep.Outcomes[r.outcome()]++
				rep.Buckets[int(r.started.Sub(fq.From)/bucket)].Outcomes[r.outcome()]++
				for _, m := range r.calls {
					name := cmp.Or(m.Model, r.model, "(unnamed)")
					fm := models[name]
					if fm == nil {
						fm = &fleetModel{Model: name}
						models[name] = fm
					}
					fm.Calls++
					fm.InputTokens += m.Usage.InputTokens
					fm.OutputTokens += m.Usage.OutputTokens
					fm.latencies = append(fm.latencies, m.LatencyMS)
				}
				for _, t := range r.results {
					ft := tools[t.Name]
					if ft == nil {
						ft = &fleetTool{Name: t.Name}
						tools[t.Name] = ft
					}
					ft.Calls++
					if t.IsError {
						ft.Errors++
					}
				}
			}
			if kept == 0 {
				continue
			}
			if len(rep.Matching) == fleetSessionsShown {
				rep.More++
				continue
			}
			shown := displayed(rec.Info)
			rep.Matching = append(rep.Matching, fleetSession{ID: shown.ID, Status: shown.Status,
				FirstMessage: shown.FirstMessage, UpdatedAt: shown.UpdatedAt, Runs: kept})
		}
		if page.Next == "" || rep.Capped {
			break
		}
		if rep.Sessions == maxFleetSessions {
			rep.Capped = true // more pages
			break
		}
		opts.Cursor = page.Next
	}
	for _, m := range models {
		slices.Sort(m.latencies)
		m.P50MS, m.P90MS = percentile(m.latencies, 50), percentile(m.latencies, 90)
		rep.Models = append(rep.Models, *m)
	}
	slices.SortFunc(rep.Models, func(a, b fleetModel) int { return cmp.Or(cmp.Compare(b.Calls, a.Calls), cmp.Compare(a.Model, b.Model)) })
	for _, t := range tools {
		rep.Tools = append(rep.Tools, *t)
	}
	slices.SortFunc(rep.Tools, func(a, b fleetTool) int {
		return cmp.Or(cmp.Compare(b.Errors, a.Errors), cmp.Compare(b.Calls, a.Calls), cmp.Compare(a.Name, b.Name))
	})
	rep.Agents = slices.Sorted(maps.Keys(agents))
	return rep, nil
}

// percentile returns the p-th percentile of sorted, nearest rank; 0 for
// none.
func percentile(sorted []int64, p int) int64 {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	return sorted[max(i-1, 0)]
}

// fleetView reads the fleet view that r asks for.
func (s *Server) fleetView(r *http.Request) (fleetQuery, time.Duration, *fleetReport, error) {
	fq, bucket, err := parseFleetQuery(r.URL.Query(), time.Now())
	if err != nil {
		return fq, 0, nil, err
	}
	rep, err := s.fleet(r.Context(), fq, bucket)
	return fq, bucket, rep, err
}

func (s *Server) apiFleet(w http.ResponseWriter, r *http.Request) error {
	_, _, rep, err := s.fleetView(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rep)
	return nil
}
