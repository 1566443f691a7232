package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/cli"
	"github.com/cairnhq/cairn/sessions"
)

func newImportCmd(app *cli.App) *cobra.Command {
	var format, as string
	c := &cobra.Command{
		Use:   "import FILE [--as ID] [--format cairn|openai|checkpoint]",
		Short: "Read a session from a file, validated fully before anything is written",
		Long: `Read a session document (FILE, or - for stdin) and save it as a new
session. The format is detected when --format is not given. The whole file is
validated before anything is written: a malformed file (a name twice in an
object, invalid UTF-8, a tool result whose call was never asked for, …) is
refused with the position of the fault, and the store is left as it was.

A long history is written in several appends. Until the last one is written
the session carries the label cairn.import and sessions list shows it as
incomplete; if the import is killed, importing the same file again finishes
it, and cairn sessions gc removes it.`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			if as != "" {
				if err := cairn.ValidateID(as); err != nil {
					return cli.BadID(fmt.Errorf("--as: %w", err))
				}
			}
			var f sessions.Format
			if format != "" {
				var err error
				if f, err = sessions.ParseFormat(format); err != nil {
					return cli.Usage("--format is cairn, openai or checkpoint", "%v", err)
				}
			}
			data, err := readInput(app, a[0], sessions.DefaultMaxBytes)
			if err != nil {
				return err
			}
			store, _, err := app.OpenStore(c.Context())
			if err != nil {
				return err
			}
			defer store.Close()
			in, err := sessions.ImportInto(c.Context(), store, data, f, sessions.ImportOptions{ID: as})
			if err != nil {
				return importFailed(a[0], err)
			}
			m, rep := in.Memory, in.Report
			app.NoteSnapshot(c.Context(), store, in.ID, nil)
			if in.Resumed > 0 {
				app.Notef("note: finished the import of %s into %s, which had stopped after %d of its %d events", a[0], in.ID, in.Resumed, m.Len())
			}
			if s := rep.String(); s != "" {
				app.Notef("note: %s", s)
			}
			if app.Flags.JSON {
				return cli.WriteJSON(app.Stdout, map[string]any{"id": in.ID, "events": m.Len(), "format": rep.Format})
			}
			app.Printf("imported %s (%d events, %s format)\n", in.ID, m.Len(), rep.Format)
			return nil
		},
	}
	c.Flags().StringVar(&format, "format", "", "cairn, openai or checkpoint (default: detected)")
	c.Flags().StringVar(&as, "as", "", "the new session's ID (default: the document's, or a new random ID)")
	return c
}

// importFailed explains a failed import of file: a document that does not
// import, or a failed write.
func importFailed(file string, err error) error {
	var pe *sessions.PartialError
	switch {
	case sessions.NotImported(err):
		return cli.Fail(fmt.Errorf("%s: %w", file, err), "nothing was written; fix the file at the position given")
	case errors.As(err, &pe):
		return cli.Fail(err, "import the same file again to finish it, or remove it with `cairn sessions gc`")
	case errors.Is(err, cairn.ErrExists):
		return cli.Fail(err, "choose another ID with --as, or delete the existing session first")
	case errors.Is(err, cairn.ErrInvalidID):
		return cli.Fail(err, "session IDs are 1-128 characters of A-Z a-z 0-9 _ -")
	}
	return cli.Fail(err, "nothing was kept; check the store with `cairn doctor`")
}

// readInput reads a file (or stdin for "-") of at most limit bytes.
func readInput(app *cli.App, name string, limit int64) ([]byte, error) {
	var r io.Reader = app.Stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, cli.Fail(fmt.Errorf("open %s: %w", name, err), "check the file name")
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, cli.Fail(fmt.Errorf("read %s: %w", name, err), "check the file")
	}
	if int64(len(data)) > limit {
		return nil, cli.Fail(fmt.Errorf("%s is larger than %d bytes: %w", name, limit, cairn.ErrTooLarge), "split the history or raise the limit")
	}
	return data, nil
}
