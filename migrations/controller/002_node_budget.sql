-- A node that said more than its budget (src/controller/fact-budget.ts): what it said beyond it,
-- since when, the last time, and until when it is named. Kept here, not in the log, so naming a
-- node that floods costs no commit.
ALTER TABLE node_status ADD COLUMN IF NOT EXISTS over_budget text;
ALTER TABLE node_status ADD COLUMN IF NOT EXISTS over_budget_since timestamptz;
ALTER TABLE node_status ADD COLUMN IF NOT EXISTS over_budget_at timestamptz;
ALTER TABLE node_status ADD COLUMN IF NOT EXISTS over_budget_until timestamptz;
