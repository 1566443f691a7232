// Package corehook hands package driver the parts of package cairn that
// stores need and users do not: the envelope codec, which shares its
// strict decoder with cairn's memory documents and so cannot leave the
// root package. Package cairn sets the variables in an init function;
// package driver, which imports cairn, reads them after it has run.
package corehook

// AppendEnvelope is cairn's func(dst []byte, e cairn.Event) ([]byte, error).
var AppendEnvelope any

// ParseEnvelope is cairn's func(line []byte) (cairn.Event, bool).
var ParseEnvelope any
