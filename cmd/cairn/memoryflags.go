package main

import (
	"context"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/agent/builtin"
	"github.com/cairnhq/cairn/internal/cli"
	"github.com/cairnhq/cairn/longterm"
)

// memoryFlags are --memory-ns and --recall, for the commands that run the
// agent: run, chat and sessions resume.
type memoryFlags struct {
	ns     string
	recall int
	store  longterm.Store // open while the command runs, once used
}

// labels returns the labels that record the namespace on a new session
// (builtin.MemoryLabel), none without one.
func (m *memoryFlags) labels() map[string]string {
	if m.ns == "" {
		return nil
	}
	return map[string]string{builtin.MemoryLabel: m.ns}
}

// fromSession takes the namespace a session's label records when none
// was given, and says so.
func (m *memoryFlags) fromSession(app *cli.App, s *agent.Session) {
	if m.ns != "" || s.Memory().Session == nil {
		return
	}
	if ns := s.Memory().Session.Labels[builtin.MemoryLabel]; ns != "" && longterm.ValidateNamespace(ns) == nil {
		m.ns = ns
		app.Notef("long-term memory: %s (the session's %s label)", ns, builtin.MemoryLabel)
	}
}

func (m *memoryFlags) add(c *cobra.Command) {
	c.Flags().StringVar(&m.ns, "memory-ns", "", "give the agent long-term memory in this namespace (users/ada): memory_save, memory_search, recall")
	c.Flags().IntVar(&m.recall, "recall", 5, "with --memory-ns: put this many memories that match the prompt into the context at the start")
}

// check refuses a bad namespace, --recall without --memory-ns, and a
// --recall out of range.
func (m *memoryFlags) check(c *cobra.Command) error {
	if m.ns != "" {
		if err := longterm.ValidateNamespace(m.ns); err != nil {
			return cli.Usage(cli.MemoryRules, "--memory-ns %q: %v", m.ns, err)
		}
	} else if c.Flags().Changed("recall") {
		return cli.Usage("add --memory-ns NAMESPACE", "--recall needs --memory-ns: it recalls the memories of a namespace")
	}
	if m.recall < 0 || m.recall > 50 {
		return cli.Usage("give --recall between 0 and 50", "--recall %d is not a number of memories", m.recall)
	}
	return nil
}

// attach gives ag the memory tools of the namespace, when one is given.
// Without one, for a session whose model called them, it refuses to
// finish a run that waits on such a call (it would be answered "unknown
// tool"), and warns that a new turn goes on without them. command is the
// command line to give again with the flag.
func (m *memoryFlags) attach(ctx context.Context, app *cli.App, ag *agent.Agent, st *cairn.State, command string) error {
	if m.ns == "" {
		if st == nil {
			return nil
		}
		hint := command + " --memory-ns NAMESPACE (cairn memory list shows the namespaces)"
		for _, p := range st.Pending {
			if strings.HasPrefix(p.Name, "memory_") {
				return cli.Usage("give it the namespace: "+hint,
					"the session's run waits on a call of %s (long-term memory), and no --memory-ns gives the agent that tool", p.Name)
			}
		}
		if tool := memoryToolUsed(st); tool != "" {
			app.Warnf("the session called %s before; without --memory-ns the agent goes on with no long-term memory tools (%s)", tool, hint)
		}
		return nil
	}
	mem, _, err := app.OpenMemory(ctx)
	if err != nil {
		return err
	}
	m.store = mem
	tools, err := memoryTools(app, mem, m.ns)
	if err != nil {
		return err
	}
	ag.Tools = append(ag.Tools, tools...)
	return nil
}

// memoryTools returns the long-term memory tools of namespace ns, each
// needing approval when the configuration says so.
func memoryTools(app *cli.App, mem longterm.Store, ns string) ([]*agent.Tool, error) {
	cfg, err := app.Config()
	if err != nil {
		return nil, err
	}
	tools := builtin.MemoryTools(mem, ns)
	for i, t := range tools {
		if slices.Contains(cfg.Agent.RequireApproval, t.Name()) {
			tools[i] = t.With(agent.RequireApproval())
		}
	}
	return tools, nil
}

// background returns the run option that puts the memories recalled for
// prompt in front of it; none without a namespace or with --recall 0.
func (m *memoryFlags) background(ctx context.Context, prompt string) ([]agent.RunOption, error) {
	if m.store == nil || m.recall == 0 {
		return nil, nil
	}
	text, err := builtin.RecallMemories(ctx, m.store, m.ns, prompt, m.recall)
	if err != nil {
		return nil, cli.MemoryFail("recall", err)
	}
	return []agent.RunOption{agent.Background(text)}, nil
}

// Close closes the memory store, if attach opened it.
func (m *memoryFlags) Close() {
	if m.store != nil {
		m.store.Close()
	}
}

// memoryToolUsed returns the name of a long-term memory tool that the
// session's model called, or "".
func memoryToolUsed(st *cairn.State) string {
	if st == nil {
		return ""
	}
	for _, msg := range st.Messages {
		for _, c := range msg.ToolCalls {
			if strings.HasPrefix(c.Name, "memory_") {
				return c.Name
			}
		}
	}
	return ""
}
