-- The mesh's trust root as the log says it is now: the newest root certificate an operator set
-- (public material; the machines of the private network are told to trust it).
CREATE TABLE trust_root (
  id          text    PRIMARY KEY CHECK (id = 'root'),
  certificate text    NOT NULL,
  fingerprint text    NOT NULL,
  subject     text    NOT NULL,
  valid_to    text    NOT NULL,
  set_seq     bigint  NOT NULL
);
