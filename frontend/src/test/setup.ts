// jsdom lacks a few browser APIs Mantine uses; provide minimal, behaviour-free versions so
// components render exactly as they do in a browser that has them.
import "@testing-library/jest-dom/vitest";
import { cleanup } from "@testing-library/react";
import { afterEach } from "vitest";

afterEach(() => {
  cleanup();
  sessionStorage.clear();
});

if (!window.matchMedia) {
  window.matchMedia = (query: string) => ({
    matches: false,
    media: query,
    onchange: null,
    addListener: () => undefined,
    removeListener: () => undefined,
    addEventListener: () => undefined,
    removeEventListener: () => undefined,
    dispatchEvent: () => false,
  });
}

class NoopResizeObserver {
  observe(): void {}
  unobserve(): void {}
  disconnect(): void {}
}
window.ResizeObserver ??= NoopResizeObserver;
window.HTMLElement.prototype.scrollIntoView ??= () => undefined;

// Browsers resolve a relative Request URL against the page; Node's Request (which jsdom tests
// use) does not. The API client uses relative URLs, so resolve them the browser's way.
const NodeRequest = globalThis.Request;
class PageRequest extends NodeRequest {
  constructor(input: RequestInfo | URL, init?: RequestInit) {
    super(typeof input === "string" && input.startsWith("/") ? new URL(input, window.location.href) : input, init);
  }
}
globalThis.Request = PageRequest as typeof Request;
