package main

import (
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn/internal/cli"
)

// Version and Commit are set at build time with
// -ldflags "-X main.Version=v1.2.3 -X main.Commit=abc123"; otherwise they
// come from the build information (the module's version when installed
// with go install module@version; the commit when built in a git checkout
// with VCS stamping on).
var (
	Version = ""
	Commit  = ""
)

// buildInfo is what `cairn version` prints.
type buildInfo struct {
	Version  string `json:"version"`
	Commit   string `json:"commit,omitempty"`
	Modified bool   `json:"modified,omitempty"` // built from a checkout with changes not committed
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

func readBuildInfo() buildInfo {
	b := buildInfo{Version: Version, Commit: Commit, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if b.Version == "" && bi.Main.Version != "" {
			b.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && b.Commit == "":
				b.Commit = s.Value
			case s.Key == "vcs.modified" && Commit == "":
				b.Modified = s.Value == "true"
			}
		}
	}
	if b.Version == "" {
		b.Version = "(devel)"
	}
	return b
}

func version() string {
	b := readBuildInfo()
	v := b.Version
	if b.Commit != "" {
		v += " (commit " + short(b.Commit) + ")"
	}
	return v
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

func newVersionCmd(app *cli.App) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version and commit cairn was built from",
		Long: `Print the module version and the commit cairn was built from, the Go
version and the platform. A build from a checkout without VCS stamping
(-buildvcs=false) knows no commit: it says so.`,
		Args: args(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			b := readBuildInfo()
			if app.Flags.JSON {
				return cli.WriteJSON(app.Stdout, b)
			}
			commit := b.Commit
			switch {
			case commit == "":
				commit = "unknown (built without VCS stamping)"
			case b.Modified:
				commit += " (with changes not committed)"
			}
			app.Printf("cairn %s\ncommit   %s\ngo       %s %s\n", b.Version, commit, b.Go, b.Platform)
			return nil
		},
	}
}
