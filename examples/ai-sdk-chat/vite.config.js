import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

// The page calls the API on its own origin; the dev server passes /api to
// the agentloop server (AGENTLOOP_URL, http://127.0.0.1:8080 by default),
// streams included.
export default defineConfig({
  plugins: [react()],
  server: {
    proxy: {
      "/api": process.env.AGENTLOOP_URL ?? "http://127.0.0.1:8080",
    },
  },
});
