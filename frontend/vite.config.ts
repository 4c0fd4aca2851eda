// Vite build for the portal; `npm run dev` proxies the API to a backend started with `make run`.
import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

export default defineConfig({
  plugins: [react()],
  server: { proxy: { "/api": process.env.SLICEPORTAL_API ?? "http://127.0.0.1:8000" } },
  build: {
    outDir: "dist",
    chunkSizeWarningLimit: 1500,
  },
});
