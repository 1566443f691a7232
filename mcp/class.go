package mcp

import (
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnhq/cairn/agent"
)

// Class is how the agent treats the calls of a tool: whether a call may
// run again when a run is resumed after a crash, and whether each call
// waits for a person's decision.
//
// Idempotent tools are run again on resume when a call was asked for and
// has no recorded result. Other tools record tool.started before they run
// and, if the process died before the result was recorded, get the error
// result agent.OutcomeUnknown on resume instead of a second run.
type Class struct {
	Idempotent bool   // may run again on resume (agent.Tool.Idempotent)
	Approval   bool   // each call waits for a person's decision
	ReadOnly   bool   // the server says the tool changes nothing (shown, not used)
	Why        string // what decided: the annotations, or the setting that pinned it
}

// String names the class for people: "read-only", "idempotent" or "side
// effect", with ", approval" when calls wait for a decision.
func (c Class) String() string {
	s := "side effect"
	switch {
	case c.ReadOnly && c.Idempotent:
		s = "read-only"
	case c.Idempotent:
		s = "idempotent"
	}
	if c.Approval {
		s += ", approval"
	}
	return s
}

// Options returns the agent.ToolOptions of the class.
func (c Class) Options() []agent.ToolOption {
	var opts []agent.ToolOption
	if !c.Idempotent {
		opts = append(opts, agent.NotIdempotent())
	}
	if c.Approval {
		opts = append(opts, agent.RequireApproval())
	}
	return opts
}

// Policy pins the class of a server's tools over their annotations. A nil
// field follows the annotations; a tool's own setting wins over the
// server's.
type Policy struct {
	Idempotent *bool
	Approval   *bool
	Tools      map[string]ToolPolicy // by the tool's name on the server
}

// ToolPolicy pins the class of one tool, or hides it, and may bound its
// calls.
type ToolPolicy struct {
	Disabled   bool // the model never sees the tool
	Idempotent *bool
	Approval   *bool
	// Timeout bounds each call of the tool instead of Config.CallTimeout;
	// 0 follows the server's, a negative value is no bound.
	Timeout time.Duration
}

// Classify returns the class of a tool from its annotations, which are
// hints from the server (the MCP specification says so: a client should
// not rely on them for a server it does not trust):
//
//   - readOnlyHint or idempotentHint: idempotent, run again on resume;
//   - anything else, no annotations included: not idempotent;
//   - a tool that is not read-only and does not say destructiveHint: false
//     is destructive (the specification's default) and asks for approval.
//
// So a tool without annotations records its start, is never run twice,
// and waits for a person's decision; pin it otherwise with a Policy.
func Classify(a *sdk.ToolAnnotations) Class {
	if a == nil {
		return Class{Approval: true, Why: "no annotations"}
	}
	var why []string
	c := Class{ReadOnly: a.ReadOnlyHint}
	if a.ReadOnlyHint {
		why = append(why, "readOnlyHint")
	}
	if a.IdempotentHint && !a.ReadOnlyHint {
		why = append(why, "idempotentHint")
	}
	c.Idempotent = a.ReadOnlyHint || a.IdempotentHint
	if !a.ReadOnlyHint {
		switch {
		case a.DestructiveHint == nil:
			c.Approval = true
			why = append(why, "destructiveHint unset (default true)")
		case *a.DestructiveHint:
			c.Approval = true
			why = append(why, "destructiveHint")
		default:
			why = append(why, "destructiveHint false")
		}
	}
	if len(why) == 0 {
		why = append(why, "no hint of idempotence")
	}
	c.Why = "annotations: " + strings.Join(why, ", ")
	return c
}

// classOf returns the class of a tool under a policy, and whether the
// policy hides it. where names the policy's settings in Why ("config", say).
func (p Policy) classOf(tool string, a *sdk.ToolAnnotations, where string) (Class, bool) {
	c := Classify(a)
	tp := p.Tools[tool]
	if tp.Disabled {
		return c, false
	}
	var pinned []string
	pin := func(dst *bool, server, own *bool, what string) {
		switch {
		case own != nil:
			*dst = *own
			pinned = append(pinned, what+" (tool)")
		case server != nil:
			*dst = *server
			pinned = append(pinned, what+" (server)")
		}
	}
	pin(&c.Idempotent, p.Idempotent, tp.Idempotent, "idempotent")
	pin(&c.Approval, p.Approval, tp.Approval, "approval")
	if len(pinned) > 0 {
		if where == "" {
			where = "policy"
		}
		c.Why = where + " pins " + strings.Join(pinned, ", ") + "; " + c.Why
	}
	return c, true
}
