-- Long-term memory search reads the text index alone: without a pending
-- list. A GIN index with fastupdate (the default) queues new entries in an
-- unsorted list that every search scans whole until a vacuum, or the list's
-- 4 MB limit, merges it; with autovacuum's defaults a store of 100,000
-- items merges it after 21,000 puts, and a search then pays for each of
-- them. Off, a put writes its words into the index at once (about a tenth
-- of a millisecond more) and a search's cost follows its matches.

ALTER INDEX longterm_items_tsv SET (fastupdate = off);
