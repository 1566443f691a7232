package bench

import (
	"fmt"
	"io"
	"strings"
)

// WriteScaleTable writes the scale report as a table per store: each
// operation's median and slowest time at each size, and, when the report
// covers several sizes, the median at the largest divided by the median at
// the smallest (the target: 2× at most). Then gc, the fills, and what went
// wrong.
func WriteScaleTable(w io.Writer, rep *ScaleReport) error {
	var stores []string
	byStore := map[string][]ScaleResult{}
	for _, r := range rep.Results {
		if _, ok := byStore[r.Store]; !ok {
			stores = append(stores, r.Store)
		}
		byStore[r.Store] = append(byStore[r.Store], r)
	}
	for i, st := range stores {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if err := writeStoreTable(w, st, byStore[st]); err != nil {
			return err
		}
	}
	return nil
}

func writeStoreTable(w io.Writer, store string, rs []ScaleResult) error {
	var ok []ScaleResult
	for _, r := range rs {
		if r.Error != "" {
			fmt.Fprintf(w, "%s, %s sessions: not measured: %s\n", store, thousands(r.Sessions), r.Error)
			continue
		}
		ok = append(ok, r)
	}
	if len(ok) == 0 {
		return nil
	}
	tw := newTable(w)
	head := []string{store + " (ms: p50 / max)"}
	for _, r := range ok {
		head = append(head, thousands(r.Sessions))
	}
	first, last := ok[0], ok[len(ok)-1]
	if len(ok) > 1 {
		head = append(head, fmt.Sprintf("%s÷%s", short(last.Sessions), short(first.Sessions)))
	}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	var notes []string
	for i, op := range first.Ops {
		row := []string{op.Name}
		for _, r := range ok {
			if i >= len(r.Ops) {
				row = append(row, "-")
				continue
			}
			o := r.Ops[i]
			cell := fmt.Sprintf("%s / %s", ms(o.P50MS), ms(o.MaxMS))
			if o.Note != "" {
				notes = append(notes, fmt.Sprintf("%s at %s: %s", o.Name, thousands(r.Sessions), o.Note))
				cell += " *"
			}
			row = append(row, cell)
		}
		if len(ok) > 1 && i < len(last.Ops) {
			row = append(row, fmt.Sprintf("%.1f×", ratio(last.Ops[i].P50MS, op.P50MS)))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range ok {
		n := thousands(r.Sessions)
		if g := r.GC; g != nil && g.Note == "" || g != nil && g.Removed > 0 {
			fmt.Fprintf(w, "gc at %s: removed %s expired sessions in %s ms (%s ms per 1,000); a writer's append p99 / max: %s / %s ms alone, %s / %s ms during gc (%d appends)\n",
				n, thousands(g.Removed), ms(g.MS), ms(g.MSPer1000), ms(g.WriterIdle.P99MS), ms(g.WriterIdle.MaxMS),
				ms(g.WriterDuringGC.P99MS), ms(g.WriterDuringGC.MaxMS), g.WriterDuringGC.Appends)
		}
		if g := r.GC; g != nil && g.Note != "" {
			notes = append(notes, fmt.Sprintf("gc at %s: %s", n, g.Note))
		}
		fill := fmt.Sprintf("fill at %s: %s", n, strings.ReplaceAll(r.Fill.Action, "_", " "))
		if r.Fill.Written > 0 {
			fill += fmt.Sprintf(", %s sessions written in %.0f s (%.0f/s)", thousands(r.Fill.Written), r.Fill.Seconds, r.Fill.PerSecond)
		}
		if r.BytesBeforeGC > 0 {
			fill += fmt.Sprintf("; file %s MB (%s bytes a session), %s MB after gc", mb(r.BytesBeforeGC),
				thousands(int(r.BytesBeforeGC)/r.Sessions), mb(r.BytesAfterGC))
		}
		fmt.Fprintln(w, fill)
	}
	for _, n := range notes {
		fmt.Fprintln(w, "* "+n)
	}
	return nil
}

// ms formats milliseconds with the precision that matters at their size.
func ms(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func mb(b int64) string { return fmt.Sprintf("%.0f", float64(b)/1e6) }

// thousands formats n with commas: 1,000,000.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// short formats a number of sessions as 10k or 1M.
func short(n int) string {
	switch {
	case n >= 1e6 && n%1e6 == 0:
		return fmt.Sprintf("%dM", n/1e6)
	case n >= 1e3 && n%1e3 == 0:
		return fmt.Sprintf("%dk", n/1e3)
	}
	return fmt.Sprint(n)
}
