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
    // userEvent types key by key; on a loaded shared machine a form test can take seconds.
    testTimeout: 30_000,
  },
});
