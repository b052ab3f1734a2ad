-- When a stalled build tries its commit again: it retries for as long as it is stalled, on a
-- capped backoff, and says when the next attempt is due (shown by `mesh projections status`).
ALTER TABLE builds ADD COLUMN IF NOT EXISTS stall_next_at timestamptz;
