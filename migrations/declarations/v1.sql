-- The last refusal stated for each node's declaration: the overview's verdict on whether a node's
-- declaration could be composed. One row per node ever refused; whether the refusal is overcome is
-- judged against what NODES holds (a declaration derived later than the refused attempt).
CREATE TABLE declaration_refusals (
  node              text        PRIMARY KEY,
  -- where the refusal was stated in the log, and when
  seq               bigint      NOT NULL,
  time              timestamptz NOT NULL,
  -- the log sequence the refused composition was derived at
  derived_from_seq  bigint      NOT NULL,
  reason            text        NOT NULL,
  unresolved        jsonb       NOT NULL
);
