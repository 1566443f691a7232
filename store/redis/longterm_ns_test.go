package redis_test

import (
	"testing"

	"github.com/cairnhq/cairn/internal/testing/testenv"
	"github.com/cairnhq/cairn/longterm/lttest"
)

// TestLongTerm_SessionNamespaces: the memories of three session
// namespaces on one server keep apart.
func TestLongTerm_SessionNamespaces(t *testing.T) {
	c := ltClient(t)
	var scopes [3]string
	for i := range scopes {
		scopes[i] = "ltns_" + testenv.RandHex(6)
		dropLater(t, c, scopes[i])
	}
	lttest.SessionNamespacesByURL(t, scopes, ltURL)
}
