package server

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// A JSON Schema checker for the part of JSON Schema the OpenAPI document
// uses: type (one or a list), properties, required, additionalProperties,
// items, minItems, enum, const, oneOf, minimum, maximum and local $ref.
// Anything else in a schema is an error, so that the document cannot use a
// keyword this checker would silently skip.

type schemaChecker struct {
	doc map[string]any // the whole document, for $ref
}

var knownKeywords = []string{"type", "properties", "required", "additionalProperties", "items", "minItems",
	"enum", "const", "oneOf", "minimum", "maximum", "$ref", "description", "format", "default", "pattern"}

// check returns the first way v breaks schema, or nil. where names v's
// place in the body, for the message.
func (c *schemaChecker) check(schema map[string]any, v any, where string) error {
	for k := range schema {
		if !slices.Contains(knownKeywords, k) {
			return fmt.Errorf("%s: the schema uses %q, which the checker does not know", where, k)
		}
	}
	if ref, ok := schema["$ref"].(string); ok {
		target, err := c.resolve(ref)
		if err != nil {
			return err
		}
		return c.check(target, v, where)
	}
	if alts, ok := schema["oneOf"].([]any); ok {
		n := 0
		for _, a := range alts {
			if c.check(a.(map[string]any), v, where) == nil {
				n++
			}
		}
		if n != 1 {
			return fmt.Errorf("%s: %s matches %d of the oneOf schemas, want 1", where, short(v), n)
		}
	}
	if t, ok := schema["type"]; ok {
		var types []string
		switch tt := t.(type) {
		case string:
			types = []string{tt}
		case []any:
			for _, x := range tt {
				types = append(types, x.(string))
			}
		}
		if !slices.Contains(types, jsonKind(v)) && !(jsonKind(v) == "integer" && slices.Contains(types, "number")) {
			return fmt.Errorf("%s: %s is a %s, want %s", where, short(v), jsonKind(v), strings.Join(types, " or "))
		}
	}
	if e, ok := schema["enum"].([]any); ok && !slices.ContainsFunc(e, func(x any) bool { return equalJSON(x, v) }) {
		return fmt.Errorf("%s: %s is not one of %v", where, short(v), e)
	}
	if cv, ok := schema["const"]; ok && !equalJSON(cv, v) {
		return fmt.Errorf("%s: %s is not %v", where, short(v), cv)
	}
	if n, ok := v.(float64); ok {
		if m, ok := schema["minimum"].(float64); ok && n < m {
			return fmt.Errorf("%s: %v is below the minimum %v", where, n, m)
		}
		if m, ok := schema["maximum"].(float64); ok && n > m {
			return fmt.Errorf("%s: %v is above the maximum %v", where, n, m)
		}
	}
	switch val := v.(type) {
	case map[string]any:
		return c.checkObject(schema, val, where)
	case []any:
		if m, ok := schema["minItems"].(float64); ok && float64(len(val)) < m {
			return fmt.Errorf("%s: %d items, want at least %v", where, len(val), m)
		}
		if items, ok := schema["items"].(map[string]any); ok {
			for i, x := range val {
				if err := c.check(items, x, fmt.Sprintf("%s[%d]", where, i)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (c *schemaChecker) checkObject(schema, val map[string]any, where string) error {
	props, _ := schema["properties"].(map[string]any)
	if req, ok := schema["required"].([]any); ok {
		for _, r := range req {
			if _, ok := val[r.(string)]; !ok {
				return fmt.Errorf("%s: the required field %q is missing", where, r)
			}
		}
	}
	keys := make([]string, 0, len(val))
	for k := range val {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		sub := where + "." + k
		if p, ok := props[k].(map[string]any); ok {
			if err := c.check(p, val[k], sub); err != nil {
				return err
			}
			continue
		}
		switch ap := schema["additionalProperties"].(type) {
		case bool:
			if !ap {
				return fmt.Errorf("%s: the field is not in the schema", sub)
			}
		case map[string]any:
			if err := c.check(ap, val[k], sub); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *schemaChecker) resolve(ref string) (map[string]any, error) {
	path, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil, fmt.Errorf("$ref %q is not local", ref)
	}
	var cur any = c.doc
	for _, part := range strings.Split(path, "/") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("$ref %q does not resolve", ref)
		}
		cur = m[part]
	}
	m, ok := cur.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("$ref %q does not resolve", ref)
	}
	return m, nil
}

func jsonKind(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		if x == math.Trunc(x) {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func short(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 80 {
		return string(b[:80]) + "…"
	}
	return string(b)
}
