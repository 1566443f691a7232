package reliability

import (
	"flag"
	"os"
	"strconv"
	"testing"

	"github.com/cairnhq/cairn/internal/testing/fault"
	"github.com/cairnhq/cairn/internal/testing/testenv"
)

var (
	long  = flag.Bool("long", false, "land 200 kills on each backend, 1,000 in all (also CAIRN_RELIABILITY_LONG=1)")
	kills = flag.Int("kills", 0, "kills to land on each backend (default 20, or 200 with -long; also CAIRN_RELIABILITY_KILLS)")
	seed  = flag.Uint64("seed", 0, "seed of the randomized tests' schedules (kills, cuts), to replay a failed run (default from the clock, or $CAIRN_RELIABILITY_SEED)")
)

// testSeed returns the seed of a randomized test's schedule and logs it
// first, so that a failure, even a timeout, can be replayed with -seed (or
// $CAIRN_RELIABILITY_SEED). The seed fixes the schedule (which worker kills
// when, where a cut falls), not the machine's timing.
func testSeed(t *testing.T) uint64 {
	t.Helper()
	return testenv.Seed(t, *seed, "schedule", "seed", "CAIRN_RELIABILITY_SEED")
}

// wantKills returns the SIGKILLs the crash test lands on each backend.
func wantKills() int {
	if *kills > 0 {
		return *kills
	}
	if n, err := strconv.Atoi(os.Getenv("CAIRN_RELIABILITY_KILLS")); err == nil && n > 0 {
		return n
	}
	if *long || os.Getenv("CAIRN_RELIABILITY_LONG") == "1" {
		return 200
	}
	return 20
}

func TestMain(m *testing.M) {
	testenv.QuickRaceExit()
	flag.Parse()
	code := m.Run()
	fault.RemoveBuilds()
	os.Exit(code)
}

// cairnBinary builds the cairn command once per test run.
func cairnBinary(t *testing.T) string {
	t.Helper()
	return fault.Build(t, "github.com/cairnhq/cairn/cmd/cairn")
}
