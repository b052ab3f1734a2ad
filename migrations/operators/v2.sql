-- The people who may command the mesh, each known by the public key their commands are signed with,
-- and the settings they make for the mesh.
CREATE TABLE operators (
  name        text    PRIMARY KEY,
  public_key  text    NOT NULL,
  revoked     boolean NOT NULL,
  changed_seq bigint  NOT NULL
);

-- v2: the mesh's settings operators make (operators.command-window-set), one row per setting: how
-- long a signed command stays good is `command-window`, in seconds.
CREATE TABLE operator_settings (
  name        text   PRIMARY KEY,
  value       text   NOT NULL,
  changed_seq bigint NOT NULL
);
