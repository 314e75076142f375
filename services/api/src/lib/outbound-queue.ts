import { enqueue, type TypedQueue } from "@mailroom/queues";

/** `enqueueOutbound` for the ops context: the first relay attempt of a stored outbound email. */
export const outboundEnqueuer =
  (queue: TypedQueue<"outbound">) =>
  async (emailId: string): Promise<void> => {
    await enqueue(queue, "outbound", { emailId }, { jobId: `${emailId}.1` });
  };
