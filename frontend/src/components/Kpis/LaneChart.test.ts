import { describe, expect, it } from "vitest";
import { GUARANTEE_TEAL, LANE_COLORS, SLA_RED } from "./LaneChart";

// Hue (degrees) and saturation (0-1) of a #rrggbb colour.
function hueSat(hex: string): [number, number] {
  const channel = (i: number) => parseInt(hex.slice(i, i + 2), 16) / 255;
  const r = channel(1),
    g = channel(3),
    b = channel(5);
  const max = Math.max(r, g, b),
    min = Math.min(r, g, b),
    d = max - min;
  if (d === 0) return [0, 0];
  const l = (max + min) / 2;
  const s = d / (1 - Math.abs(2 * l - 1));
  const h = max === r ? ((g - b) / d) % 6 : max === g ? (b - r) / d + 2 : (r - g) / d + 4;
  return [(h * 60 + 360) % 360, s];
}

// Red, orange and pink (hue within 45° of red) read as "violation": no lane may use them.
const alarming = (hex: string) => {
  const [h, s] = hueSat(hex);
  return s > 0.25 && (h < 45 || h > 315);
};

describe("lane colours", () => {
  it("are eight distinct colours, none of them the red family of a violation", () => {
    expect(new Set(LANE_COLORS).size).toBe(8);
    for (const c of LANE_COLORS) expect(alarming(c), c).toBe(false);
    expect(LANE_COLORS).not.toContain(GUARANTEE_TEAL);
  });
  it("keep red for the SLA limit", () => {
    expect(alarming(SLA_RED)).toBe(true);
  });
});
