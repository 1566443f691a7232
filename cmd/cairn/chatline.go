package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/peterh/liner"

	"github.com/cairnhq/cairn/internal/cli"
)

// errCtrlC is Ctrl+C pressed at the prompt.
var errCtrlC = errors.New("ctrl+c at the prompt")

// lineReader reads what a person types.
type lineReader interface {
	// Prompt shows prompt and returns the line typed; errCtrlC for Ctrl+C,
	// io.EOF for Ctrl+D or the end of the input.
	Prompt(prompt string) (string, error)
	// AddHistory adds a line to the history.
	AddHistory(line string)
	// Interactive reports whether a person types at a terminal.
	Interactive() bool
	// Close restores the terminal and saves the history.
	Close() error
}

// newLineReader returns the line editor when stdin and stdout are a
// terminal that supports it, and a plain line reader otherwise (a pipe, a
// script, TERM=dumb).
func newLineReader(ctx context.Context, app *cli.App) lineReader {
	term := cli.IsTerminal(app.Stdin) && cli.IsTerminal(app.Stdout)
	if term && app.Stdin == os.Stdin && app.Stdout == os.Stdout && liner.TerminalSupported() {
		return newEditor(app)
	}
	return newPlainReader(ctx, app.Stdin, app.Stderr, term)
}

// editor is the line editor (github.com/peterh/liner): arrows, Emacs keys,
// history (Up, Down, Ctrl+R), Tab completion of commands.
type editor struct {
	st      *liner.State
	history string // the history file, "" when there is none
}

func newEditor(app *cli.App) *editor {
	st := liner.NewLiner()
	st.SetCtrlCAborts(true)
	st.SetMultiLineMode(true)
	st.SetTabCompletionStyle(liner.TabPrints)
	st.SetCompleter(func(line string) []string {
		if !strings.HasPrefix(line, "/") {
			return nil
		}
		var out []string
		for _, c := range chatCommands {
			if strings.HasPrefix(c.name, line) {
				out = append(out, c.name)
			}
		}
		return out
	})
	e := &editor{st: st, history: historyFile(app)}
	if e.history != "" {
		if f, err := os.Open(e.history); err == nil {
			_, _ = st.ReadHistory(f)
			f.Close()
		}
	}
	return e
}

// historyFile is where the chat's history is kept: the user's data
// folder (~/.local/share/cairn/chat_history).
func historyFile(app *cli.App) string {
	dir := app.DataDir()
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, "chat_history")
}

func (e *editor) Prompt(p string) (string, error) {
	line, err := e.st.Prompt(p)
	if errors.Is(err, liner.ErrPromptAborted) {
		return "", errCtrlC
	}
	return line, err
}

func (e *editor) AddHistory(line string) { e.st.AppendHistory(line) }
func (e *editor) Interactive() bool      { return true }

func (e *editor) Close() error {
	if e.history != "" {
		if err := os.MkdirAll(filepath.Dir(e.history), 0o700); err == nil {
			if f, err := os.OpenFile(e.history, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600); err == nil {
				_, _ = e.st.WriteHistory(f)
				f.Close()
			}
		}
	}
	return e.st.Close()
}

// plainReader reads lines from a pipe or a terminal without editing. The
// command's context ending (Ctrl+C, SIGTERM) ends a wait for input.
type plainReader struct {
	ctx   context.Context
	lines chan string
	err   error // after lines is closed
	w     io.Writer
	term  bool
}

func newPlainReader(ctx context.Context, r io.Reader, w io.Writer, term bool) *plainReader {
	p := &plainReader{ctx: ctx, lines: make(chan string), w: w, term: term}
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		p.err = sc.Err()
		close(p.lines)
	}()
	return p
}

func (p *plainReader) Prompt(prompt string) (string, error) {
	if p.term {
		fmt.Fprint(p.w, prompt)
	}
	select {
	case <-p.ctx.Done():
		return "", p.ctx.Err()
	case line, ok := <-p.lines:
		if !ok {
			if p.err != nil {
				return "", fmt.Errorf("read the input: %w", p.err)
			}
			return "", io.EOF
		}
		return line, nil
	}
}

func (p *plainReader) AddHistory(string) {}
func (p *plainReader) Interactive() bool { return p.term }
func (p *plainReader) Close() error      { return nil }
