-- Lease takeovers: how many leases of the session were granted while an
-- earlier holder had not released it (its lease had expired, or was taken
-- by Takeover). The statement that grants a lease adds one when the old
-- lease_holder is not empty. A session created again starts at 0. A
-- constant default: adding the column rewrites no row.

ALTER TABLE sessions ADD COLUMN lease_takeovers bigint NOT NULL DEFAULT 0;
