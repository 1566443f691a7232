package cairn_test

import (
	"flag"
	"os"
	"testing"

	"github.com/cairnhq/cairn"
)

var writeGolden = flag.Bool("golden.write", false, "write testdata/golden/v1.json and its snapshot from the current code (only when adding a format version)")

// TestWriteGolden writes the golden document of the current format version.
// Golden documents are frozen: a later format version adds its own file and
// keeps every earlier one loading through an upgrade.
func TestWriteGolden(t *testing.T) {
	if !*writeGolden {
		t.Skip("run with -golden.write to regenerate")
	}
	m := sampleMemory(t)
	doc, err := m.DumpJSON()
	if err != nil {
		t.Fatal(err)
	}
	st, _ := m.State()
	snap, _ := st.Snapshot()
	_ = os.MkdirAll("testdata/golden", 0o755)
	name := "testdata/golden/v" + itoa(cairn.FormatVersion)
	if err := os.WriteFile(name+".json", doc, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name+".snapshot", append(snap, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + itoa(n%10)
}
