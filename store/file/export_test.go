package file

// For the tests of package file_test.
var (
	JournalDir      = journalDir
	JournalsHolding = journalsHolding
)
