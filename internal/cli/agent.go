package cli

import (
	"slices"
	"strings"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/agent/builtin"
	"github.com/cairnhq/cairn/internal/config"
	"github.com/cairnhq/cairn/provider"
	"github.com/cairnhq/cairn/provider/anthropic"
	"github.com/cairnhq/cairn/provider/offline"
	"github.com/cairnhq/cairn/provider/openai"
	"github.com/cairnhq/cairn/provider/script"
)

// NewModel builds the configured model.
func NewModel(cfg *config.Config) (provider.Model, error) {
	m := cfg.Model
	switch m.Provider {
	case "", "offline":
		return offline.New(), nil
	case "script":
		if m.Name == "" {
			return nil, Usage("give the script's file: --model script:FILE", "the script model needs a file")
		}
		s, err := script.Load(absPath(m.Name)) // recorded whole, so that a resume elsewhere finds it
		if err != nil {
			return nil, Fail(err, "the script format is {\"steps\": [{\"text\": …, \"tool_calls\": […]}]}")
		}
		return s, nil
	case "openai":
		mod, err := openai.New(openai.Config{Model: m.Name, BaseURL: m.BaseURL})
		if err != nil {
			return nil, Fail(err, modelHint("openai", err))
		}
		return mod, nil
	case "anthropic":
		mod, err := anthropic.New(anthropic.Config{Model: m.Name, BaseURL: m.BaseURL})
		if err != nil {
			return nil, Fail(err, modelHint("anthropic", err))
		}
		return mod, nil
	}
	return nil, Usage("models are offline, openai:NAME, anthropic:NAME or script:FILE", "unknown model provider %q", m.Provider)
}

func modelHint(provider string, err error) string {
	switch {
	case provider == "openai" && strings.Contains(err.Error(), "key"):
		return "set OPENAI_API_KEY, or OPENAI_BASE_URL for a local OpenAI-compatible server; or use --model offline"
	case provider == "anthropic" && strings.Contains(err.Error(), "key"):
		return "set ANTHROPIC_API_KEY, or use --model offline"
	}
	return "give the model as --model " + provider + ":NAME"
}

// CheckModel reports whether the configured model can be built: its
// credentials are present and a script file is valid.
func CheckModel(cfg *config.Config, getenv func(string) string) error {
	_, err := NewModel(cfg)
	return err
}

// NewAgent builds the configured agent on store, with the built-in tools
// and the tools of the configured MCP servers.
func (a *App) NewAgent(store cairn.Store) (*agent.Agent, error) {
	cfg, err := a.Config()
	if err != nil {
		return nil, err
	}
	model, err := NewModel(cfg)
	if err != nil {
		return nil, err
	}
	onError := cfg.Persistence.OnError
	if onError == "" {
		onError = agent.Degrade
	}
	tools := builtin.Tools()
	for i, t := range tools {
		if slices.Contains(cfg.Agent.RequireApproval, t.Name()) {
			tools[i] = t.With(agent.RequireApproval())
		}
	}
	mcpTools, err := a.mcpTools(tools) // the configured MCP servers', started once (App.Close)
	if err != nil {
		return nil, err
	}
	tools = append(tools, mcpTools...)
	return &agent.Agent{
		Name:           cfg.Agent.Name,
		Instructions:   cfg.Agent.Instructions,
		Model:          model,
		Tools:          tools,
		MaxSteps:       cfg.Agent.MaxSteps,
		Store:          store,
		OnError:        onError,
		Logger:         a.Logger(),
		ContextTokens:  cfg.Agent.ContextTokens,
		Compaction:     cfg.Agent.Compaction,
		SnapshotEvents: cfg.Persistence.SnapshotEvents,
		SnapshotBytes:  cfg.Persistence.SnapshotBytes,
	}, nil
}
