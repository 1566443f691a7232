package cairn

// What the external tests of this package reach inside for.
var DecodeSnapshot = decodeSnapshot
