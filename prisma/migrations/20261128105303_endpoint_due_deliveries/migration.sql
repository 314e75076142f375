-- An endpoint's due deliveries, oldest first: the webhook dispatcher queues them again when the endpoint's
-- circuit closes or one of its slots frees, and its sweeper takes a few per endpoint.
-- CreateIndex
CREATE INDEX "deliveries_endpointId_status_nextAttemptAt_idx" ON "deliveries"("endpointId", "status", "nextAttemptAt");

