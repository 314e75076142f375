import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

// The console bundle: served by the API at /console (services/api/src/console/static.ts). No
// plugin is needed: Vite 8 compiles TSX with Oxc (automatic JSX runtime). Everything is bundled
// and served from this origin, so the page makes no third-party request.
export default defineConfig({
  root: fileURLToPath(new URL(".", import.meta.url)),
  base: "/console/",
  oxc: { jsx: { runtime: "automatic", importSource: "react" } },
  build: { outDir: "dist", emptyOutDir: true, assetsInlineLimit: 0, sourcemap: false },
  logLevel: "warn",
});
