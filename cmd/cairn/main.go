// Command cairn runs agents whose sessions survive restarts, crashes and
// long pauses, and manages the saved sessions: list, show, resume, export,
// import, fork, copy between stores, expire and erase.
//
// With no configuration it stores sessions in SQLite at .cairn/cairn.db and
// answers with the offline model, so it works on a fresh machine with no
// API key and no server.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn/internal/cli"
	_ "github.com/cairnhq/cairn/store/all"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	app := cli.NewApp()
	ctx, stop := signalContext(app)
	defer stop()
	defer app.Close() // the MCP servers the command started
	tel.getenv, tel.console = app.Getenv, app.Stderr
	defer tel.Close() // flush the spans and metrics, if any
	root := newRoot(app)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return cli.ExitOK
	}
	if isUsage(err) {
		if c, flagErr := unknownFlagFirst(root, args, err); c != nil {
			err = usageError(c, flagErr)
		} else {
			err = usageError(commandFor(root, args), err)
		}
	}
	msg, hint, code := cli.Describe(err)
	if app.Flags.JSON {
		// Under --json stderr holds JSON lines: the error is one of them.
		_ = json.NewEncoder(os.Stderr).Encode(map[string]any{"level": "ERROR", "msg": msg, "hint": hint, "exit": code})
		return code
	}
	fmt.Fprintf(os.Stderr, "cairn: %s\nhint: %s\n", msg, hint)
	return code
}

// signalContext returns the command's context: SIGTERM cancels it, and so
// does SIGINT (Ctrl+C) unless the command deals with it (app.OnInterrupt:
// a chat cancels the turn and goes on). Later signals are caught too, so
// that the command can record how it stopped.
func signalContext(app *cli.App) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		for s := range sigs {
			if s == os.Interrupt && app.HandleInterrupt() {
				continue
			}
			cancel()
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		cancel()
	}
}

// isUsage reports whether cobra refused the command line itself.
func isUsage(err error) bool {
	var ce *cli.Error
	if errors.As(err, &ce) {
		return false
	}
	s := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "flag needs an argument", "invalid argument", "accepts ", "requires at least", "requires at most", "if any flags in the group"} {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// commandFor returns the command that args name, or root.
func commandFor(root *cobra.Command, args []string) *cobra.Command {
	cmd, _, err := root.Find(args)
	if err != nil || cmd == nil {
		return root
	}
	return cmd
}

func newRoot(app *cli.App) *cobra.Command {
	root := &cobra.Command{
		Use:   "cairn",
		Short: "Durable memory for AI agents",
		Long: `cairn runs agents whose sessions survive restarts, crashes and long pauses.
Every model call, tool call and variable change is saved as an event; any
process can load a session, rebuild its state and go on.

With no configuration, sessions are stored in SQLite at .cairn/cairn.db and
the offline model answers, so cairn works with no API key and no server. The
project's .cairn/ and cairn.toml are looked for from the working directory
upward, as git looks for its repository.

Exit status: 0 success, 1 failure, 2 bad usage, 3 a run ended with events
the store could not save, 4 a run waits for a person to approve tool calls,
130 interrupted (Ctrl+C). With --json, stdout
holds one JSON document and stderr JSON lines.`,
		Version:       version(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	f := root.PersistentFlags()
	f.StringVar(&app.Flags.Store, "store", "", "store URL (sqlite:///path, file:///dir, postgres://…, redis://…, mongodb://…, memory:) or path (./x.db, ./dir/)")
	f.StringVar(&app.Flags.Namespace, "namespace", "", "namespace of the sessions")
	f.StringVar(&app.Flags.Config, "config", "", "config file (default: cairn.toml here or in the nearest folder above, then ~/.config/cairn/cairn.toml)")
	f.StringVar(&app.Flags.Model, "model", "", "model as PROVIDER:NAME (offline, openai:NAME, anthropic:NAME, script:FILE)")
	f.BoolVar(&app.Flags.JSON, "json", false, "print machine-readable JSON")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		if rep, ok := errors.AsType[*repeatedFlagError](err); ok {
			return &cli.Error{Err: rep, Hint: rep.hint(), Code: cli.ExitUsage}
		}
		return usageError(c, err)
	})
	root.AddCommand(newSessionsCmd(app), newMemoryCmd(app), newVersionCmd(app))
	addRuntimeCommands(root, app)
	addCompletions(root, app)
	onceFlags(root)
	root.PersistentPreRunE = func(c *cobra.Command, _ []string) error {
		if app.Flags.JSON && !jsonCommand(c) {
			return cli.Usage("run it without --json", "%s prints nothing for a program to read; --json does not apply", c.CommandPath())
		}
		return nil
	}
	return root
}

// args wraps a cobra argument check so that its error is a usage error.
func args(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(c *cobra.Command, a []string) error {
		if err := check(c, a); err != nil {
			return usageError(c, err)
		}
		return nil
	}
}

// jsonCommand reports whether --json applies to a command: every command
// that prints data, and the long-running ones whose logs it makes JSON;
// not the chat (a conversation), the completion scripts nor help (nor a
// group of commands, which prints its help).
func jsonCommand(c *cobra.Command) bool {
	if c.HasSubCommands() {
		return false // it prints its help
	}
	for p := c; p != nil; p = p.Parent() {
		switch p.Name() {
		case "chat", "completion", "help", cobra.ShellCompRequestCmd, cobra.ShellCompNoDescRequestCmd:
			return false
		}
	}
	return true
}
