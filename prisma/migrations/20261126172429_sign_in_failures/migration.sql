-- Console sign-in failures per typed email and client address (issue 23): hashes only, for members
-- and unknown emails alike. members.failedSignIns/lockedUntil are no longer used (dropped later).
-- CreateTable
CREATE TABLE "sign_in_failures" (
    "key" TEXT NOT NULL,
    "emailHash" TEXT NOT NULL,
    "failures" INTEGER NOT NULL,
    "lockedUntil" TIMESTAMPTZ(3),
    "lastFailureAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "sign_in_failures_pkey" PRIMARY KEY ("key")
);

-- CreateIndex
CREATE INDEX "sign_in_failures_emailHash_idx" ON "sign_in_failures"("emailHash");

-- CreateIndex
CREATE INDEX "sign_in_failures_lastFailureAt_idx" ON "sign_in_failures"("lastFailureAt");

