package reliability

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
)

var (
	long  = flag.Bool("long", false, "land 200 kills on each backend, 1,000 in all (also CAIRN_RELIABILITY_LONG=1)")
	kills = flag.Int("kills", 0, "kills to land on each backend (default 20, or 200 with -long; also CAIRN_RELIABILITY_KILLS)")
)

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

var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// cairnBinary builds the cairn command once per test run.
func cairnBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "cairn-reliability-")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "cairn")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/cairnhq/cairn/cmd/cairn").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}
