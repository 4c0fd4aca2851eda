// The portal's Mantine theme, with colours that meet WCAG AA contrast (4.5:1 for text). Mantine's
// default palette puts white text on mid shades (green-8: 3.4:1) and light badges' text on tinted
// backgrounds at 2.7–3.8:1; here every colour's text and fill shades are darkened, from the same
// palette, just until they reach the ratio. "dimmed" text is gray-7 (8:1 on white).
import { createTheme, darken, DEFAULT_THEME, luminance, type CSSVariablesResolver } from "@mantine/core";

export const MIN_CONTRAST = 4.6; // AA is 4.5; a little margin for anti-aliasing and rounding

export function contrast(a: string, b: string): number {
  const [la, lb] = [luminance(a), luminance(b)];
  return (Math.max(la, lb) + 0.05) / (Math.min(la, lb) + 0.05);
}

/** The colour, darkened in small steps until it reaches MIN_CONTRAST against the background. */
export function readableOn(color: string, background: string): string {
  let c = color;
  for (let i = 1; contrast(c, background) < MIN_CONTRAST && i <= 20; i++) c = darken(color, i * 0.05);
  return c;
}

export const theme = createTheme({
  primaryShade: { light: 8, dark: 8 },
  components: {
    // A table wider than a phone scrolls inside itself; keyboard users must be able to focus the
    // scrolling box to scroll it (WCAG 2.1.1), so it scrolls natively and takes focus.
    TableScrollContainer: { defaultProps: { type: "native", tabIndex: 0 } },
    // A badge keeps its whole word ("DEGRADED", "p99 delay"): its label may not shrink below its
    // text (Mantine's ellipsis cut state badges to "DEGR…" in narrow table cells).
    Badge: { styles: { label: { overflow: "visible" } } },
  },
});

const WHITE = "#ffffff";

export const cssVariablesResolver: CSSVariablesResolver = () => {
  const light: Record<string, string> = { "--mantine-color-dimmed": "var(--mantine-color-gray-7)" };
  for (const [name, shades] of Object.entries(DEFAULT_THEME.colors)) {
    if (name === "dark") continue;
    const tint = shades[0];
    const fill = readableOn(shades[8], WHITE);
    light[`--mantine-color-${name}-filled`] = fill;
    light[`--mantine-color-${name}-filled-hover`] = darken(fill, 0.1);
    light[`--mantine-color-${name}-light`] = tint;
    light[`--mantine-color-${name}-light-hover`] = shades[1];
    light[`--mantine-color-${name}-light-color`] = readableOn(shades[9], shades[1]); // readable on hover too
    light[`--mantine-color-${name}-outline`] = fill;
    light[`--mantine-color-${name}-text`] = fill;
  }
  light["--mantine-color-error"] = light["--mantine-color-red-text"] ?? "#c92a2a";
  return { variables: {}, light, dark: {} };
};
