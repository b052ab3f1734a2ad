-- The people who may command the mesh, each known by the public key their commands are signed with.
CREATE TABLE operators (
  name        text    PRIMARY KEY,
  public_key  text    NOT NULL,
  revoked     boolean NOT NULL,
  changed_seq bigint  NOT NULL
);
