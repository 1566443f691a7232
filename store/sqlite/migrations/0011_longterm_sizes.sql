-- The size of each item's entry in the text index (its tokens, every
-- column's, as longterm_text_docsize holds them), two bytes an item, the
-- sizes of 1,000 items by rowid in a row, two rows to a page: a search
-- that ranks many matches reads a page for 2,000 items rather than one
-- of FTS5's size rows for each match (longterm_sizes.go). A size of 0 is
-- one not held here, which the search reads from longterm_text_docsize.
-- Filled from longterm_text_docsize by this migration, kept by every Put,
-- and set to 0 when an item is erased.
CREATE TABLE longterm_sizes (
	chunk INTEGER PRIMARY KEY,
	sizes BLOB NOT NULL
);

-- Every instance of every token of the text index: the search reads a
-- word's matches and how often each holds it here.
CREATE VIRTUAL TABLE longterm_vocab USING fts5vocab(longterm_text, 'instance');
