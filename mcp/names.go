package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// MaxNameLen is the longest tool name made: the limit of the strictest
// model API (64 characters of letters, digits, '_' and '-').
const MaxNameLen = 64

var serverNameRe = regexp.MustCompile(`^[A-Za-z0-9-]{1,32}$`)

func checkName(name string) error {
	if !serverNameRe.MatchString(name) {
		return fmt.Errorf("MCP server name %q: want 1-32 letters, digits or '-' (its tools are called NAME_TOOL)", name)
	}
	return nil
}

// toolName returns the name the model calls a server's tool by:
// SERVER_TOOL, each character a model API refuses replaced by '_'; a name
// longer than MaxNameLen is shortened and ends with a hash of the tool's
// name, so that it stays unique and the same in every process.
func toolName(server, tool string) string {
	var b strings.Builder
	b.WriteString(server)
	b.WriteByte('_')
	for _, r := range tool {
		if r < 128 && (r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	name := b.String()
	if len(name) <= MaxNameLen {
		return name
	}
	sum := sha256.Sum256([]byte(tool))
	return name[:MaxNameLen-9] + "_" + hex.EncodeToString(sum[:4])
}

// checkSchema returns a tool's input schema as JSON, or why a model could
// not take it: it must be a JSON Schema object of type "object".
func checkSchema(s any) (json.RawMessage, error) {
	if s == nil {
		return nil, errors.New("missing")
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, fmt.Errorf("%s is not a JSON object", short(raw))
	}
	var typ string
	if err := json.Unmarshal(m["type"], &typ); err != nil || typ != "object" {
		return nil, fmt.Errorf(`its type is %s, not "object"`, short(m["type"]))
	}
	var js jsonschema.Schema
	if err := json.Unmarshal(raw, &js); err != nil {
		if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok && te.Field != "" {
			field := te.Field[strings.LastIndex(te.Field, ".")+1:]
			return nil, fmt.Errorf("not a valid JSON Schema: %q is a %s", field, te.Value)
		}
		return nil, fmt.Errorf("not a valid JSON Schema: %v", err)
	}
	return raw, nil
}

func short(raw []byte) string {
	if len(raw) == 0 {
		return "missing"
	}
	if len(raw) > 60 {
		return string(raw[:57]) + "..."
	}
	return string(raw)
}
