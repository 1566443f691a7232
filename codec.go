package cairn

import "encoding/json"

// jsonUnmarshal is the one place the core decodes JSON, so that a faster
// decoder can be swapped in without touching callers.
func jsonUnmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }
