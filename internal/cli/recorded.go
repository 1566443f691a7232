package cli

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/cairnhq/cairn"
	"github.com/cairnhq/cairn/agent"
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
