import { Worker } from "node:worker_threads";
import type { ParseLimits, WorkerAttachment, WorkerEmail, WorkerRequest, WorkerResponse } from "./parse-worker.ts";

export type { ParseLimits };

export type ParsedAttachment = WorkerAttachment;

export type ParsedEmail = Omit<WorkerEmail, "messageId" | "warnings"> & {
  messageId: string;
  /** False when the message id was generated here because the message had none. */
  messageIdPresent: boolean;
};

export type ParseResult = { ok: true; email: ParsedEmail } | { ok: false; reason: string };

/** Haraka's and Postfix's shipped defaults (see ParseLimits). */
export const DEFAULT_PARSE_LIMITS: ParseLimits = {
  maxParts: 1_000,
  maxDepth: 100,
  maxHeaderBytes: 102_400,
  maxHtmlToTextBytes: 1_048_576,
};

export type ParserOptions = {
  /** Worker threads, i.e. messages parsed at once. */
  threads?: number;
  /**
   * A parse still running after this long is abandoned (its thread is terminated). Counted from the
   * moment the message reaches a started thread: starting one (loading mailparser) is not parsing,
   * and takes seconds on a busy machine.
   */
  timeoutMs?: number;
  /** A thread that parsed a message at least this big is replaced by a fresh one (default 4 MiB). */
  recycleAfterBytes?: number;
  limits?: Partial<ParseLimits>;
};

export type Parser = {
  /** `fallbackMessageId`: the Message-ID a message without one gets (generatedMessageId). */
  parse(raw: Uint8Array, fallbackMessageId: string): Promise<ParseResult>;
  close(): Promise<void>;
};

/** `started`: resolves once the thread has loaded its modules (true), or failed to (false). */
type Slot = { worker: Worker | null; started: Promise<boolean> | null; busy: boolean };
type Settings = { timeoutMs: number; recycleAfterBytes: number; limits: ParseLimits };

// Beside this module: parse-worker.ts under tsx, parse-worker.js in the compiled build (dist/).
const WORKER_URL = new URL(`./parse-worker${import.meta.url.endsWith(".ts") ? ".ts" : ".js"}`, import.meta.url);

/**
 * Parses MIME off the event loop: a small pool of worker threads, each one message at a time, with a
 * deadline. A message that breaks a limit, makes mailparser throw or runs past the deadline comes
 * back as `{ ok: false }` (the caller stores it raw with PROCESSING_FAILED verdicts); the thread that
 * ran past the deadline is terminated and replaced, so one hostile message never stalls the others.
 */
export function createParser(opts: ParserOptions = {}): Parser {
  const settings: Settings = {
    timeoutMs: opts.timeoutMs ?? 30_000,
    recycleAfterBytes: opts.recycleAfterBytes ?? 4 * 1024 * 1024,
    limits: { ...DEFAULT_PARSE_LIMITS, ...opts.limits },
  };
  const pool = slotPool(Math.max(1, opts.threads ?? 2));
  let closed = false;
  return {
    async parse(raw, fallbackMessageId) {
      if (closed) throw new Error("parser closed");
      const slot = await pool.acquire();
      let res: WorkerResponse;
      try {
        res = await runOn(slot, raw, settings);
      } finally {
        pool.release(slot);
      }
      if (!res.ok) return { ok: false, reason: res.error };
      const { warnings: _warnings, messageId, ...rest } = res.email;
      return {
        ok: true,
        email: {
          ...rest,
          // A message without Message-ID still needs a stable one for threading and dedupe.
          messageId: messageId ?? fallbackMessageId,
          messageIdPresent: Boolean(messageId),
        },
      };
    },
    async close() {
      closed = true;
      await Promise.all(pool.slots.map((s) => s.worker?.terminate()));
      for (const s of pool.slots) s.worker = null;
    },
  };
}

/** `threads` slots, each one message at a time; parse calls beyond them wait their turn in order. */
function slotPool(threads: number) {
  const slots: Slot[] = Array.from({ length: threads }, () => ({ worker: null, started: null, busy: false }));
  const waiting: (() => void)[] = [];
  return {
    slots,
    async acquire(): Promise<Slot> {
      for (;;) {
        const free = slots.find((s) => !s.busy);
        if (free) {
          free.busy = true;
          return free;
        }
        await new Promise<void>((r) => waiting.push(r));
      }
    },
    release(slot: Slot): void {
      slot.busy = false;
      waiting.shift()?.();
    },
  };
}

let seq = 0;

/** A thread that has not said it is ready by then is taken for broken. */
const START_TIMEOUT_MS = 60_000;

/** Starts the slot's thread; `started` resolves when it posts `{ ready: true }` (parse-worker.ts). */
function startThread(slot: Slot): Worker {
  const worker = new Worker(WORKER_URL);
  worker.unref();
  slot.worker = worker;
  slot.started = new Promise<boolean>((resolve) => {
    const done = (ok: boolean) => {
      clearTimeout(timer);
      worker.off("message", onReady);
      worker.off("error", onFail);
      worker.off("exit", onFail);
      resolve(ok);
    };
    const onReady = (m: { ready?: boolean }) => m.ready === true && done(true);
    const onFail = () => done(false);
    // Does not hold the process open by itself: the thread is unref'd too.
    const timer = setTimeout(onFail, START_TIMEOUT_MS).unref();
    worker.on("message", onReady);
    worker.on("error", onFail);
    worker.on("exit", onFail);
  });
  return worker;
}

/** One message on the slot's thread (started if it has none), with the deadline. */
async function runOn(slot: Slot, raw: Uint8Array, settings: Settings): Promise<WorkerResponse> {
  const worker = slot.worker ?? startThread(slot);
  const id = ++seq;
  if (!(await slot.started)) {
    slot.worker = null;
    void worker.terminate();
    return { id, ok: false, error: "parser thread failed to start" };
  }
  return new Promise<WorkerResponse>((resolve) => {
    const cleanup = () => {
      clearTimeout(timer);
      worker.off("message", onMessage);
      worker.off("error", onError);
      worker.off("exit", onExit);
    };
    const onMessage = (res: WorkerResponse) => {
      if (res.id !== id) return;
      cleanup();
      // A thread that parsed a big message keeps the heap it grew for it (hundreds of MB for a
      // 25 MB body) until a GC it may not run for a long time; a fresh thread costs ~50 ms.
      if (raw.byteLength >= settings.recycleAfterBytes) {
        slot.worker = null;
        void worker.terminate();
      }
      resolve(res);
    };
    const abandon = (error: string) => {
      cleanup();
      slot.worker = null;
      void worker.terminate();
      resolve({ id, ok: false, error });
    };
    const onError = (err: Error) => abandon(`parser crashed: ${err.message}`);
    const onExit = () => abandon("parser thread exited");
    const timer = setTimeout(() => abandon(`parsing exceeded ${settings.timeoutMs} ms`), settings.timeoutMs);
    worker.on("message", onMessage);
    worker.on("error", onError);
    worker.on("exit", onExit);
    // The raw bytes are shared with the thread when they sit in a SharedArrayBuffer (the caller
    // still needs them); the attachments come back transferred, not copied.
    const req: WorkerRequest = { id, raw, limits: settings.limits };
    worker.postMessage(req);
  });
}

/**
 * The Message-ID of a message that has none, from the SHA-256 of the bytes the client sent
 * (spooled_messages.sha256, which our prepended Received header is not part of): the same message
 * sent again gets the same id, so the dedupe still recognises it.
 */
export function generatedMessageId(clientSha256: string, domain: string): string {
  return `<${clientSha256.slice(0, 32)}@${domain}>`;
}
