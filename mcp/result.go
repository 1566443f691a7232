package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"mime"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnhq/cairn/agent"
)

// DefaultMaxOutput is the most bytes of a result's text kept in the
// history (and shown to the model) when Config.MaxOutput is 0: the
// agent's own limit for any tool (agent.DefaultMaxToolOutput).
const DefaultMaxOutput = agent.DefaultMaxToolOutput

// Blob is binary content of a tool result: an image, audio, or an
// embedded resource's blob.
type Blob struct {
	Kind     string // "image", "audio" or "resource"
	MIMEType string
	URI      string // of a resource, "" otherwise
	Data     []byte
	SHA256   string // of Data, in hex
}

// BlobFunc keeps binary content somewhere and returns a reference to it
// (a path, a URL), which the result names instead of holding the bytes.
type BlobFunc func(ctx context.Context, b Blob) (ref string, err error)

// BlobDir returns a BlobFunc that writes each blob into dir as
// SHA256.EXT (the extension from its MIME type, ".bin" if none is known)
// and returns the file's path. Equal content is written once.
func BlobDir(dir string) BlobFunc {
	return func(_ context.Context, b Blob) (string, error) {
		ext := ".bin"
		if exts, _ := mime.ExtensionsByType(b.MIMEType); len(exts) > 0 {
			ext = exts[0]
		}
		path := filepath.Join(dir, b.SHA256+ext)
		if _, err := os.Stat(path); err == nil {
			return path, nil
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
		tmp, err := os.CreateTemp(dir, ".blob-*")
		if err != nil {
			return "", err
		}
		_, werr := tmp.Write(b.Data)
		if cerr := tmp.Close(); werr == nil {
			werr = cerr
		}
		if werr == nil {
			werr = os.Rename(tmp.Name(), path)
		}
		if werr != nil {
			os.Remove(tmp.Name())
			return "", werr
		}
		return path, nil
	}
}

// render turns a tool result into the text the history keeps and the model
// sees: the text blocks as they are; binary content as a reference (kind,
// type, size, SHA-256, and where blobs kept it); resource links and
// embedded text resources with their URI; structured content as JSON when
// no text block already holds it. The text is cut to max bytes, by the
// agent's own cut (agent.CutOutput).
func render(ctx context.Context, res *sdk.CallToolResult, blobs BlobFunc, max int) string {
	var parts, texts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, c.Text)
			texts = append(texts, c.Text)
		case *sdk.ImageContent:
			parts = append(parts, blobRef(ctx, blobs, Blob{Kind: "image", MIMEType: c.MIMEType, Data: c.Data}))
		case *sdk.AudioContent:
			parts = append(parts, blobRef(ctx, blobs, Blob{Kind: "audio", MIMEType: c.MIMEType, Data: c.Data}))
		case *sdk.ResourceLink:
			parts = append(parts, linkRef(c))
		case *sdk.EmbeddedResource:
			parts = append(parts, embedded(ctx, blobs, c.Resource))
		case nil:
		default:
			raw, _ := json.Marshal(c)
			parts = append(parts, "[content "+string(raw)+"]")
		}
	}
	if res.StructuredContent != nil {
		raw, err := json.Marshal(res.StructuredContent)
		switch {
		case err != nil:
			parts = append(parts, "[structured content that is not JSON: "+err.Error()+"]")
		case len(parts) == 0:
			parts = append(parts, string(raw))
		case !covered(raw, texts):
			parts = append(parts, "structured content: "+string(raw))
		}
	}
	return agent.CutOutput(strings.Join(parts, "\n"), max)
}

// covered reports whether the text blocks already say what structured
// content says: one of them is the same JSON value (the specification asks
// servers to send one), or every leaf of the value is a string found in
// the text ({"content": TEXT}, as some servers wrap their text).
func covered(raw []byte, texts []string) bool {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	for _, t := range texts {
		var tv any
		if json.Unmarshal([]byte(t), &tv) == nil && reflect.DeepEqual(v, tv) {
			return true
		}
	}
	all := strings.Join(texts, "\n")
	var leaves func(v any) bool
	leaves = func(v any) bool {
		switch v := v.(type) {
		case string:
			return strings.Contains(all, v)
		case map[string]any:
			for _, x := range v {
				if !leaves(x) {
					return false
				}
			}
			return len(v) > 0
		case []any:
			for _, x := range v {
				if !leaves(x) {
					return false
				}
			}
			return len(v) > 0
		}
		return false
	}
	return len(texts) > 0 && leaves(v)
}

func blobRef(ctx context.Context, blobs BlobFunc, b Blob) string {
	sum := sha256.Sum256(b.Data)
	b.SHA256 = hex.EncodeToString(sum[:])
	what := b.Kind
	if b.URI != "" {
		what += " " + b.URI
	}
	if b.MIMEType != "" {
		what += " " + b.MIMEType
	}
	s := fmt.Sprintf("[%s, %d bytes, sha256:%s", what, len(b.Data), b.SHA256)
	if blobs == nil {
		return s + "; not kept]"
	}
	ref, err := blobs(ctx, b)
	if err != nil {
		return s + "; not kept: " + err.Error() + "]"
	}
	return s + ", kept at " + ref + "]"
}

func linkRef(l *sdk.ResourceLink) string {
	s := "[resource link " + l.URI
	var about []string
	for _, v := range []string{l.Name, l.MIMEType} {
		if v != "" {
			about = append(about, v)
		}
	}
	if l.Size != nil {
		about = append(about, fmt.Sprintf("%d bytes", *l.Size))
	}
	if len(about) > 0 {
		s += " (" + strings.Join(about, ", ") + ")"
	}
	if l.Description != "" {
		s += ": " + l.Description
	}
	return s + "]"
}

func embedded(ctx context.Context, blobs BlobFunc, r *sdk.ResourceContents) string {
	if r == nil {
		return "[empty resource]"
	}
	if len(r.Blob) > 0 {
		return blobRef(ctx, blobs, Blob{Kind: "resource", URI: r.URI, MIMEType: r.MIMEType, Data: r.Blob})
	}
	head := "[resource " + r.URI
	if r.MIMEType != "" {
		head += " " + r.MIMEType
	}
	return head + "]\n" + r.Text
}
