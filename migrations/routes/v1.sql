-- The names the mesh serves and what providers told their consumers (ADR 0007, 0108; issue 124).
-- A node's public domain: its routes' public names are <name>.<domain>.
CREATE TABLE public_domains (
  node        text   PRIMARY KEY,
  domain      text   NOT NULL,
  changed_seq bigint NOT NULL
);

-- Each public name handed back by the holder of mesh-proxy, one holder each; gone with its assignment.
CREATE TABLE public_names (
  public_name  text   PRIMARY KEY,
  node         text   NOT NULL,
  module       text   NOT NULL,
  route        text   NOT NULL,
  name         text   NOT NULL,
  proxy_node   text   NOT NULL,
  proxy_module text   NOT NULL,
  granted_seq  bigint NOT NULL
);
CREATE INDEX public_names_assignment ON public_names (node, module);

-- The newest answer a provider gave one consumer's requirement; gone with the consumer's assignment.
CREATE TABLE consumer_answers (
  node            text   NOT NULL,
  module          text   NOT NULL,
  requirement     text   NOT NULL,
  provider_node   text   NOT NULL,
  provider_module text   NOT NULL,
  answer          jsonb  NOT NULL,
  answered_seq    bigint NOT NULL,
  PRIMARY KEY (node, module, requirement)
);
