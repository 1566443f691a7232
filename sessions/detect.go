package sessions

import (
	"bytes"
	"encoding/json"
)

// Detect tells the format of a document by its shape: an object whose
// "format" is "cairn.memory" is Cairn; a JSON array (of messages) or an
// object with "messages" is OpenAI; an object with "history" is Checkpoint.
// Anything else is an *ImportError that says what was found.
func Detect(data []byte) (Format, error) {
	if err := checkSyntax(data); err != nil {
		return "", err
	}
	top := value{raw: bytes.TrimSpace(data), off: skipSep(data, 0)}
	switch {
	case top.is("an array"):
		return OpenAI, nil
	case !top.is("an object"):
		return "", positioned("", top.off, "cannot tell the format of %s: want a cairn memory document, a list of messages or a checkpoint object", kindOf(top.raw))
	}
	o, err := asObject(top, "")
	if err != nil {
		return "", err
	}
	if v, ok := o.vals["format"]; ok {
		var name string
		if json.Unmarshal(v.raw, &name) == nil && name == documentFormat {
			return Cairn, nil
		}
		return "", positioned("format", v.off, "is %s; a cairn memory document has \"format\": %q", v.raw, documentFormat)
	}
	_, hasMessages := o.vals["messages"]
	_, hasHistory := o.vals["history"]
	_, hasEvents := o.vals["events"]
	switch {
	case hasMessages && hasHistory:
		return "", positioned("", top.off, "has both \"messages\" and \"history\"; give the format")
	case hasMessages:
		return OpenAI, nil
	case hasHistory:
		return Checkpoint, nil
	case hasEvents:
		return Cairn, nil
	}
	return "", positioned("", top.off, "cannot tell the format: the object has none of \"format\": %q, \"messages\" or \"history\"", documentFormat)
}
