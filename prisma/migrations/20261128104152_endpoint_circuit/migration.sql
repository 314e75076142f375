-- Each endpoint's circuit (webhook dispatcher): failed attempts in a row, when the run started, since when
-- the endpoint counts as failing (null: healthy) and the next probe time while it does. Expand-only.
-- AlterTable
ALTER TABLE "endpoints" ADD COLUMN     "consecutiveFailures" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "failingSince" TIMESTAMPTZ(3),
ADD COLUMN     "failureRunStartedAt" TIMESTAMPTZ(3),
ADD COLUMN     "probeAt" TIMESTAMPTZ(3);

