import { execFile } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { sparePort } from "@mailroom/testing";

const run = promisify(execFile);

export const POSTFIX = "/usr/sbin/postfix";
export const havePostfix = () => existsSync(POSTFIX);

export type PostfixRelay = {
  /** Port of this instance's smtpd on 127.0.0.1 (where test mail is submitted). */
  port: number;
  dir: string;
  /** The instance's own log (maillog_file). */
  log(): string;
  stop(): Promise<void>;
};

/**
 * A private Postfix instance (Debian's package, `postfix -c <dir>`): its own config directory, queue,
 * log and smtpd port on loopback, so the machine's mail setup is untouched. It relays the given
 * domains to our ingest port — as a sending MTA would reach our MX — and relays nothing else.
 */
export async function startPostfixRelay(opts: {
  domains: string[];
  ingestPort: number;
  /** Lines appended to main.cf (a later setting overrides an earlier one), e.g. the accept bench's. */
  extraMainCf?: string;
}): Promise<PostfixRelay> {
  const port = await sparePort();
  const dir = mkdtempSync(join(tmpdir(), "mailroom-postfix-"));
  // Postfix's daemons run as the postfix user: they must reach the queue, and own data_directory.
  chmodSync(dir, 0o755);
  mkdirSync(join(dir, "queue"), { mode: 0o755 });
  mkdirSync(join(dir, "data"), { mode: 0o700 });
  await run("chown", ["postfix:postfix", join(dir, "data")]);
  const transport = opts.domains.map((d) => `{${d} = smtp:[127.0.0.1]:${opts.ingestPort}}`).join(", ");
  writeFileSync(
    join(dir, "main.cf"),
    `compatibility_level = 3.7
queue_directory = ${dir}/queue
data_directory = ${dir}/data
meta_directory = /etc/postfix
mail_owner = postfix
setgid_group = postdrop
myhostname = relay.mailroom.test
mydomain = mailroom.test
myorigin = $myhostname
mydestination =
local_recipient_maps =
alias_maps =
alias_database =
inet_interfaces = 127.0.0.1
inet_protocols = ipv4
mynetworks = 127.0.0.0/8
relay_domains = ${opts.domains.join(", ")}
transport_maps = inline:{ ${transport} }
default_transport = error:this test relay delivers nowhere else
smtpd_relay_restrictions = permit_mynetworks, reject_unauth_destination
smtp_dns_support_level = disabled
smtp_tls_security_level = none
smtpd_tls_security_level = none
smtp_connect_timeout = 5s
queue_run_delay = 1s
minimal_backoff_time = 1s
maximal_backoff_time = 2s
delay_warning_time = 0
biff = no
maillog_file_prefixes = ${dir}
maillog_file = ${dir}/maillog
${opts.extraMainCf ?? ""}
`,
  );
  // No chroot (the default Debian master.cf chroots into the system queue).
  writeFileSync(
    join(dir, "master.cf"),
    `127.0.0.1:${port} inet n - n - - smtpd
pickup    unix  n - n 60 1 pickup
cleanup   unix  n - n - 0 cleanup
qmgr      unix  n - n 300 1 qmgr
rewrite   unix  - - n - - trivial-rewrite
bounce    unix  - - n - 0 bounce
defer     unix  - - n - 0 bounce
trace     unix  - - n - 0 bounce
verify    unix  - - n - 1 verify
flush     unix  n - n 1000? 0 flush
proxymap  unix  - - n - - proxymap
smtp      unix  - - n - - smtp
relay     unix  - - n - - smtp
showq     unix  n - n - - showq
error     unix  - - n - - error
retry     unix  - - n - - error
discard   unix  - - n - - discard
anvil     unix  - - n - 1 anvil
scache    unix  - - n - 1 scache
postlog   unix-dgram n - n - 1 postlogd
`,
  );
  await run(POSTFIX, ["-c", dir, "start"], { timeout: 60_000 });
  return {
    port,
    dir,
    log: () => (existsSync(join(dir, "maillog")) ? readFileSync(join(dir, "maillog"), "utf8") : ""),
    async stop() {
      await run(POSTFIX, ["-c", dir, "abort"], { timeout: 30_000 }).catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
