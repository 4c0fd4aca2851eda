import { describe, expect, it } from "vitest";
import { errorText, isNetworkError, UNREACHABLE } from "./errorText";

describe("errorText", () => {
  it("reads the browsers' network failures as a sentence", () => {
    for (const m of ["Failed to fetch", "NetworkError when attempting to fetch resource.", "Load failed"]) {
      expect(isNetworkError(new TypeError(m))).toBe(true);
      expect(errorText(new TypeError(m))).toEqual({ title: "No connection", message: UNREACHABLE });
    }
  });
  it("keeps another error's message without its class name", () => {
    expect(errorText(new TypeError("x is undefined")).message).toBe("x is undefined");
    expect(errorText(new Error("boom")).message).toBe("boom");
    expect(errorText("plain").message).toBe("plain");
    expect(errorText(new Error("")).message).toBe("The portal gave no reason.");
  });
});
