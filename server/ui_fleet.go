package server

import (
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"
)

// The inspector's fleet page: the fleet view (fleet.go) as a chart of runs
// over time, a table of models and one of tools, every mark a link to the
// view narrowed to the runs behind it.

type fleetData struct {
	base
	fleetReport
	Q        fleetQuery
	Windows  []string
	Label    string // the label filter as typed
	Chart    fleetChart
	Legend   []fleetLegend
	MaxCalls int
	MaxTools int
	Narrowed bool // a filter beyond the window is set: "clear" is offered
}

// fleetLegend is an outcome with its count and the link that keeps only
// its runs.
type fleetLegend struct {
	Outcome string
	Runs    int
	URL     template.URL
}

// fleetChart is the runs-over-time chart, drawn by the server as SVG:
// one column per bucket, its outcomes stacked.
type fleetChart struct {
	Width, Height int
	Bars          []fleetBar
	Ticks         []fleetTick
	Max           int
}

type fleetBar struct {
	X, Y, W, H int
	Outcome    string
	Title      string
	URL        template.URL
}

type fleetTick struct {
	X    int
	Text string
}

// Chart geometry, in SVG units (the chart scales to its box).
const (
	chartWidth  = 720
	chartHeight = 180
	chartBottom = 20 // room for the time labels
)

// fleetURL is the fleet page's address for fq with change applied.
func fleetURL(fq fleetQuery, change func(q url.Values)) template.URL {
	q := url.Values{}
	if fq.Since != "" {
		q.Set("since", fq.Since)
	} else {
		q.Set("from", fq.From.UTC().Format(time.RFC3339))
		q.Set("to", fq.To.UTC().Format(time.RFC3339))
	}
	for k, v := range map[string]string{"agent": fq.Agent, "model": fq.Model, "tool": fq.Tool, "outcome": fq.Outcome} {
		if v != "" {
			q.Set(k, v)
		}
	}
	for k, v := range fq.Labels {
		q.Add("label", k+"="+v)
	}
	if change != nil {
		change(q)
	}
	return template.URL("/fleet?" + q.Encode())
}

func (s *Server) uiFleet(w http.ResponseWriter, r *http.Request) error {
	fq, bucket, rep, err := s.fleetView(r)
	if err != nil {
		return err
	}
	d := fleetData{base: s.base(r, "Fleet", "fleet"), fleetReport: *rep, Q: fq,
		Narrowed: fq.Agent != "" || fq.Model != "" || fq.Tool != "" || fq.Outcome != "" || len(fq.Labels) > 0}
	for _, w := range fleetSince {
		d.Windows = append(d.Windows, w.name)
	}
	for k, v := range fq.Labels {
		d.Label = k + "=" + v
	}
	for _, o := range fleetOutcomes {
		d.Legend = append(d.Legend, fleetLegend{Outcome: o, Runs: rep.Outcomes[o],
			URL: fleetURL(fq, func(q url.Values) { q.Set("outcome", o) })})
	}
	for _, m := range rep.Models {
		d.MaxCalls = max(d.MaxCalls, m.Calls)
	}
	for _, t := range rep.Tools {
		d.MaxTools = max(d.MaxTools, t.Calls)
	}
	d.Chart = drawFleetChart(fq, rep, bucket)
	return s.render(w, http.StatusOK, "fleet.html", d)
}

// drawFleetChart lays out the runs-over-time chart.
func drawFleetChart(fq fleetQuery, rep *fleetReport, bucket time.Duration) fleetChart {
	c := fleetChart{Width: chartWidth, Height: chartHeight + chartBottom}
	for _, b := range rep.Buckets {
		n := 0
		for _, v := range b.Outcomes {
			n += v
		}
		c.Max = max(c.Max, n)
	}
	if len(rep.Buckets) == 0 {
		return c
	}
	step := chartWidth / len(rep.Buckets)
	width := max(step-2, 1)
	scale := 0.0
	if c.Max > 0 {
		scale = float64(chartHeight-4) / float64(c.Max)
	}
	format := "15:04"
	if bucket >= 24*time.Hour {
		format = "Jan 2"
	} else if time.Duration(len(rep.Buckets))*bucket > 24*time.Hour {
		format = "Jan 2 15h"
	}
	every := max(1, len(rep.Buckets)/6)
	for i, b := range rep.Buckets {
		x := i * step
		if i%every == 0 {
			c.Ticks = append(c.Ticks, fleetTick{X: x, Text: b.Start.UTC().Format(format)})
		}
		y := chartHeight
		end := b.Start.Add(bucket)
		for _, o := range fleetOutcomes {
			n := b.Outcomes[o]
			if n == 0 {
				continue
			}
			h := max(int(float64(n)*scale+0.5), 2)
			y -= h
			c.Bars = append(c.Bars, fleetBar{X: x, Y: y, W: width, H: h, Outcome: o,
				Title: fmt.Sprintf("%s runs started: %d (%s–%s UTC)", o, n, b.Start.UTC().Format("Jan 2 15:04"), end.UTC().Format("15:04")),
				URL: fleetURL(fq, func(q url.Values) {
					q.Del("since")
					q.Set("from", b.Start.UTC().Format(time.RFC3339))
					q.Set("to", end.UTC().Format(time.RFC3339))
					q.Set("outcome", o)
				})})
		}
	}
	return c
}

// fleetFuncs are the fleet page's template functions.
var fleetFuncs = template.FuncMap{
	"fleetURL": func(fq fleetQuery, key, value string) template.URL {
		return fleetURL(fq, func(q url.Values) {
			if value == "" {
				q.Del(key)
			} else {
				q.Set(key, value)
			}
		})
	},
	"pct": func(n, of int) string {
		if of == 0 {
			return "0"
		}
		return strconv.FormatFloat(100*float64(n)/float64(of), 'f', 1, 64)
	},
	"stateText": func(st string) string {
		if i := slices.Index(workStates, st); i >= 0 {
			return [...]string{"waiting", "running", "stalled", "to finish", "awaiting approval"}[i]
		}
		return st
	},
	"age": func(t, now time.Time) string { return roughly(now.Sub(t)) + " ago" },
	"until": func(t, now time.Time) string {
		if t.Before(now) {
			return "expired " + roughly(now.Sub(t)) + " ago"
		}
		return "in " + roughly(t.Sub(now))
	},
	"outcomeText": func(o string) string {
		if i := slices.Index(fleetOutcomes, o); i >= 0 {
			return [...]string{"completed", "failed", "hit max steps", "interrupted", "awaiting approval", "running"}[i]
		}
		return o
	},
}

// roughly is d for a person: "40 s", "12 min", "3 h", "2 days".
func roughly(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h", int(d.Hours()))
	}
	return fmt.Sprintf("%d days", int(d.Hours()/24))
}
