import type { Config } from "jest";

// One jest run over every workspace. TypeScript is compiled by SWC (no type checking here:
// `npm run typecheck` does that); the code is ESM, hence --experimental-vm-modules in `npm test`.
const config: Config = {
  testEnvironment: "node",
  roots: ["<rootDir>/packages", "<rootDir>/services", "<rootDir>/tools", "<rootDir>/scripts", "<rootDir>/e2e"],
  testMatch: ["**/*.test.ts"],
  testPathIgnorePatterns: ["/node_modules/"],
  extensionsToTreatAsEsm: [".ts"],
  transform: {
    "^.+\\.ts$": [
      "@swc/jest",
      {
        jsc: { parser: { syntax: "typescript" }, target: "es2023" },
        module: { type: "es6" },
      },
    ],
  },
  globalSetup: "<rootDir>/packages/testing/src/global-setup.ts",
  globalTeardown: "<rootDir>/packages/testing/src/global-teardown.ts",
  testTimeout: 60_000,
  reporters: ["default", "<rootDir>/scripts/jest-summary-reporter.cjs"],
  maxWorkers: 2,
};

export default config;
