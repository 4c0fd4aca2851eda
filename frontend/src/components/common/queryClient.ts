// One QueryClient; 401 / 403 and an unreachable API are handled here once rather than in every page.
import { MutationCache, QueryCache, QueryClient } from "@tanstack/react-query";
import { ApiProblem, setTokens } from "../../api/client";
import { onReconnect, reportFailure } from "./connectivity";
import { notify } from "./notify";

function handle(error: unknown): void {
  reportFailure(error); // the offline banner decides whether the API is down
  if (!(error instanceof ApiProblem)) return;
  if (error.status === 401) {
    setTokens(null); // the router guard sends the user to /login
  } else if (error.status === 403) {
    notify("Not allowed", "Your role cannot see or change this.", "red");
  }
}

export const queryClient = new QueryClient({
  queryCache: new QueryCache({ onError: handle }),
  mutationCache: new MutationCache({ onError: handle }),
  defaultOptions: {
    queries: {
      // 4xx answers do not get better by asking again.
      retry: (count, error) => !(error instanceof ApiProblem && error.status < 500) && count < 2,
      refetchOnWindowFocus: false,
    },
  },
});

// Back online: everything on screen may be stale, and failed queries should try again.
onReconnect(() => void queryClient.invalidateQueries());
