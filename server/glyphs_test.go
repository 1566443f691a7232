package server

import (
	"fmt"
	"io/fs"
	"os/exec"
	"strings"
	"testing"
	"unicode/utf8"
)

// commonGlyphs are the characters other than ASCII that the inspector's
// pages may show as text: each is in DejaVu Sans, the font a Debian or
// Ubuntu machine falls back to, and in the default fonts of macOS and
// Windows. An icon that no such font has is drawn as SVG (see the paused
// call in rows.html), never written as a character that shows as a box.
const commonGlyphs = "·…→←–—«»‹›⚠◐●×≤≥’“”"

// TestPages_GlyphsInCommonFonts fails for a character in the templates,
// the style sheet or the script that is not in commonGlyphs.
func TestPages_GlyphsInCommonFonts(t *testing.T) {
	err := fs.WalkDir(uiFS, "ui", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(uiFS, path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, r := range line {
				if r >= utf8.RuneSelf && !strings.ContainsRune(commonGlyphs, r) {
					t.Errorf("%s:%d: %q (U+%04X) is not among the glyphs every common font has; draw it as SVG", path, i+1, r, r)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCommonGlyphs_InDejaVuSans asks fontconfig, where the machine has it
// and DejaVu Sans, whether that font has each of commonGlyphs.
func TestCommonGlyphs_InDejaVuSans(t *testing.T) {
	if _, err := exec.LookPath("fc-list"); err != nil {
		t.Skip("fc-list (fontconfig) is not installed")
	}
	if out, _ := exec.Command("fc-list", ":family=DejaVu Sans", "family").Output(); len(out) == 0 {
		t.Skip("DejaVu Sans is not installed")
	}
	for _, r := range commonGlyphs {
		out, err := exec.Command("fc-list", fmt.Sprintf(":family=DejaVu Sans:charset=%x", r), "family").Output()
		if err != nil {
			t.Fatal(err)
		}
		if len(strings.TrimSpace(string(out))) == 0 {
			t.Errorf("%q (U+%04X) is not in DejaVu Sans", r, r)
		}
	}
}
