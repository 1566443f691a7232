package bench

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"text/tabwriter"
)

// WriteTable writes the report as tables for people: each backend's
// figures, then the ratios the targets in docs/PERFORMANCE.md are about.
func WriteTable(w io.Writer, rep *Report) error {
	if rep.LongOnly {
		writeLong(w, rep)
		writeNotMeasured(w, rep)
		return nil
	}
	tables := []struct {
		head string
		row  func(tw io.Writer, r Result)
	}{
		{"append (µs)\tp50 @10\t@10000\tp99 @10\t@10000\tfloor p50\t", func(tw io.Writer, r Result) {
			fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t\n",
				r.Backend, r.AppendP50["10"], r.AppendP50["10000"], r.AppendP99["10"], r.AppendP99["10000"], r.FloorP50)
		}},
		{"resume (ms)\t1k\t20k\tfloor 1k\t20k\tB/event\t8 vs 1\tfloor\t64 vs 1\t", func(tw io.Writer, r Result) {
			bpe := "-"
			if r.BytesPerEvent != nil {
				bpe = fmt.Sprintf("%.0f", *r.BytesPerEvent)
			}
			floor8 := "-"
			if r.Floor8vs1 > 0 {
				floor8 = fmt.Sprintf("%.2f×", r.Floor8vs1)
			}
			fmt.Fprintf(tw, "%s\t%.1f\t%.0f\t%.1f\t%.0f\t%s\t%.2f×\t%s\t%.2f×\t\n",
				r.Backend, r.ResumeMS["1000"], r.ResumeMS["20000"], r.ResumeFloorMS["1000"], r.ResumeFloorMS["20000"], bpe, r.Concurrent8vs1, floor8, r.Concurrent64vs1)
		}},
		{"ratios\t@10000÷@10\t÷ floor\t÷ atomic floor\tresume÷floor\tevent\t", func(tw io.Writer, r Result) {
			atomic := "-"
			if r.AtomicFloorP50 > 0 {
				atomic = fmt.Sprintf("%.2f (%.0f µs)", ratio(r.AppendP50["10000"], r.AtomicFloorP50), r.AtomicFloorP50)
			}
			fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%s\t%.2f\t%d B\t\n", r.Backend, ratio(r.AppendP50["10000"], r.AppendP50["10"]),
				ratio(r.AppendP50["10000"], r.FloorP50), atomic, ratio(r.ResumeMS["20000"], r.ResumeFloorMS["20000"]), r.EventJSONBytes)
		}},
		{"CPU per op (µs)\tappend\tfloor\tappend−floor\tallocs/append\tfloor\t", func(tw io.Writer, r Result) {
			fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%.0f\t%.0f\t\n", r.Backend, r.CPUPerAppend, r.FloorCPU,
				r.OwnCPU, r.AllocsPerAppend, r.FloorAllocs)
		}},
	}
	for _, tb := range tables {
		if err := writeMeasured(w, rep, tb.head, tb.row); err != nil {
			return err
		}
	}
	writeLong(w, rep)
	writeNotMeasured(w, rep)
	n := rep.NaiveRewrite
	if n.Steps == 0 {
		return nil // not measured: the file store does not run on this system
	}
	_, err := fmt.Fprintf(w, "\nnaive rewrite, %d steps: %.0f ms (%.0f ms without fsync), %d bytes written;\ncairn (file store): %.0f ms, %d bytes: %.1f× faster\n",
		n.Steps, n.NaiveMS, n.NoSyncMS, n.NaiveBytes, n.CairnMS, n.CairnBytes, n.Ratio)
	return err
}

// newTable is a tabwriter for the report's tables: columns aligned right.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
}

// writeMeasured writes a table of the backends measured: its head, the row
// of each (row writes it, its cells ended by tabs), and a blank line.
func writeMeasured(w io.Writer, rep *Report, head string, row func(tw io.Writer, r Result)) error {
	tw := newTable(w)
	fmt.Fprintln(tw, head)
	for _, r := range rep.Results {
		if r.Error == "" {
			row(tw, r)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w)
	return err
}

// ratio is a / b, 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// writeLong writes the long-conversation table: a turn early and late,
// opening a session of each length with one more turn, and the bytes a
// conversation leaves run by one process and by an agent reopened every
// turn.
func writeLong(w io.Writer, rep *Report) {
	var turns, opens []string
	for _, r := range rep.Results {
		turns = mergeKeys(turns, r.AgentTurnUS)
		opens = mergeKeys(opens, r.OpenMS)
	}
	opens = slices.DeleteFunc(opens, func(k string) bool { return k == "reopened" })
	if len(turns)+len(opens) == 0 {
		return
	}
	tw := newTable(w)
	head := "long conversations\t"
	for _, k := range turns {
		head += "turn " + k + " (µs)\t"
	}
	if len(turns) > 1 {
		head += turns[len(turns)-1] + " ÷ " + turns[0] + "\t"
	}
	for _, k := range opens {
		head += "open " + k + " (ms)\t"
	}
	if len(opens) > 1 {
		head += opens[len(opens)-1] + " ÷ " + opens[0] + "\t"
	}
	head += "bytes: one process\treopened\treopened ÷ one\t"
	fmt.Fprintln(tw, head)
	for _, r := range rep.Results {
		if r.Error != "" {
			continue
		}
		line := r.Backend + "\t"
		for _, k := range turns {
			line += fmt.Sprintf("%.0f\t", r.AgentTurnUS[k])
		}
		if len(turns) > 1 {
			line += fmt.Sprintf("%.2f\t", ratio(r.AgentTurnUS[turns[len(turns)-1]], r.AgentTurnUS[turns[0]]))
		}
		for _, k := range opens {
			line += fmt.Sprintf("%.2f\t", r.OpenMS[k])
		}
		if len(opens) > 1 {
			line += fmt.Sprintf("%.2f\t", ratio(r.OpenMS[opens[len(opens)-1]], r.OpenMS[opens[0]]))
		}
		one, re := r.SessionBytes["one_process"], r.SessionBytes["reopened"]
		line += fmt.Sprintf("%d\t%d\t%.2f\t", one, re, ratio(float64(re), float64(one)))
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
}

// mergeKeys adds m's keys (numbers) to keys, in numeric order.
func mergeKeys[V any](keys []string, m map[string]V) []string {
	for k := range m {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b string) int {
		x, _ := strconv.Atoi(a)
		y, _ := strconv.Atoi(b)
		return x - y
	})
	return keys
}

// writeNotMeasured names the backends that were not measured, and why.
func writeNotMeasured(w io.Writer, rep *Report) {
	for _, r := range rep.Results {
		if r.Error != "" {
			fmt.Fprintf(w, "%s: not measured: %s\n", r.Backend, r.Error)
		}
	}
	for _, s := range rep.Skipped {
		fmt.Fprintf(w, "%s: not measured: %s\n", s.Backend, s.Reason)
	}
}
