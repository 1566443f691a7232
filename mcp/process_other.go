//go:build !unix

package mcp

import "os/exec"

// prepare leaves cmd as it is: these systems have neither process groups
// nor a parent-death signal here, so a command ends alone, and outlives a
// cairn that is killed.
func prepare(*exec.Cmd) error { return nil }

func start(cmd *exec.Cmd) error { return cmd.Start() }

func exitedUnreaped(int) bool { return false }

// signalGroup kills the process: it has no group, and no gentler signal.
func signalGroup(cmd *exec.Cmd, _ bool) { cmd.Process.Kill() }
