package cli

import (
	"fmt"
	"io"
	"strings"
)

// Progress draws a one-line progress bar on a terminal; on anything else it
// prints nothing.
type Progress struct {
	w     io.Writer
	on    bool
	total int
	label string
}

// NewProgress returns a progress bar on w for total items, drawn only when
// w is a terminal.
func NewProgress(w io.Writer, total int, label string) *Progress {
	return &Progress{w: w, on: IsTerminal(w), total: total, label: label}
}

// Set shows that done items are finished, the current one named note.
func (p *Progress) Set(done int, note string) {
	if !p.on || p.total == 0 {
		return
	}
	const width = 30
	fill := done * width / p.total
	fmt.Fprintf(p.w, "\r\033[K%s [%s%s] %d/%d %s", p.label, strings.Repeat("=", fill), strings.Repeat(" ", width-fill), done, p.total, OneLine(note, 40))
}

// Done clears the bar.
func (p *Progress) Done() {
	if p.on {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
