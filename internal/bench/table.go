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
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "append (µs)\tp50 @10\t@10000\tp99 @10\t@10000\tfloor p50\t")
	for _, r := range rep.Results {
		if r.Error != "" {
			continue
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t\n",
			r.Backend, r.AppendP50["10"], r.AppendP50["10000"], r.AppendP99["10"], r.AppendP99["10000"], r.FloorP50)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "resume (ms)\t1k\t20k\tfloor 1k\t20k\tB/event\t8 vs 1\tfloor\t64 vs 1\t")
	for _, r := range rep.Results {
		if r.Error != "" {
			continue
		}
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
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "ratios\t@10000÷@10\t÷ floor\t÷ atomic floor\tresume÷floor\tevent\t")
	for _, r := range rep.Results {
		if r.Error != "" {
			continue
		}
		atomic := "-"
		if r.AtomicFloorP50 > 0 {
			atomic = fmt.Sprintf("%.2f (%.0f µs)", ratio(r.AppendP50["10000"], r.AtomicFloorP50), r.AtomicFloorP50)
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%s\t%.2f\t%d B\t\n", r.Backend, ratio(r.AppendP50["10000"], r.AppendP50["10"]),
			ratio(r.AppendP50["10000"], r.FloorP50), atomic, ratio(r.ResumeMS["20000"], r.ResumeFloorMS["20000"]), r.EventJSONBytes)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "CPU per op (µs)	append	floor	append−floor	allocs/append	floor	")
	for _, r := range rep.Results {
		if r.Error != "" {
			continue
		}
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%.0f\t%.0f\t\n", r.Backend, r.CPUPerAppend, r.FloorCPU,
			r.OwnCPU, r.AllocsPerAppend, r.FloorAllocs)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	writeLong(w, rep)
	writeNotMeasured(w, rep)
	n := rep.NaiveRewrite
	_, err := fmt.Fprintf(w, "\nnaive rewrite, %d steps: %.0f ms (%.0f ms without fsync), %d bytes written;\ncairn (file store): %.0f ms, %d bytes: %.1f× faster\n",
		n.Steps, n.NaiveMS, n.NoSyncMS, n.NaiveBytes, n.CairnMS, n.CairnBytes, n.Ratio)
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
// and opening a session of each length with one more turn.
func writeLong(w io.Writer, rep *Report) {
	var turns, opens []string
	for _, r := range rep.Results {
		turns = mergeKeys(turns, r.AgentTurnUS)
		opens = mergeKeys(opens, r.OpenMS)
	}
	if len(turns)+len(opens) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	head := "long conversations\t"
	for _, k := range turns {
		head += "turn " + k + " (µs)\t"
	}
	for _, k := range opens {
		head += "open " + k + " (ms)\t"
	}
	fmt.Fprintln(tw, head)
	for _, r := range rep.Results {
		if r.Error != "" {
			continue
		}
		line := r.Backend + "\t"
		for _, k := range turns {
			line += fmt.Sprintf("%.0f\t", r.AgentTurnUS[k])
		}
		for _, k := range opens {
			line += fmt.Sprintf("%.2f\t", r.OpenMS[k])
		}
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
