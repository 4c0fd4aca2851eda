// Vitest: component and unit tests in jsdom (Testing Library). Kept apart from vite.config.ts,
// which only describes the production build and the dev proxy.
import { defineConfig } from "vitest/config";
import react from "@vitejs/plugin-react";

export default defineConfig({
  plugins: [react()],
  test: {
    environment: "jsdom",
    setupFiles: ["./src/test/setup.ts"],
    include: ["src/**/*.test.{ts,tsx}"],
    css: false,
    restoreMocks: true,
    // One jsdom per worker, not per file: building the environment and importing Mantine for
    // each of 35 files was 65 of the run's 85 s here. setup.ts resets what a file leaves behind
    // (DOM, session storage, mocks); the suite passes in shuffled order (--sequence.shuffle).
    isolate: false,
    // userEvent types key by key; on a loaded shared machine a form test can take seconds.
    testTimeout: 30_000,
  },
});
