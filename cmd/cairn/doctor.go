package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/internal/cli"
)

type check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

func newDoctorCmd(app *cli.App) *cobra.Command {
	return &cobra.Command{
		Use:   "doctor",
		Short: "Check the configuration, the store and the model credentials",
		Args:  args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			checks := doctor(c.Context(), app)
			failed := 0
			for _, ch := range checks {
				if !ch.OK {
					failed++
				}
			}
			if app.Flags.JSON {
				if err := cli.WriteJSON(app.Stdout, checks); err != nil {
					return err
				}
			} else {
				for _, ch := range checks {
					mark := "ok  "
					if !ch.OK {
						mark = "FAIL"
					}
					app.Printf("%s %-8s %s\n", mark, ch.Name, ch.Detail)
					if ch.Fix != "" {
						app.Printf("              fix: %s\n", ch.Fix)
					}
				}
			}
			if failed > 0 {
				return cli.Fail(fmt.Errorf("%d check(s) failed", failed), "apply the fixes printed above")
			}
			return nil
		},
	}
}

func doctor(ctx context.Context, app *cli.App) []check {
	cfg, err := app.Config()
	if err != nil {
		_, hint, _ := cli.Describe(err)
		return []check{{Name: "config", Detail: err.Error(), Fix: hint}}
	}
	src := "none found; using the defaults"
	if cfg.Source != "" {
		src = cfg.Source
	}
	checks := []check{{Name: "config", OK: true, Detail: src}}

	u := cfg.StoreURL()
	st := check{Name: "store", Detail: cairn.RedactURL(u)}
	if !cfg.Enabled() {
		st.OK, st.Detail = true, "persistence is disabled: sessions are volatile (persistence.enabled = false)"
	} else {
		tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		t0 := time.Now()
		s, err := app.OpenURL(tctx, u)
		if err == nil {
			_, err = s.List(tctx, cairn.ListOptions{Limit: 1})
			s.Close()
		}
		cancel()
		if err != nil {
			_, hint, _ := cli.Describe(err)
			st.Detail, st.Fix = err.Error(), hint
		} else {
			st.OK = true
			st.Detail = fmt.Sprintf("%s, namespace %q, reachable in %s", cairn.RedactURL(u), cfg.Persistence.Namespace, time.Since(t0).Round(time.Millisecond))
		}
	}
	checks = append(checks, st)
	checks = append(checks, modelCheck(app))
	return checks
}

func modelCheck(app *cli.App) check {
	cfg, _ := app.Config()
	ch := check{Name: "model", Detail: cfg.ModelSpec()}
	if err := cli.CheckModel(cfg, app.Getenv); err != nil {
		_, hint, _ := cli.Describe(err)
		ch.Detail, ch.Fix = err.Error(), hint
		return ch
	}
	ch.OK = true
	return ch
}
