package postgres

// Translate is translate, for the tests of its error codes.
var Translate = translate
