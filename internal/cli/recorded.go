package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
	"github.com/cairnhq/cairn/internal/config"
	"github.com/cairnhq/cairn/provider"
	"github.com/cairnhq/cairn/provider/script"
)

// ModelChosen reports whether this command was told which model to use:
// --model or CAIRN_MODEL. Otherwise a session goes on with the model it
// was run with.
func (a *App) ModelChosen() bool {
	return a.Flags.Model != "" || a.Getenv("CAIRN_MODEL") != ""
}

// UseRecorded makes ag go on with the model and agent name that the
// session's last run recorded (st: the session's state), unless the
// command was told which model to use (ModelChosen). The model is rebuilt
// from the model ID that run.started recorded: "offline", "openai:NAME",
// "anthropic:NAME" (with the credentials and server of this environment)
// or "script:FILE" (the file as recorded). A model that cannot be rebuilt
// is an error that names it and says how to choose another.
func (a *App) UseRecorded(ag *agent.Agent, st *cairn.State) error {
	rec := st.Fingerprint.Model
	if st.Run == "" || rec == "" {
		return nil // no run yet: the configured agent starts it
	}
	if st.Agent != "" {
		ag.Name = st.Agent
	}
	if a.ModelChosen() || ag.Model != nil && ag.Model.ID() == rec {
		return nil
	}
	m, err := a.recordedModel(rec)
	if err != nil {
		_, hint, _ := Describe(err)
		return Fail(fmt.Errorf("the session was run with model %s, which cannot be used here: %w", rec, err),
			hint+"; or go on with another model: --model PROVIDER:NAME")
	}
	ag.Model = m
	return nil
}

// recordedModel builds the model a recorded model ID names.
func (a *App) recordedModel(id string) (provider.Model, error) {
	provider, name, _ := strings.Cut(id, ":")
	switch provider {
	case "script":
		if name == "" {
			return nil, Usage("a script given as data is not recorded", "no script file is recorded")
		}
		m, err := script.Load(name) // as recorded, so that the fingerprint is the same
		if err != nil {
			return nil, Fail(err, "the script file must be where the session's run found it")
		}
		return m, nil
	case "offline", "openai", "anthropic":
	default:
		return nil, Usage("models are offline, openai:NAME, anthropic:NAME or script:FILE", "unknown model provider %q", provider)
	}
	cfg, err := a.Config()
	if err != nil {
		return nil, err
	}
	c := *cfg
	c.SetModel(id)
	return NewModel(&c)
}

// absPath returns p made absolute (as given when that fails).
func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// modelTryTimeout bounds the call TryModel makes.
const modelTryTimeout = 30 * time.Second

// TryModel checks the configured model the way a run would use it: it
// builds it (credentials present, script valid) and, for a model behind a
// server (openai, anthropic), makes one short call, so that a wrong key,
// model name or server is found now. It returns what it found.
func TryModel(ctx context.Context, cfg *config.Config) (string, error) {
	m, err := NewModel(cfg)
	if err != nil {
		return "", err
	}
	switch cfg.Model.Provider {
	case "openai", "anthropic":
	default:
		return "ready (no server to reach)", nil
	}
	ctx, cancel := context.WithTimeout(ctx, modelTryTimeout)
	defer cancel()
	t0 := time.Now()
	_, err = m.Generate(ctx, &provider.Request{Messages: []cairn.Message{{Role: cairn.RoleUser, Content: "Reply with the word OK."}}})
	if err != nil {
		return "", Fail(fmt.Errorf("a test call failed: %w", err), tryHint(cfg.Model.Provider, err))
	}
	return fmt.Sprintf("answered a test call in %s", time.Since(t0).Round(time.Millisecond)), nil
}

// tryHint is the hint for a failed test call of a model.
func tryHint(provider string, err error) string {
	msg := strings.ToLower(err.Error())
	keyVar, urlVar := "OPENAI_API_KEY", "OPENAI_BASE_URL"
	if provider == "anthropic" {
		keyVar, urlVar = "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"
	}
	switch {
	case strings.Contains(msg, "401") || strings.Contains(msg, "403") || strings.Contains(msg, "api key") ||
		strings.Contains(msg, "api_key") || strings.Contains(msg, "authentication") || strings.Contains(msg, "unauthorized"):
		return "the server refused the key: check " + keyVar
	case strings.Contains(msg, "404") || strings.Contains(msg, "not_found") || strings.Contains(msg, "does not exist"):
		return "the server does not know that model: check the name (--model " + provider + ":NAME)"
	case cairn.IsUnavailable(err) || strings.Contains(msg, "dial tcp") || strings.Contains(msg, "no such host") ||
		strings.Contains(msg, "timeout") || strings.Contains(msg, "deadline exceeded"):
		return "the model's server did not answer: check the network, and " + urlVar + " or model.base_url if set"
	}
	return "check the model's name, key and server; --model offline works without any"
}
