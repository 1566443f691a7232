package main

import "runtime/debug"

// Version is set at build time with -ldflags "-X main.Version=…"; otherwise
// it comes from the module's build information.
var Version = ""

func version() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
