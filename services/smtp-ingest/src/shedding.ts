/** What the shedding choice needs to know about one open session. */
export type SheddingCandidate<K> = {
  key: K;
  /** No MAIL FROM accepted yet on this connection: it has not shown it is a sender. */
  preMail: boolean;
  /** Since its last completed command (or its greeting): trickled bytes are not progress. */
  idleMs: number;
};

/**
 * Which session to close (421) so that a newcomer can be served when the server is full. Only
 * sessions that owe us a command are candidates (the caller leaves out those in DATA and those
 * waiting for our own answer). Pre-MAIL sessions go first, and among them the one that has gone
 * longest without finishing a command, the way postscreen/anvil and Haraka treat slow clients:
 * a slowloris connection that trickles bytes never completes commands, while a real sender
 * completes one every round trip, so it is always "younger" than a stalled one.
 */
export function chooseVictim<K>(candidates: Iterable<SheddingCandidate<K>>): K | undefined {
  let best: SheddingCandidate<K> | undefined;
  for (const c of candidates) {
    if (!best || (c.preMail && !best.preMail) || (c.preMail === best.preMail && c.idleMs > best.idleMs)) {
      best = c;
    }
  }
  return best?.key;
}
