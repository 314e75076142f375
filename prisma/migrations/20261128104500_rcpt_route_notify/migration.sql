-- RCPT routes cached in smtp-ingest are dropped when what decides them changes: every change to a
-- domain's name, status, catch-all or account, to an address, or to an account's plan notifies
-- channel `mailroom_routes` (delivered at commit; identical payloads of one transaction are sent once).
-- Payloads: `n:<domain name>` (a domain by name: a name not cached as known is cached as unknown),
-- `d:<domain id>` (an address of that domain), `a:<account id>` (the account's plan, or the account gone).
-- The domain verifier's frequent bookkeeping updates (lastCheckedAt, nextCheckAt, …) notify nothing.

CREATE FUNCTION mailroom_routes_domain() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') THEN PERFORM pg_notify('mailroom_routes', 'n:' || OLD.domain); END IF;
  IF TG_OP IN ('UPDATE', 'INSERT') THEN PERFORM pg_notify('mailroom_routes', 'n:' || NEW.domain); END IF;
  RETURN NULL;
END $$;

CREATE FUNCTION mailroom_routes_address() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') THEN PERFORM pg_notify('mailroom_routes', 'd:' || OLD."domainId"); END IF;
  IF TG_OP IN ('UPDATE', 'INSERT') THEN PERFORM pg_notify('mailroom_routes', 'd:' || NEW."domainId"); END IF;
  RETURN NULL;
END $$;

CREATE FUNCTION mailroom_routes_account() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('mailroom_routes', 'a:' || OLD.id);
  RETURN NULL;
END $$;

CREATE TRIGGER domains_routes_insert_delete AFTER INSERT OR DELETE ON "domains"
  FOR EACH ROW EXECUTE FUNCTION mailroom_routes_domain();
CREATE TRIGGER domains_routes_update AFTER UPDATE OF domain, status, "catchAllEnabled", "accountId" ON "domains"
  FOR EACH ROW
  WHEN (OLD.domain IS DISTINCT FROM NEW.domain OR OLD.status IS DISTINCT FROM NEW.status
        OR OLD."catchAllEnabled" IS DISTINCT FROM NEW."catchAllEnabled" OR OLD."accountId" IS DISTINCT FROM NEW."accountId")
  EXECUTE FUNCTION mailroom_routes_domain();

CREATE TRIGGER addresses_routes_insert_delete AFTER INSERT OR DELETE ON "addresses"
  FOR EACH ROW EXECUTE FUNCTION mailroom_routes_address();
CREATE TRIGGER addresses_routes_update AFTER UPDATE OF "localPart", active, "domainId" ON "addresses"
  FOR EACH ROW
  WHEN (OLD."localPart" IS DISTINCT FROM NEW."localPart" OR OLD.active IS DISTINCT FROM NEW.active
        OR OLD."domainId" IS DISTINCT FROM NEW."domainId")
  EXECUTE FUNCTION mailroom_routes_address();

CREATE TRIGGER accounts_routes_update AFTER UPDATE OF plan OR DELETE ON "accounts"
  FOR EACH ROW EXECUTE FUNCTION mailroom_routes_account();
