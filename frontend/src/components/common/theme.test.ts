import { describe, expect, it } from "vitest";
import { DEFAULT_THEME } from "@mantine/core";
import { contrast, cssVariablesResolver, MIN_CONTRAST, readableOn, theme } from "./theme";

describe("theme colours meet WCAG AA", () => {
  const vars = cssVariablesResolver({ ...DEFAULT_THEME, ...theme } as never).light;
  const colors = Object.keys(DEFAULT_THEME.colors).filter((c) => c !== "dark");

  it.each(colors)("%s: white on its fill, its light text on its tint, its text on white", (c) => {
    expect(contrast("#ffffff", vars[`--mantine-color-${c}-filled`] ?? "")).toBeGreaterThanOrEqual(MIN_CONTRAST);
    expect(
      contrast(vars[`--mantine-color-${c}-light-color`] ?? "", vars[`--mantine-color-${c}-light`] ?? ""),
    ).toBeGreaterThanOrEqual(MIN_CONTRAST);
    expect(contrast(vars[`--mantine-color-${c}-text`] ?? "", "#ffffff")).toBeGreaterThanOrEqual(MIN_CONTRAST);
  });

  it("field errors are readable", () => {
    expect(contrast(vars["--mantine-color-error"] ?? "", "#ffffff")).toBeGreaterThanOrEqual(MIN_CONTRAST);
  });

  it("darkens only as far as needed", () => {
    expect(readableOn("#000000", "#ffffff")).toBe("#000000");
    expect(contrast(readableOn("#fab005", "#ffffff"), "#ffffff")).toBeGreaterThanOrEqual(MIN_CONTRAST);
  });
});
