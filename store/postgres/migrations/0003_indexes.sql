-- List by status: one range of this index per status, already in List
-- order, so a status with few or no sessions costs what its sessions cost.
CREATE INDEX sessions_status_idx ON sessions (status, updated_at DESC, id DESC);

-- List by labels: containment (labels @> '{"k":"v"}') through a GIN index.
-- jsonb_path_ops indexes exactly the key-value paths that @> looks up.
CREATE INDEX sessions_labels_idx ON sessions USING gin (labels jsonb_path_ops);
