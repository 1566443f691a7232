// Command plot draws docs/performance.png from the JSON of `cairn bench
// --json`: Append latency (p50) against history length for each backend,
// with the naive rewrite's cost per step beside them. With -long it draws
// docs/long-sessions.png instead: the time to open a session and run one
// more turn against the session's length in turns (open_ms).
//
//	go run ./plot -in results/bench.json -out ../docs/performance.png
//	go run ./plot -long -in results/long.json -out ../docs/long-sessions.png
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"image/color"
	"os"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

type report struct {
	Results []struct {
		Backend   string             `json:"backend"`
		AppendP50 map[string]float64 `json:"append_p50_us"`
		FloorP50  float64            `json:"floor_p50_us"`
		OpenMS    map[string]float64 `json:"open_ms"`
		Error     string             `json:"error"`
	} `json:"results"`
	NaiveRewrite struct {
		StepUS map[string]float64 `json:"naive_step_us"`
	} `json:"naive_rewrite"`
}

func main() {
	in := flag.String("in", "results/bench.json", "report of cairn bench --json")
	out := flag.String("out", "../docs/performance.png", "PNG to write")
	long := flag.Bool("long", false, "draw open_ms against the session's length in turns")
	flag.Parse()
	f := draw
	if *long {
		f = drawLong
	}
	if err := f(*in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "plot:", err)
		os.Exit(1)
	}
}

// points turns a map keyed by history length into points in length order.
func points(m map[string]float64) plotter.XYs {
	var xys plotter.XYs
	for k, v := range m {
		n, err := strconv.Atoi(k)
		if err == nil && v > 0 {
			xys = append(xys, plotter.XY{X: float64(n), Y: v})
		}
	}
	slices.SortFunc(xys, func(a, b plotter.XY) int { return int(a.X - b.X) })
	return xys
}

// logPlot reads the report in and starts a plot of it, log-scaled on both
// axes, with its legend at the top left.
func logPlot(in, title, x, y string) (*report, *plot.Plot, error) {
	data, err := os.ReadFile(in)
	if err != nil {
		return nil, nil, err
	}
	var rep report
	if err := json.Unmarshal(data, &rep); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", in, err)
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text, p.Y.Label.Text = x, y
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = true, true
	return &rep, p, nil
}

// addBackend adds the line of the i-th backend drawn, in its colour and
// with its shape of points.
func addBackend(p *plot.Plot, i int, name string, xys plotter.XYs) error {
	line, dots, err := plotter.NewLinePoints(xys)
	if err != nil {
		return err
	}
	line.Color, dots.Color = plotutil.Color(i), plotutil.Color(i)
	dots.Shape = plotutil.Shape(i)
	p.Add(line, dots)
	p.Legend.Add(name, line, dots)
	return nil
}

func draw(in, out string) error {
	rep, p, err := logPlot(in, "Append latency (p50) against history length", "events already in the session", "µs per step")
	if err != nil {
		return err
	}
	i := 0
	for _, r := range rep.Results {
		if r.Error != "" || r.Backend == "memory" {
			continue
		}
		xys := points(r.AppendP50)
		if len(xys) == 0 {
			continue
		}
		if err := addBackend(p, i, r.Backend, xys); err != nil {
			return err
		}
		i++
	}
	if xys := points(rep.NaiveRewrite.StepUS); len(xys) > 0 {
		line, dots, err := plotter.NewLinePoints(xys)
		if err != nil {
			return err
		}
		line.Color, dots.Color = color.Black, color.Black
		line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(line, dots)
		p.Legend.Add("naive rewrite + fsync", line, dots)
	}
	p.Add(plotter.NewGrid())
	return p.Save(8*vg.Inch, 5*vg.Inch, out)
}

func drawLong(in, out string) error {
	rep, p, err := logPlot(in, "Open a session and run one more turn, against its length (mongodb: FerretDB, which scans)", "turns in the session", "ms (p50)")
	if err != nil {
		return err
	}
	i := 0
	for _, r := range rep.Results {
		xys := points(r.OpenMS)
		if r.Error != "" || len(xys) == 0 {
			continue
		}
		if err := addBackend(p, i, r.Backend, xys); err != nil {
			return err
		}
		i++
	}
	if i == 0 {
		return fmt.Errorf("%s: no open_ms figures (run cairn bench --long --json)", in)
	}
	p.Add(plotter.NewGrid())
	return p.Save(8*vg.Inch, 5*vg.Inch, out)
}
