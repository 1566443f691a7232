package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/cli"
	"github.com/cairnhq/cairn/sessions"
)

func newExportCmd(app *cli.App) *cobra.Command {
	var format, out string
	c := &cobra.Command{
		Use:   "export ID [--format cairn|openai|checkpoint] [-o FILE]",
		Short: "Write a session to a file or stdout",
		Long: `Write a session as a document:
  cairn       the native memory document (every event; imports back to an equal state)
  openai      the Chat Completions message list, for any OpenAI-compatible client
  checkpoint  agent_profile, current_step, updated_at, variables and history
The openai and checkpoint formats say on stderr what they could not carry.
The document goes to stdout unless -o names a file; then --json prints
{"id", "events", "file", "format"}.`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, a []string) error {
			f, err := sessions.ParseFormat(format)
			if err != nil {
				return cli.Usage("--format is cairn, openai or checkpoint", "%v", err)
			}
			loc, rec, err := locateRecord(c, app, a[0])
			if err != nil {
				return err
			}
			defer loc.Store.Close()
			m, err := cairn.NewMemory(rec.Events...)
			if err != nil {
				return cli.Fail(fmt.Errorf("load %s: %w", loc.ID, err), "the stored history is damaged")
			}
			m.Session = &cairn.SessionMeta{ID: loc.ID, CreatedAt: rec.Info.CreatedAt, Labels: rec.Info.Labels}
			var buf bytes.Buffer
			rep, err := sessions.Export(&buf, f, m)
			if err != nil {
				return cli.Fail(err, "try --format cairn, which carries everything")
			}
			if out == "" || out == "-" {
				if _, err := app.Stdout.Write(buf.Bytes()); err != nil {
					return err
				}
			} else if err := writeFileAtomic(out, buf.Bytes()); err != nil {
				return cli.Fail(fmt.Errorf("write %s: %w", out, err), "check that the folder exists and is writable")
			}
			if s := rep.String(); s != "" {
				app.Notef("note: %s", s)
			}
			if out != "" && out != "-" {
				if app.Flags.JSON {
					return cli.WriteJSON(app.Stdout, map[string]any{"id": loc.ID, "events": len(rec.Events), "file": out, "format": f})
				}
				app.Notef("exported %s (%d events) to %s as %s", loc.ID, len(rec.Events), out, f)
			}
			return nil
		},
	}
	c.Flags().StringVar(&format, "format", "cairn", "cairn, openai or checkpoint")
	c.Flags().StringVarP(&out, "output", "o", "", "write to FILE instead of stdout")
	return c
}

// writeFileAtomic writes data to path through a temporary file and a rename,
// so a reader never sees half a file.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
