package agent_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/cairnhq/cairn/internal/testing/testenv"
)

// TestMain fails the package's tests if a run leaves a goroutine behind
// (a tool call, a model call, a timer).
func TestMain(m *testing.M) {
	testenv.QuickRaceExit()
	goleak.VerifyTestMain(m)
}
