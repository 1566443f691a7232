-- How many items hold each token in each column of the text index: a
-- search that ranks a few matches itself (longterm_rank.go) reads the
-- items that hold each of its words here, in one row, rather than count
-- them through a MATCH that steps through every one.
CREATE VIRTUAL TABLE longterm_vocab_col USING fts5vocab(longterm_text, 'col');
