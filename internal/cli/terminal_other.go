//go:build !linux && !darwin && !windows

package cli

// IsTerminal reports false: on these systems cairn does not tell a
// terminal, and writes for a program (no colour, no progress).
func IsTerminal(any) bool { return false }
