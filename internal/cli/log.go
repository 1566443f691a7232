package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
)

// Logger returns the command's logger, on stderr: with --json, one JSON
// object per record; otherwise one "warning: …" line per warning (records
// below the warning level are dropped). Each message is printed once, so
// that a warning the agent logs as it happens is not repeated by
// ReportWarnings at the end.
func (a *App) Logger() *slog.Logger {
	a.logOnce.Do(func() {
		var h slog.Handler
		if a.Flags.JSON {
			h = slog.NewJSONHandler(a.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})
		} else {
			h = &lineHandler{mu: new(sync.Mutex), w: a.Stderr, level: slog.LevelWarn}
		}
		a.logger = slog.New(&onceHandler{app: a, Handler: h})
	})
	return a.logger
}

// warned records that a message was printed; it reports whether it was
// already.
func (a *App) warned(msg string) bool {
	a.logMu.Lock()
	defer a.logMu.Unlock()
	if a.printed == nil {
		a.printed = map[string]bool{}
	}
	if a.printed[msg] {
		return true
	}
	a.printed[msg] = true
	return false
}

// onceHandler drops a warning whose message was printed already.
type onceHandler struct {
	app *App
	slog.Handler
}

func (h *onceHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn && h.app.warned(r.Message) {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h *onceHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &onceHandler{app: h.app, Handler: h.Handler.WithAttrs(as)}
}

func (h *onceHandler) WithGroup(name string) slog.Handler {
	return &onceHandler{app: h.app, Handler: h.Handler.WithGroup(name)}
}

// lineHandler writes records for people: "warning: message" or "error:
// message", with attributes the message does not already name.
type lineHandler struct {
	mu    *sync.Mutex
	w     io.Writer
	level slog.Level
	attrs []slog.Attr
}

func (h *lineHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *lineHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	switch {
	case r.Level >= slog.LevelError:
		b.WriteString("error: ")
	case r.Level >= slog.LevelWarn:
		b.WriteString("warning: ")
	}
	b.WriteString(r.Message)
	add := func(a slog.Attr) bool {
		v := a.Value.String()
		if a.Key == "session" && strings.Contains(r.Message, v) {
			return true // "session X was …" says it already
		}
		fmt.Fprintf(&b, " (%s: %s)", a.Key, v)
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	b.WriteByte('\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, b.String())
	return err
}

func (h *lineHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &lineHandler{mu: h.mu, w: h.w, level: h.level, attrs: append(append([]slog.Attr(nil), h.attrs...), as...)}
}

func (h *lineHandler) WithGroup(string) slog.Handler { return h }

// ProcessLogger returns the logger of a long-running command (worker,
// serve): records from level on, on stderr, as JSON objects under --json
// and as key=value text otherwise.
func (a *App) ProcessLogger(level slog.Level) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if a.Flags.JSON {
		return slog.New(slog.NewJSONHandler(a.Stderr, opts))
	}
	return slog.New(slog.NewTextHandler(a.Stderr, opts))
}
