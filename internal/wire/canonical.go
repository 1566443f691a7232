package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Canonical re-encodes JSON with object keys sorted at every level and
// numbers kept exactly as written.
func Canonical(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("canonical json: %w", err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("canonical json: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// SameJSON reports whether a and b are the same JSON value: equal once
// canonical. Invalid JSON is the same as nothing.
func SameJSON(a, b []byte) bool {
	ca, err1 := Canonical(a)
	cb, err2 := Canonical(b)
	return err1 == nil && err2 == nil && bytes.Equal(ca, cb)
}
