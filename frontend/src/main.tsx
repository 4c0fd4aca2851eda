import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { MantineProvider } from "@mantine/core";
import { QueryClientProvider } from "@tanstack/react-query";
import { BrowserRouter } from "react-router";
import "@mantine/core/styles.css";
import "uplot/dist/uPlot.min.css";
import "./components/Kpis/legend.css";
import { App } from "./App";
import { SessionProvider } from "./auth/session";
import { ErrorBoundary } from "./components/common/ErrorBoundary";
import { OfflineBanner } from "./components/common/OfflineBanner";
import { queryClient } from "./components/common/queryClient";
import { Notes } from "./components/common/Notes";
import { cssVariablesResolver, theme } from "./components/common/theme";

const root = document.getElementById("root");
if (!root) throw new Error("#root missing from index.html");

createRoot(root).render(
  <StrictMode>
    <MantineProvider theme={theme} cssVariablesResolver={cssVariablesResolver}>
      <ErrorBoundary>
        <QueryClientProvider client={queryClient}>
          <BrowserRouter>
            <OfflineBanner />
            <SessionProvider>
              <App />
              <Notes />
            </SessionProvider>
          </BrowserRouter>
        </QueryClientProvider>
      </ErrorBoundary>
    </MantineProvider>
  </StrictMode>,
);
